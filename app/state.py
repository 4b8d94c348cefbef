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
import binascii
import copy
import itertools
import json
import threading
import time
import uuid
import weakref
import zlib
from array import array
from dataclasses import dataclass, field, fields
from typing import Any

from engine import limits
from engine.budget import check_workspace, workspace_size
from engine.diagnostics import Diagnostic
from engine.presets import load_preset
from engine.regex_bounds import RegexAllowance
from engine.sandbox import bounded_if_large
from engine.workspace import Workspace, workspace_from_json

# A share code decompresses to at most this much JSON: a link is untrusted input (zip bombs). A
# workspace at its budget (engine.limits.MAX_WORKSPACE_CHARS) fits, JSON-escaped.
MAX_SHARE_BYTES = 2 * limits.MAX_WORKSPACE_CHARS
DEFAULT_PRESET = "smollm3"
# A session idle this long is released, workspace and all (engine.budget): the memory comes back even
# if the tab is never closed, and this Gradio keeps a session's state forever otherwise.
IDLE_SECONDS = limits.IDLE_SECONDS


def default_workspace() -> Workspace:
    """What a new session shows: the default preset (or an empty workspace if it cannot load)."""
    try:
        return Workspace.from_preset(load_preset(DEFAULT_PRESET))
    except (KeyError, ValueError, OSError):
        return Workspace()


def encode_workspace(workspace: Workspace) -> str:
    """The share code: compact JSON, zlib-compressed, base64url without padding. ASCII JSON, so text
    that is not valid Unicode (a lone surrogate typed into an editor) still encodes, and comes back
    as it was to be reported where it is."""
    raw = json.dumps(workspace.to_dict(), ensure_ascii=True, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(zlib.compress(raw, 9)).decode().rstrip("=")


def decode_workspace(code: str) -> tuple[Workspace | None, Diagnostic | None]:
    """The workspace in a share code, or a diagnostic saying why the link cannot be opened. Never
    raises: a link is untrusted input (cut short, tampered with, a future version, nested a
    thousand levels deep, a few kilobytes that inflate to a million messages…). Inflating is
    bounded here; JSON past a few hundred kilobytes is decoded in a worker."""
    code = (code or "").strip() if isinstance(code, str) else ""
    for prefix in ("#", "s="):
        code = code.removeprefix(prefix)
    try:
        packed = base64.urlsafe_b64decode(code + "=" * (-len(code) % 4))
        inflater = zlib.decompressobj()
        raw = inflater.decompress(packed, MAX_SHARE_BYTES)
        if inflater.unconsumed_tail:
            raise ValueError(f"it expands to more than {MAX_SHARE_BYTES:,} bytes")
    except (binascii.Error, zlib.error, ValueError) as e:
        return None, _unopened(str(e) if type(e) is ValueError else "it is damaged")
    found, problem = bounded_if_large(workspace_from_json, {"raw": raw}, len(raw), doing="Opening the link")
    if problem is not None:
        return None, _unopened(problem.message[0].lower() + problem.message[1:].rstrip("."))
    workspace, reason = found
    return (workspace, None) if workspace is not None else (None, _unopened(reason or "it is damaged"))


def _unopened(reason: str) -> Diagnostic:
    return Diagnostic("error", f"This link's saved state cannot be opened: {reason}.", "preset",
                      hint="The link may be cut short; ask for it again, or pick a preset.")


class LastRun:
    """What step-through replays: the chunks a run streamed and what they were parsed against, and
    what it ran with (a run belongs to those templates and that case). Kept compact (one string and
    arrays of chunk ends, token counts and times, not a list of a hundred thousand small strings):
    it stays in the session after the run."""

    def __init__(self, prompt: str, tools: list | None, response_spec: dict, chunks: list[str], tokens: list[int],
                 seconds: list[float], ran_with: tuple = (), ids: list[tuple[int, ...]] | None = None):
        self.prompt = prompt
        self.tools = tools
        self.response_spec = response_spec
        self.output = "".join(chunks)
        self.ends = array("I", itertools.accumulate(len(c) for c in chunks))
        self.tokens = array("I", tokens)
        self.seconds = array("f", seconds)
        self.ran_with = ran_with  # `run_key` of the workspace when it ran
        # Token ids of each chunk, when a tokenizer cut the run: flat, with each chunk's end in it.
        self.ids = array("I", (i for chunk in ids or () for i in chunk))
        self.id_ends = array("I", itertools.accumulate(len(chunk) for chunk in ids or ()))

    def chunk_ids(self, index: int) -> list[int]:
        """The token ids of chunk `index` (empty when the run was not cut by a tokenizer)."""
        if index >= len(self.id_ends):
            return []
        start = self.id_ends[index - 1] if index else 0
        return list(self.ids[start : self.id_ends[index]])

    @property
    def chunks(self) -> list[str]:
        """The chunks as the run streamed them."""
        return [self.output[a:b] for a, b in zip(itertools.chain((0,), self.ends), self.ends)]

    def __len__(self) -> int:
        return len(self.ends)

    def matches(self, workspace: Workspace) -> bool:
        """Whether the workspace still has the templates and case this run ran with."""
        return self.ran_with == run_key(workspace)

    def same_case(self, workspace: Workspace) -> bool:
        """Whether the workspace's case is the one this run ran with (whatever the templates are now)."""
        return self.ran_with[2:] == run_key(workspace)[2:]


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
    load_undo: Workspace | None = None  # the workspace a files or Hub load replaced ("Undo the load")
    engines: dict = field(default_factory=dict)  # the last engines matrix: {engine: {case: cell}}
    selected_check: int | None = None  # the row of the Checks table last clicked
    # This visitor's tokenizer (engine.tokens.LoadedTokenizer: loaded from the Hub, a file or a
    # folder, or the model they ran): it shows the prompt's tokens, runs the token checks and splits
    # their replays. Never another visitor's.
    tokenizer: Any = field(default=None, repr=False)
    # The (model id, tokenizer) of the local model this visitor last ran, offered as their tokenizer.
    model_tokenizer: Any = field(default=None, repr=False)
    show_tokens: bool = False  # the prompt shows its tokens ("Tokens" on)
    # The templates as last loaded whole (a Hub load, files, a share link: engine.behaviour.Version),
    # what "compare with the loaded version" compares an edit with; None for a preset (it is its own).
    loaded: Any = field(default=None, repr=False)
    stop: threading.Event | None = field(default=None, repr=False)
    # Who this is to the render workers and the line for the model (one call at a time each).
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    # Events of this session in flight, by kind ("refresh", "run", "checks"…): at most one each.
    busy: set = field(default_factory=set, repr=False)
    edits: int = 0  # edits synced so far (a running refresh renders again if more arrive meanwhile)
    form_problems: list = field(default_factory=list, repr=False)  # the case form's, at the last edit
    refused: dict = field(default_factory=dict, repr=False)  # editor -> why its last text was not kept
    last_used: float = field(default_factory=time.monotonic, repr=False)
    # This visitor's share of regex time, whatever number of edits and runs they send (the client's,
    # shared by all its sessions, once a request has named the client: app.visitors).
    regex: RegexAllowance = field(default_factory=RegexAllowance, repr=False)
    # Who the session's requests count against (engine.clients), and Gradio's id of the page.
    client: str = field(default="", repr=False)
    page: str = field(default="", repr=False)
    # Characters of each value Gradio keeps for this session (every input and output it saw last).
    shown: dict = field(default_factory=dict, repr=False)
    # What the page was last sent, by (component, prop or "value"): a hash each (app.wiring.not_shown_yet).
    sent: dict = field(default_factory=dict, repr=False)
    held: int = field(default=0, repr=False)  # bytes held, as last counted (app.visitors.account)
    released: bool = field(default=False, repr=False)  # let go of (idle, or over a budget)

    def __post_init__(self) -> None:
        _live.add(self)

    def use_model_tokenizer(self) -> list[Diagnostic]:
        """Make the tokenizer of the model last run this session's tokenizer; problems if it cannot."""
        if self.model_tokenizer is None:
            return [Diagnostic("error", "Run a local model first: its tokenizer is used then.", "tokenizer")]
        from engine.tokens import from_model

        loaded, problems = from_model(self.model_tokenizer[1], self.model_tokenizer[0])
        if loaded is not None:
            problems = [*problems, *self.set_tokenizer(loaded)]
        return problems

    def set_tokenizer(self, loaded: Any) -> list[Diagnostic]:
        """Make `loaded` (engine.tokens.LoadedTokenizer) this session's tokenizer: its special tokens
        become what the templates render with, as a Hub load's would (engine.tokens.special), unless
        the workspace cannot hold them (then why; the templates keep the tokens they had)."""
        from engine.tokens import special_tokens_for

        self.tokenizer = loaded
        before = self.workspace.special_tokens
        self.workspace.special_tokens = special_tokens_for(loaded.files.special_tokens, before)
        if too_much := check_workspace(self.workspace, "tokenizer"):
            self.workspace.special_tokens = before
        return too_much

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
        # must never be shared), nor is a tokenizer ever shared: a copy starts without either, and with
        # its own id, events in flight and regex allowance (a copy is another visitor).
        kept = {f.name: copy.deepcopy(getattr(self, f.name), memo) for f in fields(self) if f.name not in _NOT_COPIED}
        return Session(**kept)

    def __hash__(self) -> int:
        return hash(self.id)

    def __eq__(self, other: object) -> bool:
        return self is other

    def touch(self) -> None:
        """An event of this session: it is in use (see `drop_idle`)."""
        self.last_used = time.monotonic()

    def claim(self, kind: str) -> bool:
        """Start an event of `kind` unless one is running for this session (then False: the caller
        answers at once instead of holding a server thread; one visitor's events never queue up)."""
        with _BUSY_LOCK:
            self.touch()
            if kind in self.busy:
                return False
            self.busy.add(kind)
            return True

    def done(self, kind: str) -> None:
        with _BUSY_LOCK:
            self.busy.discard(kind)

    def edited(self) -> bool:
        """An edit was synced: count it, and claim the refresh if none is running (False: the running
        refresh will render this edit when it ends, see `finished_refresh`)."""
        with _BUSY_LOCK:
            self.touch()
            self.edits += 1
            if "refresh" in self.busy:
                return False
            self.busy.add("refresh")
            return True

    def finished_refresh(self, rendered: int) -> bool:
        """A refresh rendered the workspace as of edit `rendered`: True (and the refresh released) if
        no edit came since; False if one did and the refresh must render again."""
        with _BUSY_LOCK:
            if self.edits == rendered:
                self.busy.discard("refresh")
                return True
            return False

    @property
    def owner(self) -> str:
        """Who the session's work counts against in the workers: its client (its id before a request named one)."""
        return self.client or self.id

    def held_bytes(self) -> int:
        """About how many bytes this session holds: its workspace, its last run, prompt and checks,
        its tokenizer's files, and the values Gradio keeps for it."""
        size = 0 if self.released else workspace_size(self.workspace)
        size += self.loaded.size() if self.loaded is not None else 0
        size += workspace_size(self.load_undo) if self.load_undo is not None else 0
        size += len(self.last_prompt_html) + sum(self.shown.values()) + 2_000 * len(self.checks)
        if self.last_run is not None:
            size += 2 * len(self.last_run.output) + len(self.last_run.prompt) + 12 * len(self.last_run)
        files = getattr(self.tokenizer, "files", None)
        if files is not None:
            size += len(files.tokenizer_json) + len(files.config or b"") + len(files.special_tokens_map or b"")
        return size

    def release(self) -> None:
        """Let go of everything (idle, or over a budget: engine.budget): the workspace too. A later
        request of this session is told to reload; the browser's saved copy brings the work back."""
        self.released = True
        self.workspace = Workspace()
        self.last_run, self.last_spec, self.draft, self.draft_undo, self.load_undo = None, None, None, None, None
        self.last_prompt_html = ""
        self.loaded = None
        self.checks, self.engines, self.selected_check = [], {}, None
        self.tokenizer = self.model_tokenizer = None  # a tokenizer can hold 100 MB
        self.shown, self.form_problems, self.refused = {}, [], {}


# What a copy of a session starts afresh.
_NOT_COPIED = ("stop", "tokenizer", "model_tokenizer", "id", "busy", "edits", "form_problems", "refused", "last_used", "regex",
               "client", "page", "shown", "held", "released")
# Guards every session's `busy` and `edits` (held for a few instructions; not a field: Gradio copies
# the session's fields, and a lock cannot be copied).
_BUSY_LOCK = threading.Lock()

# Every live session (weakly: Gradio owns them), so idle ones can let go of their memory.
_live: weakref.WeakSet[Session] = weakref.WeakSet()


def live_sessions() -> list[Session]:
    """Every session alive now (Gradio's state holds them)."""
    return list(_live)


def release_unless_busy(session: Session) -> bool:
    """Release `session` (see `Session.release`) unless a request of it is in flight; under the lock
    events claim a session with, so none starts half-way through a release."""
    with _BUSY_LOCK:
        if session.busy or session.released:
            return False
        session.release()
        return True
