"""What one browser session is working on, and how it travels in a share link or browser storage.

A `Workspace` is the author's document: both templates (kept byte for byte), the cases, the preset
metadata the templates need (special tokens, stop tokens, declared template kwargs) and the run
settings. A `Session` wraps it with what only lives on the server for that session: the last good
prompt, the last run (for step-through) and the stop signal of a run in progress.

Every session gets its own `Session` through `gr.State(Session.empty)`: nothing here is shared
between users. A share link carries `encode_workspace(...)` (JSON, zlib, base64url); it never
carries a token or an API key, which are not part of the workspace at all.
"""

from __future__ import annotations

import base64
import binascii
import json
import threading
import zlib
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from engine.cases import Case, Recording
from engine.diagnostics import Diagnostic
from engine.presets import Preset

RUNNERS = ("recorded", "simulated", "local", "remote")
PASTED = "(pasted text)"
SHARE_VERSION = 1
# A share code decompresses to at most this much JSON: a link is untrusted input (zip bombs).
MAX_SHARE_BYTES = 4_000_000


@dataclass
class RunSettings:
    """How to produce model output. Never holds a token or API key (those stay in the browser)."""

    runner: str = "recorded"
    recording: str = ""
    pasted: str = ""
    tokens_per_second: float = 30.0
    model: str = ""
    max_new_tokens: int = 256
    temperature: float = 0.7
    top_p: float = 0.9
    seed: int = 0
    remote_url: str = "http://127.0.0.1:8000/v1"
    remote_model: str = ""


@dataclass
class Workspace:
    """The templates, cases and settings an author is editing (what a share link reopens)."""

    preset: str = ""
    chat_template: str = ""
    response_template: str = ""
    special_tokens: dict[str, str] = field(default_factory=dict)
    stop_tokens: list[str] = field(default_factory=list)
    kwarg_specs: dict[str, dict] = field(default_factory=dict)
    cases: list[Case] = field(default_factory=list)
    case_name: str = ""
    recordings: list[Recording] = field(default_factory=list)
    run: RunSettings = field(default_factory=RunSettings)
    # Named chat templates besides the one in the editor (kept as loaded, published unchanged).
    other_templates: dict[str, str] = field(default_factory=dict)
    # The Hub repo the templates were loaded from (what Publish offers by default).
    source_repo: str = ""
    source_revision: str = ""

    @classmethod
    def from_preset(cls, preset: Preset) -> Workspace:
        first = preset.cases[0].name if preset.cases else ""
        recording = next((r.name for r in preset.recordings if r.case == first), "")
        generation = preset.generation or {}
        run = RunSettings(
            recording=recording or (preset.recordings[0].name if preset.recordings else PASTED),
            model=preset.checkpoints[0] if preset.checkpoints else "",
            max_new_tokens=int(generation.get("max_new_tokens", 256)),
            temperature=float(generation.get("temperature", 0.7)),
            top_p=float(generation.get("top_p", 0.9)),
        )
        return cls(
            preset=preset.name,
            chat_template=preset.chat_template,
            response_template=preset.response_template,
            special_tokens=dict(preset.special_tokens),
            stop_tokens=list(preset.stop_tokens),
            kwarg_specs={name: dict(spec) for name, spec in preset.template_kwargs.items()},
            cases=[Case.from_dict(c.to_dict()) for c in preset.cases],
            case_name=first,
            recordings=[Recording(**asdict(r)) for r in preset.recordings],
            run=run,
        )

    # ----- cases ----------------------------------------------------------------------------

    @property
    def case(self) -> Case:
        """The case the case panel shows (a fresh one if the workspace has none)."""
        for case in self.cases:
            if case.name == self.case_name:
                return case
        if not self.cases:
            self.cases.append(Case("new case", [{"role": "user", "content": "Hello!"}]))
        self.case_name = self.cases[0].name
        return self.cases[0]

    def find_case(self, name: str) -> Case | None:
        return next((c for c in self.cases if c.name == name), None)

    def case_names(self) -> list[str]:
        return [c.name for c in self.cases]

    def unique_name(self, base: str) -> str:
        names = set(self.case_names())
        if base not in names:
            return base
        n = 2
        while f"{base} {n}" in names:
            n += 1
        return f"{base} {n}"

    def default_kwargs(self) -> dict[str, Any]:
        """The declared template kwargs at their defaults (what every case starts from)."""
        return {name: spec.get("default") for name, spec in self.kwarg_specs.items()}

    def recording(self, name: str) -> Recording | None:
        return next((r for r in self.recordings if r.name == name), None)

    # ----- serialisation ----------------------------------------------------------------------

    def to_dict(self) -> dict:
        return {
            "v": SHARE_VERSION,
            "preset": self.preset,
            "chat_template": self.chat_template,
            "response_template": self.response_template,
            "special_tokens": self.special_tokens,
            "stop_tokens": self.stop_tokens,
            "kwarg_specs": self.kwarg_specs,
            "cases": [c.to_dict() for c in self.cases],
            "case_name": self.case_name,
            "recordings": [asdict(r) for r in self.recordings],
            "run": asdict(self.run),
            "other_templates": self.other_templates,
            "source_repo": self.source_repo,
            "source_revision": self.source_revision,
        }

    @classmethod
    def from_dict(cls, data: Any) -> Workspace:
        """Rebuild a workspace from `to_dict` data. Raises ValueError with a readable message."""
        if not isinstance(data, dict):
            raise ValueError("the saved state is not an object")
        try:
            run_keys = {f.name for f in fields(RunSettings)}
            run = RunSettings(**{k: v for k, v in (data.get("run") or {}).items() if k in run_keys})
            if run.runner not in RUNNERS:
                run.runner = "recorded"
            workspace = cls(
                preset=str(data.get("preset", "")),
                chat_template=_text(data.get("chat_template", ""), "chat_template"),
                response_template=_text(data.get("response_template", ""), "response_template"),
                special_tokens=_str_dict(data.get("special_tokens") or {}, "special_tokens"),
                stop_tokens=[str(t) for t in data.get("stop_tokens") or []],
                kwarg_specs={str(k): dict(v) for k, v in (data.get("kwarg_specs") or {}).items() if isinstance(v, dict)},
                cases=[Case.from_dict(c) for c in data.get("cases") or []],
                case_name=str(data.get("case_name", "")),
                recordings=[Recording.from_dict(r) for r in data.get("recordings") or []],
                run=run,
                other_templates=_str_dict(data.get("other_templates") or {}, "other_templates"),
                source_repo=str(data.get("source_repo", "")),
                source_revision=str(data.get("source_revision", "")),
            )
        except (TypeError, ValueError, AttributeError) as e:
            raise ValueError(f"the saved state is malformed ({e})") from e
        return workspace


def _text(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{name} must be text")
    return value


def _str_dict(value: Any, name: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ValueError(f"{name} must map names to strings")
    return dict(value)


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
        if isinstance(data, dict) and data.get("v", SHARE_VERSION) > SHARE_VERSION:
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
    """What step-through replays: the chunks a run streamed and what they were parsed against."""

    prompt: str
    tools: list | None
    response_spec: dict
    chunks: list[str]
    tokens: list[int]
    seconds: list[float]


@dataclass
class Session:
    """One browser session's server-side state (held in `gr.State`)."""

    workspace: Workspace = field(default_factory=Workspace)
    last_prompt: str | None = None  # the last prompt that rendered (a bad edit keeps it on screen)
    last_prompt_html: str = ""
    last_spec: dict | None = None  # the last response template that loaded
    last_run: LastRun | None = None
    checks: list = field(default_factory=list)  # the last check results (rows of the Checks table)
    stop: threading.Event | None = field(default=None, repr=False)

    @classmethod
    def empty(cls) -> Session:
        """A new session holds the default preset: what the page shows before its load event fills
        it in. Gradio can create a session's state separately for events that race at page start
        (the load, and a first click or edit); every copy must then be a workspace the page agrees with."""
        from .sources import default_preset, from_preset

        workspace, _ = from_preset(default_preset())
        return cls(workspace) if workspace is not None else cls()

    def __deepcopy__(self, memo: dict) -> Session:
        # Gradio copies a state's initial value per session; a stop Event cannot be copied (and
        # must never be shared), so a copy starts without one.
        import copy

        return Session(
            copy.deepcopy(self.workspace, memo), self.last_prompt, self.last_prompt_html,
            copy.deepcopy(self.last_spec, memo), copy.deepcopy(self.last_run, memo), list(self.checks), None,
        )  # fmt: skip
