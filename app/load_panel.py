"""Load from Hub or files: the panel's components, and the one-line status the header shows for
every load (a preset, a Hub repo, files, a share link). A files or Hub load starts a workspace of
that model (`engine.model_workspace`); the workspace it replaced is kept for "Undo", and the
editors are saved into the session before anything is read, so a load that fails loses nothing.

The status stays one line in the header (it used to wrap and push the toolbar down): what happened,
an Undo button when there is something to undo, the notes in a panel that opens over the page, and
a button that hides it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gradio as gr

from engine.diagnostics import Diagnostic
from engine.public import policy
from engine.text import shorten

from .highlight import diagnostics_html, esc

# The hidden button the status line's Undo presses (page.js: `data-press`).
UNDO_BUTTON = "load-undo-button"


def build_load_panel() -> dict[str, Any]:
    """The panel inside "Load from Hub or files", by name."""
    with gr.Row():
        label = "Repo id or local folder" if policy().allow_paths else "Repo id"
        repo = gr.Textbox(label=label, placeholder="HuggingFaceTB/SmolLM3-3B", scale=3, elem_id="hub-repo")
        revision = gr.Textbox(label="Revision", placeholder="main", scale=1, elem_id="hub-revision")
        hub_button = gr.Button("Load from Hub", scale=1, elem_id="hub-load")
    files = gr.File(label="Load files: chat_template.jinja, tokenizer_config.json, response_template.json",
                    file_count="multiple", file_types=[".jinja", ".json"], elem_id="file-upload")  # fmt: skip
    gr.HTML('<div class="help-line">Loading starts a workspace of that model: neutral cases fitted to its chat '
            "template replace the preset's cases and recordings, and the preset's response template goes. Cases and "
            "a response template you wrote stay; “Undo” in the status line brings back the workspace as it was.</div>")
    with gr.Row(elem_id="load-keep"):
        keep_cases = gr.Checkbox(False, label="Keep the current cases (and their recordings)", elem_id="keep-cases")
        keep_response = gr.Checkbox(False, label="Keep the current response template (when the files have none)",
                                    elem_id="keep-response")
    return dict(hub_repo=repo, hub_revision=revision, hub_load=hub_button, files=files, keep_cases=keep_cases,
                keep_response=keep_response)


def status_html(diagnostics: Sequence[Diagnostic], note: str = "", undo: bool = False, detail: str = "") -> str:
    """The header's status, one line: `note` (HTML; else the first problem's message), Undo, the
    notes in a panel that opens over the page (`detail` first: what a load did, in full), and a
    button that hides the line."""
    if not note and not diagnostics and not undo:
        return ""
    errors = [d for d in diagnostics if d.severity == "error"]
    line = note or (f"⚠ {esc(shorten(errors[0].message, 140))}" if errors else esc(shorten(diagnostics[0].message, 140)) if diagnostics else "")
    title = f' title="{esc(detail)}"' if detail else ""
    parts = [f'<span class="status-note"{title}>{line}</span>']
    if undo:
        parts.append(f'<button class="status-undo" data-press="{UNDO_BUTTON}" title="Bring back the workspace as it was '
                     'before this load">↶ Undo</button>')
    if diagnostics or detail:
        count = len(diagnostics) + bool(detail)
        label = "details" if not diagnostics else f"{count} {'problem' if errors else 'note'}{'s' if count > 1 else ''}"
        said = f'<div class="status-detail">{esc(detail)}</div>' if detail else ""
        parts.append(f'<details class="status-more"><summary>{label}</summary><div class="status-pop">{said}'
                     f"{diagnostics_html(diagnostics) if diagnostics else ''}</div></details>")
    parts.append('<button class="status-close" title="Hide this message" aria-label="Hide this message">×</button>')
    return f'<div class="status-line" role="status">{"".join(parts)}</div>'
