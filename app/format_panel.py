""""Start from a format", by the response template editor: the library's tool-call formats
(`engine.formats`), found by a search over names, models, descriptions and delimiters. Picking one
shows it as a diff against the response template being edited, with what the format is, the models
that write it and what the spec cannot express there. Apply and Undo are the draft panel's own
(`draft_panel.apply_text`, the Undo button); "Add its examples as recordings" puts the format's
examples in the workspace, to run with the recorded runner against the author's chat template."""

from __future__ import annotations

from typing import Any

import gradio as gr

from engine.checks.robustness_run import format_claims
from engine.formats import Format, load_format, load_formats

from . import case_panel as cases
from .draft_panel import apply_text, proposal_diff
from .highlight import esc
from .run_panel import RUN_VIEWS, forget_other_run, settings_updates
from .state import Session
from .workbench import sync

# A search is a few words; anything longer is cut (it only filters the list).
MAX_SEARCH = 200
SHOWN = ("format_box", "format_diff", "format_info", "format_apply", "format_status")
APPLIED = ("response_template", "draft_box", "format_box", "draft_undo", "draft_status", "format_status")
# Adding the examples shows the new case and selects its first recording to run.
EXAMPLES_SHOWN = (*cases.SHOWN, *RUN_VIEWS, "runner", "recording", "pasted", "format_status")


def format_choices(query: str = "") -> list[tuple[str, str]]:
    """(label, name) of every format the search finds, in the library's order."""
    query = (query or "")[:MAX_SEARCH] if isinstance(query, str) else ""
    return [(f"{f.name} — {f.title}", f.name) for f in load_formats() if f.matches(query)]


def build_format_panel() -> dict[str, Any]:
    """The search, the picker, and the review box (what the format is, the diff, apply / examples /
    discard), by name."""
    with gr.Accordion("Start from a format", open=False, elem_id="format-accordion"):
        with gr.Row(equal_height=True):
            search = gr.Textbox(show_label=False, placeholder="Search: a model, a token such as <tool_call>, a family…",
                                elem_id="format-search", max_lines=1, scale=2, min_width=160)  # fmt: skip
            picker = gr.Dropdown(format_choices(), value=None, show_label=False, elem_id="format-picker", scale=3,
                                 min_width=200)  # fmt: skip
        status = gr.HTML(elem_id="format-status")
        with gr.Column(visible=False, elem_id="format-box", elem_classes=["draft-box"]) as box:
            info = gr.HTML(elem_id="format-info")
            diff = gr.HTML(elem_id="format-diff")
            with gr.Row():
                apply = gr.Button("Apply the format", variant="primary", size="sm", elem_id="format-apply")
                examples = gr.Button("Add its examples as recordings", size="sm", elem_id="format-examples")
                discard = gr.Button("Discard", size="sm", elem_id="format-discard")
    return dict(format_search=search, format_picker=picker, format_status=status, format_box=box, format_info=info,
                format_diff=diff, format_apply=apply, format_examples=examples, format_discard=discard)  # fmt: skip


def search_formats(format_search: str) -> dict[str, Any]:
    """Typing in the search: the picker lists only the formats it finds, and says how many."""
    choices = format_choices(format_search)
    if not choices:
        note = "No format matches; try a model name or a delimiter."
    elif isinstance(format_search, str) and format_search.strip():
        note = f"{len(choices)} of {len(load_formats())} formats match: pick one below."
    else:
        note = ""
    return {"format_picker": gr.update(choices=choices, value=None),
            "format_status": f'<div class="status-note" id="format-count">{note}</div>' if note else ""}


def _format(name: Any) -> tuple[Format | None, str]:
    """The named format, or a message saying why there is none (an API caller may send anything)."""
    if not isinstance(name, str) or not name:
        return None, '<div class="status-note">Pick a format first.</div>'
    try:
        return load_format(name), ""
    except ValueError:
        return None, f'<div class="status-note">There is no format named {esc(name[:MAX_SEARCH])}.</div>'


def pick_format(session: Session, chat_template: str, response_template: str, form_case: str, format_picker: str,
                **form: Any) -> dict[str, Any]:
    """Picking a format: it is shown as a diff against the response template being edited, with
    what the format is. Nothing changes until it is applied."""
    fmt, problem = _format(format_picker)
    if fmt is None:
        return {"format_box": gr.update(visible=False), "format_status": problem}
    sync(session, chat_template, response_template, form_case, form)
    # Against the editor's text as sent (a text over its limit is not kept by the server, but it is the visitor's).
    editor = response_template if isinstance(response_template, str) else session.workspace.response_template
    shown, changes = proposal_diff(editor, fmt.response_template_text, f"the {fmt.name} format")
    return {"format_box": gr.update(visible=True), "format_diff": shown, "format_info": info_html(fmt),
            "format_apply": gr.update(interactive=changes), "format_status": ""}  # fmt: skip


def apply_format(session: Session, response_template: str, format_picker: str) -> dict[str, Any]:
    """"Apply the format": its response template goes into the editor; Undo gives the text back."""
    fmt, problem = _format(format_picker)
    if fmt is None:
        return {"format_status": problem}
    note = f"The {esc(fmt.name)} format is in the editor. “Undo” puts your previous response template back."
    return {**apply_text(session, response_template, fmt.response_template_text, note),
            "format_box": gr.update(visible=False), "format_status": ""}  # fmt: skip


def add_examples(session: Session, chat_template: str, response_template: str, form_case: str, format_picker: str,
                 **form: Any) -> dict[str, Any]:
    """"Add its examples as recordings": a new case and one recording per example, the first one
    picked for the recorded runner (the editors and the case form are saved first, as every case
    action does)."""
    fmt, problem = _format(format_picker)
    if fmt is None:
        return {"format_status": problem}
    sync(session, chat_template, response_template, form_case, form)
    case, problems = session.workspace.add_format_examples(fmt)
    if case is None:  # the workspace cannot hold them (engine.budget): nothing was added
        return {"format_status": f'<div class="status-note">⚠ {esc(problems[0].message)} {esc(problems[0].hint or "")}</div>'}
    settings = settings_updates(session.workspace)
    note = (f'<div class="status-note">Added the case <b>{esc(case.name)}</b> and {len(fmt.examples)} recordings '
            "(in the toolbar's Recording list): ▶ Run replays one and compares the parsed message with the example's.</div>")
    return {**cases.show_case(session.workspace), "runner": settings["runner"], "recording": settings["recording"],
            "pasted": gr.update(visible=False), "format_status": note, **forget_other_run(session)}  # fmt: skip


def discard_format() -> dict[str, Any]:
    return {"format_box": gr.update(visible=False), "format_diff": "", "format_info": "", "format_status": ""}


def info_html(fmt: Format) -> str:
    """What a format is: its title and description, the models that write it, whether it is
    portable and stream-safe, what the spec cannot express there, and its examples."""
    models = ", ".join(f"<code>{esc(m)}</code>" for m in fmt.models)
    badges = [f'{len(fmt.examples)} examples, each parsed and streamed in many chunkings',
              "portable regexes" if fmt.portable else "not portable: a regex construct only some engines run"]
    if fmt.preset:
        badges.append(f"the {fmt.preset} preset's own response template")
    limits = "".join(f"<li>{esc(limit)}</li>" for limit in fmt.limits)
    claims = "".join(f"<li>{esc(line)}</li>" for line in format_claims(fmt).described())
    sources = "".join(f"<li>{esc(line)}</li>" for line in fmt.sources)
    examples = "".join(f"<li><b>{esc(e.name)}</b>: {esc(e.description)}</li>" for e in fmt.examples)
    return (
        f'<div class="format-info"><div class="draft-title">{esc(fmt.title)}</div>'
        f'<div class="draft-message">{esc(fmt.description)}</div>'
        f'<div class="draft-notes">Models: {models}. {esc("; ".join(badges))}.</div>'
        + (f'<div class="draft-limits">What the response-template spec cannot say here:<ul class="draft-notes">{limits}</ul></div>'
           if limits else "")
        + f'<details class="format-claims"><summary>What its models write (the robustness check holds it to this)</summary>'
          f'<ul class="draft-notes">{claims}</ul>'
        + (f'<div class="draft-notes">Where this comes from:</div><ul class="draft-notes format-sources">{sources}</ul>' if sources else "")
        + '</details>'
        + f'<details class="format-examples"><summary>Examples</summary><ul class="draft-notes">{examples}</ul></details></div>'
    )
