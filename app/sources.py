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
from engine.diagnostics import Diagnostic, has_errors
from engine.hub import load_templates, read_uploads
from engine.hub.files import TOKENIZER_CONFIG
from engine import limits
from engine.limits import RENDER_SECONDS
from engine.model_workspace import Keep, Loaded, ModelStart, model_workspace
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


def from_hub(current: Workspace, repo: str, revision: str, keep: Keep | None = None,
             owner: Any = None) -> tuple[ModelStart | None, list[Diagnostic]]:
    """A workspace of the model in a Hub repo id (at a revision) or a local folder
    (`engine.model_workspace`: the preset's cases, recordings and response template give way)."""
    repo = (repo or "").strip()
    if not repo:
        where = "or a local folder" if policy().allow_paths else "(on this public server, Hub repos only)"
        return None, [Diagnostic("error", f"Enter a repo id (owner/model) {where}.", "hub")]
    loaded = load_templates(repo, (revision or "").strip() or None)
    if not loaded.ok:
        return None, loaded.diagnostics
    if loaded.chat_template is None and loaded.response_template is None:
        return None, loaded.diagnostics or [Diagnostic("error", f"No templates found in {repo}.", "hub")]
    found = Loaded(loaded.chat_template, loaded.response_template, loaded.special_tokens,
                   config_text(loaded.files), loaded.added_tokens, source=repo)
    start = model_workspace(current, found, keep, timeout=RENDER_SECONDS, owner=owner)
    start.workspace.source_repo = repo if loaded.is_repo else ""
    start.workspace.source_revision = (revision or "").strip()
    problems = fits(start)
    if problems:
        return None, problems
    return start, loaded.diagnostics + start.notes


# An upload is a few files: the templates (and named ones), or a tokenizer.json with its config (a
# request with more is refused before Gradio reads them: app.upload_limits).
MAX_UPLOAD_FILES = limits.MAX_UPLOAD_FILES


def take_uploads(items: list[Any] | None) -> dict[str, bytes]:
    """The bytes of uploaded files by name (at most `MAX_UPLOAD_FILES`; a later file of a name wins).
    Each file is deleted once read: it waited in Gradio's upload folder, and nothing reads it again
    (the rest of that folder goes on `limits.TEMP_FILE_SECONDS`' timer). A file already read and
    deleted (Gradio's file list keeps the files of an earlier upload) is passed over."""
    uploads: dict[str, bytes] = {}
    folder = Path(get_upload_folder()).resolve()
    for item in (items or [])[-MAX_UPLOAD_FILES:]:
        path = Path(item if isinstance(item, str) else getattr(item, "name", str(item)))
        try:
            data = path.read_bytes()
        except (FileNotFoundError, IsADirectoryError):
            continue
        uploads[path.name] = data
        if path.resolve().is_relative_to(folder):
            path.unlink(missing_ok=True)
    return uploads


def from_files(current: Workspace, items: list[Any] | None, keep: Keep | None = None,
               owner: Any = None) -> tuple[ModelStart | None, list[Diagnostic]]:
    """Uploaded files, read by the engine (`engine.hub.read_uploads`), as a workspace of that model."""
    uploads = take_uploads(items)
    if not uploads:
        return None, [Diagnostic("error", "No files uploaded.", "hub",
                                 hint="Choose the files again: each upload is read once.")]
    # Uploaded JSON past a few hundred kilobytes is decoded in a worker.
    found, problem = bounded_if_large(read_uploads, {"uploads": uploads}, sum(map(len, uploads.values())),
                                      doing="Reading the files")
    if problem is not None:
        return None, [replace(problem, source="hub")]
    config = config_text(found.files)
    if found.chat_template is None and found.response_template is None and (not config or has_errors(found.diagnostics)):
        return None, found.diagnostics
    loaded = Loaded(found.chat_template, found.response_template, found.special_tokens, config, found.added_tokens,
                    source="The uploaded files")
    start = model_workspace(current, loaded, keep, timeout=RENDER_SECONDS, owner=owner)
    problems = fits(start)
    if problems:
        return None, problems
    return start, found.diagnostics + start.notes


def config_text(files: dict[str, bytes]) -> str:
    """The tokenizer_config.json among loaded files, as text ("" when there is none, or it is not UTF-8)."""
    try:
        return files.get(TOKENIZER_CONFIG, b"").decode("utf-8")
    except UnicodeDecodeError:
        return ""


def fits(start: ModelStart) -> list[Diagnostic]:
    """Why the workspace a load starts cannot be held ([] when it fits). A tokenizer_config.json too
    large to keep with it is let go first, with a note: the templates still load."""
    workspace = start.workspace
    too_much = check_workspace(workspace, "hub")
    if too_much and workspace.tokenizer_config:
        size = len(workspace.tokenizer_config)
        workspace.tokenizer_config, workspace.model_tokens = "", []
        too_much = check_workspace(workspace, "hub")
        start.notes.append(Diagnostic("warning", f"tokenizer_config.json ({size:,} characters) is too large to keep with "
                                      "this workspace: a downloaded zip holds a new one with only response_template.",
                                      "hub", hint="Publish to the model's repo (the Publish tab) to keep its other keys."))  # fmt: skip
    return too_much


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
