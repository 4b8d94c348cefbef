"""A workspace of the author's own model: what loading their files (an upload, a folder, a Hub repo)
starts from. Nothing of a preset stays that is about another model: its recordings go (another
model's outputs), its cases give way to neutral cases fitted to the new chat template (with tool-call
ids where it requires them), and its response template, special and stop tokens, suggested model and
intended differences go. What the author wrote stays: cases they added or edited (and their
recordings), a response template they edited, drafted or loaded, the pasted output. `Keep` keeps the
preset's cases, or its response template, too. The app keeps the workspace a load replaced, so the
load can be undone.

    start = model_workspace(current, Loaded(chat_template, response_template, special_tokens), timeout=10)
    start.workspace, start.summary, start.notes
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from typing import Any

from .cases import Case
from .checks.context import CheckContext, default_cases
from .checks.fitting import fit_cases
from .checks.template_fields import analyse_fields
from .diagnostics import Diagnostic
from .presets import load_preset
from .sandbox import bounded_or_why
from .workspace import PASTED, Workspace, fingerprint


@dataclass(frozen=True)
class Keep:
    """What of the current workspace a load keeps even when it came with a preset: its cases (and
    their recordings), its response template (when the files bring none)."""

    cases: bool = False
    response_template: bool = False


@dataclass
class Loaded:
    """What a load read: the chat template (a text, or named texts), the response template (None:
    the files hold none), the special tokens, the tokenizer_config.json text and the tokens it
    marks special; `source` names it in messages ("The uploaded files", a repo id)."""

    chat_template: str | dict[str, str] | None
    response_template: str | None
    special_tokens: dict[str, str] = field(default_factory=dict)
    tokenizer_config: str = ""
    added_tokens: list[str] = field(default_factory=list)
    source: str = "The files"


@dataclass
class ModelStart:
    """The workspace a load starts, one line saying what became of the previous one, and notes."""

    workspace: Workspace
    summary: str
    notes: list[Diagnostic] = field(default_factory=list)


def neutral_cases(chat_template: str, special_tokens: dict | None = None,
                  template_kwargs: dict | None = None) -> tuple[list[Case], list[str]]:
    """Cases about no model in particular, fitted to `chat_template` (engine.checks.fitting: tool-call
    ids of the shape it demands, no system message if it refuses one, …): a conversation, and when
    it reads tools, a request with tools offered and a call with its result. Returns the cases and
    what the template required (sentences). Renders the template: run it in a worker."""
    fields = _fields(chat_template)
    cases = default_cases(fields)
    calls = next((c for c in cases if c.tools), None)
    if calls is not None:
        cases.insert(1, Case("tools offered", [{"role": "user", "content": "What is the weather in Paris?"}],
                             tools=copy.deepcopy(calls.tools),
                             description="Built in: a question the tools answer, with the tools offered: paste or "
                                         "run a reply that calls one."))  # fmt: skip
    ctx = CheckContext(chat_template, "", {}, None, cases, [], special_tokens=dict(special_tokens or {}),
                       template_kwargs=dict(template_kwargs or {}))
    fitted, results = fit_cases(ctx, cases)
    required = [r.details.split(". Built-in case")[0].removeprefix("The chat template ") for r in results
                if "was adapted" in r.details]
    return fitted, list(dict.fromkeys(required))


def model_workspace(current: Workspace, loaded: Loaded, keep: Keep | None = None, *,
                    timeout: float | None = None, owner: Any = None) -> ModelStart:
    """The workspace a load of `loaded` starts from `current` (see the module's docstring). With
    `timeout`, the neutral cases are fitted in a bounded worker (fitting renders the template)."""
    keep = keep or Keep()
    if loaded.chat_template is None:
        return _without_chat_template(current, loaded)
    chat, others = main_template(loaded.chat_template)
    texts = [chat, *others.values()]
    from_preset = bool(current.preset)
    special = dict(loaded.special_tokens) or ({} if from_preset else dict(current.special_tokens))
    eos = special.get("eos_token")
    workspace = Workspace(
        chat_template=chat,
        other_templates=others,
        special_tokens=special,
        stop_tokens=[eos] if isinstance(eos, str) and eos else ([] if from_preset else list(current.stop_tokens)),
        kwarg_specs={k: dict(v) for k, v in current.kwarg_specs.items() if any(k in t for t in texts)},
        round_trip_differences={} if from_preset else dict(current.round_trip_differences),
        tokenizer_config=loaded.tokenizer_config or ("" if from_preset else current.tokenizer_config),
        model_tokens=list(loaded.added_tokens or ([] if from_preset else current.model_tokens)),
        run=copy.deepcopy(current.run),
    )
    said: list[str] = []
    notes: list[Diagnostic] = []
    _cases(current, workspace, keep, timeout, owner, said, notes)
    _response(current, loaded, workspace, keep, said, notes)
    _run_settings(current, workspace)
    if others:
        notes.append(Diagnostic("info", f"This model has named chat templates ({', '.join(sorted(loaded.chat_template))}); "
                                "the editor shows the main one. The others are kept unchanged and published with it.",
                                "hub"))  # fmt: skip
    if not loaded.special_tokens and from_preset:
        notes.append(Diagnostic("info", f"{loaded.source} {_have(loaded.source)} no special tokens, so the templates render without "
                                "the preset's (bos_token, eos_token…).", "hub",
                                hint="Load the model's tokenizer_config.json too, or type them in Special tokens."))  # fmt: skip
    return ModelStart(workspace, "; ".join(said), notes)


def main_template(chat_template: str | dict[str, str]) -> tuple[str, dict[str, str]]:
    """The template an editor shows (a single text, or `default` of named ones) and the others."""
    if isinstance(chat_template, str):
        return chat_template, {}
    main = "default" if "default" in chat_template else sorted(chat_template)[0]
    return chat_template[main], {k: v for k, v in chat_template.items() if k != main}


def _cases(current: Workspace, workspace: Workspace, keep: Keep, timeout: float | None, owner: Any,
           said: list[str], notes: list[Diagnostic]) -> None:
    """The cases and recordings: the current ones (kept), or the author's own and neutral ones."""
    if keep.cases:
        workspace.cases, workspace.recordings = copy.deepcopy(current.cases), copy.deepcopy(current.recordings)
        workspace.case_name, workspace.given = current.case_name, list(current.given)
        said.append(f"kept the {_count(len(current.cases), 'case')} and {_count(len(current.recordings), 'recording')}")
        return
    own = [c for c in current.cases if not current.is_given(c)]
    names = {c.name for c in own}
    neutral, required = _neutral(workspace, timeout, owner, notes)
    taken = set(names)
    for case in neutral:
        base, n = case.name, 2
        while case.name in taken:
            case.name, n = f"{base} {n}", n + 1
        taken.add(case.name)
    workspace.cases = [*neutral, *copy.deepcopy(own)]
    # The author's recordings stay with their cases; the preset's (another model's outputs) go.
    recordings = [r for r in current.recordings if not current.is_given(r) and r.case in taken]
    workspace.recordings = copy.deepcopy(recordings)
    workspace.given = [fingerprint(c) for c in neutral]
    workspace.case_name = current.case_name if current.case_name in names else (workspace.cases[0].name if workspace.cases else "")
    gone = [c for c in current.cases if c.name not in names]
    dropped = len(current.recordings) - len(recordings)
    if current.preset and (gone or dropped):
        old = " and ".join(p for p in (gone and _count(len(gone), "case"), dropped and _count(dropped, "recording")) if p)
        said.append(f"{_count(len(neutral), 'neutral case')} {'replaces' if len(neutral) == 1 else 'replace'} "
                    f"{_whose(current)} {old}")
    else:
        said.append(f"{_count(len(neutral), 'neutral case')} fitted to this chat template")
    if own:
        said.append(f"kept your {_count(len(own), 'case')}" + (f" and {_count(len(recordings), 'recording')}" if recordings else ""))
    for requirement in required:
        notes.append(Diagnostic("info", f"The chat template {requirement}: the neutral cases are written that way.", "hub"))


def _neutral(workspace: Workspace, timeout: float | None, owner: Any, notes: list[Diagnostic]) -> tuple[list[Case], list[str]]:
    kwargs = {"chat_template": workspace.chat_template, "special_tokens": workspace.special_tokens,
              "template_kwargs": workspace.template_kwargs()}
    if timeout is None:
        found, problem = neutral_cases(**kwargs), None
    else:
        found, problem = bounded_or_why(neutral_cases, kwargs, timeout, owner, doing="Fitting the neutral cases",
                                        it="the chat template", hint="Look for loops over large ranges in the chat template.")
    if problem is None and found[0]:
        return found
    # The template renders none of them (or took too long): they are still a place to start from.
    why = problem.message if problem is not None else "the chat template renders none of them"
    notes.append(Diagnostic("warning", f"The neutral cases were not fitted to the chat template ({why}).", "hub",
                            hint="Fix the chat template (its editor shows where), then edit the cases to fit it."))
    return default_cases(None), []  # (reading which fields it has would parse it here: the server's process)


def _response(current: Workspace, loaded: Loaded, workspace: Workspace, keep: Keep, said: list[str],
              notes: list[Diagnostic]) -> None:
    if loaded.response_template is not None:
        workspace.response_template = loaded.response_template
        said.append(f"the response template from {_lower(loaded.source)}")
        return
    mine = not current.response_template_is_given()
    if current.response_template.strip() and (keep.response_template or mine):
        workspace.response_template = current.response_template
        whose = "your" if mine else "the preset's"
        said.append(f"kept {whose} response template ({_lower(loaded.source)} {_have(loaded.source)} none)")
        return
    workspace.response_template = ""
    if current.response_template.strip():
        said.append(f"{_whose(current)} response template is gone ({_lower(loaded.source)} {_have(loaded.source)} none)")
    notes.append(Diagnostic("info", f"{loaded.source} {_have(loaded.source)} no response template, so the editor starts "
                            "empty.", "hub",
                            hint="“Draft from the chat template” (under the response template) reads one off your chat "
                                 "template; or tick “Keep the current response template” and load again."))  # fmt: skip


def _run_settings(current: Workspace, workspace: Workspace) -> None:
    """The run settings stay the author's (the pasted output too); what came with a preset goes."""
    run = workspace.run
    if current.preset:
        try:
            suggested = load_preset(current.preset).suggested_model()
        except (KeyError, ValueError, OSError):
            suggested = ""
        if run.model == suggested:
            run.model = ""
    names = {r.name for r in workspace.recordings}
    if run.recording not in names:
        case = workspace.case_name
        run.recording = next((r.name for r in workspace.recordings if r.case == case), PASTED)


def _without_chat_template(current: Workspace, loaded: Loaded) -> ModelStart:
    """Files without a chat template (a response template, a tokenizer_config.json): an edit of the
    current workspace, which stays as it is otherwise."""
    workspace = current.copy()
    said = []
    if loaded.response_template is not None:
        workspace.response_template = loaded.response_template
        said.append(f"the response template from {_lower(loaded.source)}")
    if loaded.tokenizer_config:
        workspace.tokenizer_config, workspace.model_tokens = loaded.tokenizer_config, list(loaded.added_tokens)
        workspace.special_tokens = {**workspace.special_tokens, **loaded.special_tokens}
        said.append("the special tokens and settings of its tokenizer_config.json")
    return ModelStart(workspace, "; ".join(said) + "; the rest of the workspace stays",
                      [Diagnostic("info", f"{loaded.source} {_have(loaded.source)} no chat template: the chat template "
                                  "and the cases stay as they were.", "hub")])  # fmt: skip


def _fields(chat_template: str) -> Any:
    try:
        return analyse_fields(chat_template)
    except Exception:  # noqa: BLE001 - a template that does not parse reads nothing we can tell
        return None


def _display(preset: str) -> str:
    try:
        return load_preset(preset).display_name
    except (KeyError, ValueError, OSError):
        return preset


def _whose(current: Workspace) -> str:
    """"SmolLM3's" (the preset the workspace came with), or "the"."""
    return f"{_display(current.preset)}'s" if current.preset else "the"


def _have(source: str) -> str:
    return "have" if source.endswith("files") else "has"


def _count(n: int, what: str) -> str:
    return f"{n} {what}" + ("" if n == 1 else "s")


def _lower(source: str) -> str:
    return source[0].lower() + source[1:] if source.startswith("The ") else source
