"""Where a workspace comes from: a preset, a Hub repo (or local folder), uploaded files, a share
link or the browser's saved copy. Each returns a workspace (or None) and what to tell the author;
the engine does the reading (`engine.presets`, `engine.hub`)."""

from __future__ import annotations

import json
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

from gradio.utils import get_upload_folder

from engine.budget import check_workspace
from engine.diagnostics import Diagnostic
from engine.hub import load_templates, read_uploads
from engine.presets import load_preset, preset_names
from engine.public import policy
from engine.sandbox import bounded_if_large

from engine.workspace import Workspace

from .state import decode_workspace


@cache
def preset_choices() -> list[tuple[str, str]]:
    """(display name, preset name) for the picker; presets that fail to load are left out."""
    choices = []
    for name in preset_names():
        try:
            choices.append((load_preset(name).display_name, name))
        except (KeyError, ValueError, OSError):
            continue
    return choices


def from_preset(name: str) -> tuple[Workspace | None, list[Diagnostic]]:
    try:
        return Workspace.from_preset(load_preset(name)), []
    except (KeyError, ValueError, OSError) as e:
        return None, [Diagnostic("error", f"The preset {name!r} cannot be loaded: {e}", "preset")]


def _named(chat_template: str | dict[str, str]) -> tuple[str, dict[str, str], list[Diagnostic]]:
    """The template the editor shows (a single text, or `default` of named templates) and the rest."""
    if isinstance(chat_template, str):
        return chat_template, {}, []
    main = "default" if "default" in chat_template else sorted(chat_template)[0]
    others = {k: v for k, v in chat_template.items() if k != main}
    note = Diagnostic(
        "info",
        f"This model has named chat templates ({', '.join(sorted(chat_template))}); the editor shows “{main}”. "
        "The others are kept unchanged and published with it.",
        "hub",
    )
    return chat_template[main], others, [note]


def with_templates(current: Workspace, chat_template: str | dict | None, response_template: str | None,
                   special_tokens: dict[str, str], source: str) -> tuple[Workspace, list[Diagnostic]]:  # fmt: skip
    """The current workspace (its cases, recordings, run settings) with new templates. Declared kwargs
    are kept only when the new chat template still mentions them."""
    notes: list[Diagnostic] = []
    chat, others = current.chat_template, {}
    if chat_template is not None:
        chat, others, notes = _named(chat_template)
    response = response_template if response_template is not None else current.response_template
    if response_template is None:
        notes.append(Diagnostic("info", f"{source} has no response template; the editor keeps the current one "
                                "as a starting point.", "hub"))  # fmt: skip
    specs = {k: v for k, v in current.kwarg_specs.items() if k in chat}
    workspace = replace(
        current,
        preset="",
        chat_template=chat,
        response_template=response,
        special_tokens=dict(special_tokens) or dict(current.special_tokens),
        kwarg_specs=specs,
        round_trip_differences={},  # a preset's intended differences do not carry over to other templates
        other_templates=others,
    )
    return workspace, notes


def from_hub(current: Workspace, repo: str, revision: str) -> tuple[Workspace | None, list[Diagnostic]]:
    """Templates from a Hub repo id (at a revision) or a local folder, into the current workspace."""
    repo = (repo or "").strip()
    if not repo:
        where = "or a local folder" if policy().allow_paths else "(on this public server, Hub repos only)"
        return None, [Diagnostic("error", f"Enter a repo id (owner/model) {where}.", "hub")]
    loaded = load_templates(repo, (revision or "").strip() or None)
    if not loaded.ok:
        return None, loaded.diagnostics
    if loaded.chat_template is None and loaded.response_template is None:
        return None, loaded.diagnostics or [Diagnostic("error", f"No templates found in {repo}.", "hub")]
    workspace, notes = with_templates(current, loaded.chat_template, loaded.response_template, loaded.special_tokens, repo)
    workspace.source_repo = repo if loaded.is_repo else ""
    workspace.source_revision = (revision or "").strip()
    if too_much := check_workspace(workspace, "hub"):
        return None, too_much
    return workspace, loaded.diagnostics + notes


# An upload is a few files: the templates (and named ones), or a tokenizer.json with its config.
MAX_UPLOAD_FILES = 10


def take_uploads(items: list[Any] | None) -> dict[str, bytes]:
    """The bytes of uploaded files by name (at most `MAX_UPLOAD_FILES`). Each file is deleted once
    read: it waited in Gradio's upload folder, and nothing reads it again (the rest of that folder
    goes on `limits.TEMP_FILE_SECONDS`' timer)."""
    uploads: dict[str, bytes] = {}
    folder = Path(get_upload_folder()).resolve()
    for item in (items or [])[:MAX_UPLOAD_FILES]:
        path = Path(item if isinstance(item, str) else getattr(item, "name", str(item)))
        uploads[path.name] = path.read_bytes()
        if path.resolve().is_relative_to(folder):
            path.unlink(missing_ok=True)
    return uploads


def from_files(current: Workspace, items: list[Any] | None) -> tuple[Workspace | None, list[Diagnostic]]:
    """Uploaded files, read by the engine (`engine.hub.read_uploads`)."""
    uploads = take_uploads(items)
    if not uploads:
        return None, [Diagnostic("error", "No files uploaded.", "hub")]
    # Uploaded JSON past a few hundred kilobytes is decoded in a worker.
    found, problem = bounded_if_large(read_uploads, {"uploads": uploads}, sum(map(len, uploads.values())),
                                      doing="Reading the files")
    if problem is not None:
        return None, [replace(problem, source="hub")]
    if found.chat_template is None and found.response_template is None:
        return None, found.diagnostics
    workspace, notes = with_templates(current, found.chat_template, found.response_template, found.special_tokens,
                                      "The uploaded files")
    if too_much := check_workspace(workspace, "hub"):
        return None, too_much
    return workspace, found.diagnostics + notes


def restore(boot: str) -> tuple[Workspace | None, str]:
    """On page load: the share link's state (URL fragment `#s=…`), else the browser's saved copy,
    else None (the default preset). Returns what to tell the author."""
    try:
        data = json.loads(boot or "{}")
    except (json.JSONDecodeError, RecursionError, TypeError):
        data = {}
    if not isinstance(data, dict):
        data = {}
    fragment = str(data.get("hash") or "")
    if fragment.startswith("#s="):
        workspace, problem = decode_workspace(fragment[3:])
        if workspace is not None:
            return workspace, "Opened from a share link."
        return None, f"⚠ {problem.message}" if problem else ""
    saved = data.get("saved")
    if isinstance(saved, str) and saved:
        workspace, _ = decode_workspace(saved)
        if workspace is not None:
            return workspace, "Restored your last session from this browser."
    return None, ""
