"""The author's document: both templates (kept byte for byte), the format's special and stop tokens,
the template kwargs it declares, the cases and recordings to try them with, the round-trip
differences it intends, and how to run a case. The app's session edits one; a share link carries
one; the command line builds one from a preset or from files. Every decision that depends on it
(which kwargs are passed, how a case renders, which checks run with what) is made here, once."""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any

from . import limits
from .cases import Case, Recording, passed_kwargs, render_case
from .checks import CheckReport, Sample, run_checks
from .diagnostics import Diagnostic
from .draft import Draft, draft_response_template
from .formats import Format
from .presets import Preset, load_preset, preset_names
from .render import RenderResult

RUNNERS = ("recorded", "simulated", "local", "remote")
# The recording choice meaning "the text the author pasted".
PASTED = "(pasted text)"
SCHEMA_VERSION = 1


@dataclass
class RunSettings:
    """How to produce model output for a case. Never holds a token or an API key."""

    runner: str = "recorded"
    recording: str = ""
    pasted: str = ""
    tokens_per_second: float = 30.0
    model: str = ""
    max_new_tokens: int = 256
    temperature: float = 0.7
    top_p: float = 0.9
    seed: int | None = 0
    remote_url: str = "http://127.0.0.1:8000/v1"
    remote_model: str = ""
    device: str = "auto"


@dataclass
class Workspace:
    """The templates, cases and settings an author is working on."""

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
    # Fields the chat template drops on purpose, each with why: the round trip reports them as
    # intended, not as failures (a preset's documented differences, or the author's own).
    round_trip_differences: dict[str, str] = field(default_factory=dict)
    # Named chat templates besides the one being edited (kept as loaded, published unchanged).
    other_templates: dict[str, str] = field(default_factory=dict)
    # The Hub repo the templates were loaded from (what Publish offers by default).
    source_repo: str = ""
    source_revision: str = ""
    # The model's tokenizer_config.json as loaded (files, a folder, a Hub repo): a zip writes the
    # templates into it, every other key kept. "" when the templates came from a preset.
    tokenizer_config: str = ""
    # The texts the model's tokenizer treats as special (its added tokens): boxed in the prompt.
    model_tokens: list[str] = field(default_factory=list)
    # Fingerprints of the cases and recordings that came with the workspace (a preset's, or the
    # neutral cases a load starts with), as they came: one the author edited is no longer among them.
    given: list[str] = field(default_factory=list)

    @classmethod
    def from_preset(cls, preset: Preset) -> Workspace:
        """A fresh, independent copy of a preset to edit."""
        cases = list(preset.cases)
        first = cases[0].name if cases else ""
        recordings = list(preset.recordings)
        recording = next((r.name for r in recordings if r.case == first), "")
        generation = preset.generation
        run = RunSettings(
            recording=recording or (recordings[0].name if recordings else PASTED),
            model=preset.suggested_model(),
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
            kwarg_specs=preset.kwarg_specs(),
            cases=cases,
            case_name=first,
            recordings=recordings,
            run=run,
            round_trip_differences=preset.intended_differences(),
            given=[fingerprint(item) for item in (*cases, *recordings)],
        )

    def is_given(self, item: Case | Recording) -> bool:
        """Whether a case or recording is one that came with the workspace, unedited (a preset's,
        or a neutral case of a load), rather than the author's own."""
        if fingerprint(item) in self.given:
            return True
        if not self.preset:
            return False
        try:  # a state saved before fingerprints were kept: the preset says
            preset = load_preset(self.preset)
        except (KeyError, ValueError, OSError):
            return False
        return fingerprint(item) in {fingerprint(p) for p in (*preset.cases, *preset.recordings)}

    def response_template_is_given(self) -> bool:
        """Whether the response template is the preset's, unedited."""
        if not self.preset:
            return False
        try:
            return self.response_template == load_preset(self.preset).response_template
        except (KeyError, ValueError, OSError):
            return False

    # ----- cases ----------------------------------------------------------------------------

    @property
    def case(self) -> Case:
        """The case being looked at (a fresh one if the workspace has none)."""
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

    def recording(self, name: str) -> Recording | None:
        return next((r for r in self.recordings if r.name == name), None)

    def add_format_examples(self, fmt: Format) -> tuple[Case | None, list[Diagnostic]]:
        """A library format's examples as recordings, to run with the recorded runner: one new case
        (a user request with every tool the examples offer) and a recording per example, tied to it,
        each with the message it must parse to. The case and the first recording become current.
        The prompt is the author's chat template's: running them shows whether this chat template
        and the format's response template agree on the examples. Nothing is added, and why is
        returned, when the workspace cannot hold them (engine.budget.check_workspace)."""
        from .budget import check_workspace

        tools = {t["function"]["name"]: t for e in fmt.examples for t in e.tool_list() or [] if "function" in t}
        case = Case(self.unique_name(f"{fmt.name} examples"),
                    [{"role": "user", "content": f"(An example request: the answers are the {fmt.name} format's examples.)"}],
                    tools=list(tools.values()) or None,
                    description=f"Added from the format library: {fmt.title}. Run its recordings with the recorded runner.")  # fmt: skip
        taken = {r.name for r in self.recordings}
        recordings = []
        for example in fmt.examples:
            name, n = f"{fmt.name}: {example.name}", 2
            while name in taken:
                name, n = f"{fmt.name}: {example.name} {n}", n + 1
            taken.add(name)
            recordings.append(Recording(name, case.name, example.output, example.expected(), example.description))
        before = (list(self.cases), list(self.recordings), self.case_name, self.run)
        self.cases.append(case)
        self.recordings += recordings
        self.case_name = case.name
        self.run = replace(self.run, runner="recorded", recording=recordings[0].name if recordings else self.run.recording)
        if problems := check_workspace(self, "case"):
            self.cases, self.recordings, self.case_name, self.run = before
            return None, problems
        return case, []

    # ----- what the engine does with it -------------------------------------------------------

    def template_kwargs(self) -> dict[str, Any]:
        """The kwargs every case starts from (see `passed_kwargs`)."""
        return passed_kwargs(self.kwarg_specs)

    def render(self, case: Case | None = None, timeout: float | None = None, owner: Any = None,
               with_generation_start: bool = False, explain: bool | str = False) -> RenderResult:
        """The prompt of `case` (the current one by default): the case's own kwargs and tokens win.
        `timeout` and `owner`: see `engine.render.render`; `with_generation_start`: where its
        generation prompt begins too, and `explain`: where each character came from, in the same call."""
        return render_case(self.chat_template, case or self.case, self.special_tokens, self.template_kwargs(),
                           timeout=timeout, owner=owner, with_generation_start=with_generation_start, explain=explain)

    def run_checks(self, runs: list[Sample | tuple[Case, str]] | None = None, **options: Any) -> CheckReport:
        """Every check on this workspace: its cases, the recordings of those cases, and `runs`
        (outputs a runner produced). `options` go to `engine.checks.run_checks` and win over the
        workspace's own settings (e.g. `timeout=`, or `template_kwargs=` from the command line)."""
        settings: dict[str, Any] = {
            "special_tokens": self.special_tokens,
            "template_kwargs": self.template_kwargs(),
            "stop_tokens": self.stop_tokens,
            "round_trip_differences": self.round_trip_differences,
        }
        recordings = [r for r in self.recordings if self.find_case(r.case) is not None]
        return run_checks(self.chat_template, self.response_template, self.cases, recordings, runs or [],
                          **{**settings, **options})

    def draft_response_template(self, timeout: float | None = None) -> Draft:
        """A response template drafted from the chat template, with this workspace's special and
        stop tokens, template kwargs and intended differences (see `engine.draft`)."""
        return draft_response_template(self.chat_template, self.special_tokens, template_kwargs=self.template_kwargs(),
                                       stop_tokens=self.stop_tokens, documented=self.round_trip_differences,
                                       timeout=timeout)  # fmt: skip

    # ----- serialisation ----------------------------------------------------------------------

    def to_dict(self) -> dict:
        return {
            "v": SCHEMA_VERSION,
            "preset": self.preset,
            "chat_template": self.chat_template,
            "response_template": self.response_template,
            "special_tokens": self.special_tokens,
            "stop_tokens": self.stop_tokens,
            "kwarg_specs": self.kwarg_specs,
            "cases": [c.to_dict() for c in self.cases],
            "case_name": self.case_name,
            # Their fields as they are (plain values: the JSON is `asdict`'s), not deep copies: a share
            # code is encoded on every edit, and copying every recording took most of its time.
            "recordings": [_fields(r) for r in self.recordings],
            "run": _fields(self.run),
            "round_trip_differences": self.round_trip_differences,
            "other_templates": self.other_templates,
            "source_repo": self.source_repo,
            "source_revision": self.source_revision,
            "tokenizer_config": self.tokenizer_config,
            "model_tokens": self.model_tokens,
            "given": self.given,
        }

    @classmethod
    def from_dict(cls, data: Any) -> Workspace:
        """Rebuild a workspace from `to_dict` data (untrusted: a share link, browser storage).
        Raises ValueError with a readable message."""
        if not isinstance(data, dict):
            raise ValueError("the saved state is not an object")
        try:
            run_keys = {f.name for f in fields(RunSettings)}
            run = RunSettings(**{k: v for k, v in (data.get("run") or {}).items() if k in run_keys})
            if run.runner not in RUNNERS:
                run.runner = "recorded"
            return cls(
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
                round_trip_differences=_str_dict(data.get("round_trip_differences") or {}, "round_trip_differences"),
                other_templates=_str_dict(data.get("other_templates") or {}, "other_templates"),
                source_repo=str(data.get("source_repo", "")),
                source_revision=str(data.get("source_revision", "")),
                tokenizer_config=_text(data.get("tokenizer_config", ""), "tokenizer_config"),
                model_tokens=[str(t) for t in data.get("model_tokens") or []],
                given=[str(g) for g in data.get("given") or []],
            )
        except (TypeError, ValueError, AttributeError) as e:
            raise ValueError(f"the saved state is malformed ({e})") from e

    def copy(self) -> Workspace:
        return copy.deepcopy(self)


def _fields(item: Any) -> dict[str, Any]:
    """A dataclass's fields by name (not copied)."""
    return {f.name: getattr(item, f.name) for f in fields(item)}


def fingerprint(item: Case | Recording) -> str:
    """A short fingerprint of a case or recording as it is now (its JSON)."""
    data = item.to_dict() if isinstance(item, Case) else asdict(item)
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]


def workspace_from_json(raw: bytes) -> tuple[Workspace | None, str | None]:
    """The workspace in saved JSON (a share link's, the browser's copy: untrusted), or why it cannot be
    opened: not a playground state, a newer version, nested too deeply, malformed, or more than one
    session may hold (engine.budget). Large inputs are decoded in a worker (`sandbox.bounded_if_large`)."""
    from .budget import check_workspace, measure, too_large
    from .inputs import depth, printable_value

    try:
        data = json.loads(raw.decode())
        # Counted up to twice the budget (a link a little too large is described exactly), never
        # further: a few kilobytes that inflate to a million messages cost no more than that to refuse.
        size = measure(data, stop_past=2 * limits.MAX_WORKSPACE_CHARS)
        if size.bytes > limits.MAX_WORKSPACE_CHARS:
            return None, _reason(too_large(size=size))  # before anything walks all of it
        version = data.get("v", SCHEMA_VERSION) if isinstance(data, dict) else None
        if not isinstance(version, int):
            return None, "it is not a playground state"
        if version > SCHEMA_VERSION:
            return None, "it was made by a newer version of the playground"
        if depth(data) > limits.MAX_JSON_DEPTH:
            return None, f"it is nested more than {limits.MAX_JSON_DEPTH} levels deep"
        # Text that is not valid Unicode (typed through the API, saved with ensure_ascii) cannot be
        # shown in an editor: it comes back as U+FFFD.
        workspace = Workspace.from_dict(printable_value(data))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return None, "it is damaged"
    except ValueError as e:
        return None, str(e)
    too_much = check_workspace(workspace)
    return (None, _reason(too_much[0])) if too_much else (workspace, None)


def _reason(problem: Any) -> str:
    """A diagnostic's message as the reason in "… cannot be opened: <reason>."."""
    return problem.message[0].lower() + problem.message[1:].rstrip(".")


def run_preset_checks(preset: str | Preset, **options: Any) -> CheckReport:
    """Every check on a preset, exactly as the Checks tab runs them on a preset just opened: its
    cases, recordings, special and stop tokens, template kwargs and intended differences."""
    preset = load_preset(preset) if isinstance(preset, str) else preset
    return Workspace.from_preset(preset).run_checks(**options)


def _text(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{name} must be text")
    return value


def _str_dict(value: Any, name: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise ValueError(f"{name} must map names to strings")
    return dict(value)


def compile_presets() -> None:
    """Render every preset's first case, explained, in this process. A render worker does this once
    when the app starts it (`engine.sandbox.Pool.warm`), so the first visitor to pick a preset does
    not wait for its templates to compile: transformers' compiled template and the explained copy are
    cached per process, and a cold one took 60 to 150 ms of a preset switch (gpt-oss)."""
    for name in preset_names():
        Workspace.from_preset(load_preset(name)).render(with_generation_start=True, explain=True)
