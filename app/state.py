"""What one browser session is working on, and how it travels in a share link or browser storage.

The author's document is the engine's `Workspace` (both templates byte for byte, cases, recordings,
the format's tokens and kwargs, run settings). A `Session` wraps it with what only lives on the
server for that session: the last good prompt, the last run (for step-through), the last checks,
the tokenizer of the model this visitor ran, and the stop signal of a run in progress.

Every session gets its own `Session` through `gr.State(Session.empty)`: nothing here is shared
between users. A share link carries `encode_workspace(...)` (JSON, zlib, base64url); it never
carries a token or an API key, which are not part of the workspace at all.
"""

from __future__ import annotations

import base64
import copy
import binascii
import json
import threading
import zlib
from dataclasses import dataclass, field, fields
from typing import Any

from engine.diagnostics import Diagnostic
from engine.presets import load_preset
from engine.workspace import SCHEMA_VERSION, Workspace

# A share code decompresses to at most this much JSON: a link is untrusted input (zip bombs).
MAX_SHARE_BYTES = 4_000_000
DEFAULT_PRESET = "smollm3"


def default_workspace() -> Workspace:
    """What a new session shows: the default preset (or an empty workspace if it cannot load)."""
    try:
        return Workspace.from_preset(load_preset(DEFAULT_PRESET))
    except (KeyError, ValueError, OSError):
        return Workspace()


def encode_workspace(workspace: Workspace) -> str:
    """The share code: compact JSON, zlib-compressed, base64url without padding."""
    raw = json.dumps(workspace.to_dict(), ensure_ascii=False, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(zlib.compress(raw, 9)).decode().rstrip("=")


def decode_workspace(code: str) -> tuple[Workspace | None, Diagnostic | None]:
    """The workspace in a share code, or a diagnostic saying why the link cannot be opened."""
    code = (code or "").strip()
    for prefix in ("#", "s="):
        code = code.removeprefix(prefix)
    try:
        packed = base64.urlsafe_b64decode(code + "=" * (-len(code) % 4))
        inflater = zlib.decompressobj()
        raw = inflater.decompress(packed, MAX_SHARE_BYTES)
        if inflater.unconsumed_tail:
            raise ValueError(f"it expands to more than {MAX_SHARE_BYTES:,} bytes")
        data = json.loads(raw.decode())
        if isinstance(data, dict) and data.get("v", SCHEMA_VERSION) > SCHEMA_VERSION:
            raise ValueError("it was made by a newer version of the playground")
        return Workspace.from_dict(data), None
    except (binascii.Error, zlib.error, UnicodeDecodeError, json.JSONDecodeError, ValueError) as e:
        return None, Diagnostic(
            "error",
            f"This link's saved state cannot be opened: {e}.",
            "preset",
            hint="The link may be cut short; ask for it again, or pick a preset.",
        )


@dataclass
class LastRun:
    """What step-through replays: the chunks a run streamed and what they were parsed against, and
    what it ran with (a run belongs to those templates and that case)."""

    prompt: str
    tools: list | None
    response_spec: dict
    chunks: list[str]
    tokens: list[int]
    seconds: list[float]
    ran_with: tuple = ()  # `run_key` of the workspace when it ran

    def matches(self, workspace: Workspace) -> bool:
        """Whether the workspace still has the templates and case this run ran with."""
        return self.ran_with == run_key(workspace)


def run_key(workspace: Workspace) -> tuple:
    """What a run depends on: both templates and the case (its name and content)."""
    case = {k: v for k, v in workspace.case.to_dict().items() if k not in ("name", "description")}  # renaming keeps a run
    return (workspace.chat_template, workspace.response_template, json.dumps(case, sort_keys=True, default=str))


@dataclass
class Session:
    """One browser session's server-side state (held in `gr.State`)."""

    workspace: Workspace = field(default_factory=Workspace)
    last_prompt_html: str = ""  # the last prompt that rendered (a bad edit keeps it on screen, marked stale)
    last_spec: dict | None = None  # the last response template that loaded
    last_run: LastRun | None = None
    checks: list = field(default_factory=list)  # the last check results (rows of the Checks table)
    draft: str | None = None  # a drafted response template under review (not applied yet)
    draft_undo: str | None = None  # the response template an applied draft replaced
    engines: dict = field(default_factory=dict)  # the last engines matrix: {engine: {case: cell}}
    selected_check: int | None = None  # the row of the Checks table last clicked
    # The tokenizer of the model this visitor last ran (it splits their replays and counts their
    # prompt's tokens); None until they run a local model. Never another visitor's.
    tokenizer: Any = field(default=None, repr=False)
    stop: threading.Event | None = field(default=None, repr=False)

    def run_is_stale(self) -> bool:
        """Whether the last run belongs to other templates or another case than the workspace's now."""
        return self.last_run is not None and not self.last_run.matches(self.workspace)

    @classmethod
    def empty(cls) -> Session:
        """A new session holds the default preset: what the page shows before its load event fills
        it in (the page's `gr.State` holds one, which Gradio deep-copies for each session)."""
        return cls(default_workspace())

    def __deepcopy__(self, memo: dict) -> Session:
        # Gradio copies a state's initial value per session; a stop Event cannot be copied (and
        # must never be shared), nor is a tokenizer ever shared: a copy starts without either.
        kept = {f.name: copy.deepcopy(getattr(self, f.name), memo) for f in fields(self) if f.name not in ("stop", "tokenizer")}
        return Session(**kept)
