"""Draft a response template from a chat template.

The chat template already says how an assistant turn looks: it renders the reasoning, tool calls
and content of assistant messages in history. The draft reads it (engine.reading: probes carrying
a unique sentinel in each field, where each went, the delimiters around them, the format library),
verifies the result by parsing every probe back with transformers and running the round-trip and
streaming checks (verify), and reports each field. It never invents: a field the template does not
show is left out, with why and what the author can do.

    draft = draft_response_template(chat_template, special_tokens={"eos_token": "<|im_end|>"})
    draft.response_template   # the spec (dict), or None when no field could be drafted
    draft.text                # ... as the JSON an editor shows
    draft.fields              # [FieldReport(field, status, message, notes)]: verified / unverified / not_inferable
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from ..checks import CheckResult
from ..checks.template_fields import analyse_fields
from ..diagnostics import Diagnostic
from ..error_place import undefined_name
from ..formats import load_format
from ..render import special_token_advice
from ..sandbox import bounded_or_why
from ..reading.build import build
from ..reading.library import Candidate, candidates
from ..reading.locate import locate
from ..reading.match import Choice, Disagreement, Match, choose, history_limits
from ..reading.outcomes import Outcome, outcomes_of
from ..reading.probes import FIELDS, Failure, Turn, render_turns
from ..reading.told import what_is_told
from .verify import probe_cases, rank_by_robustness, run_probe_checks

__all__ = ["Draft", "FieldReport", "draft_response_template"]

Status = Literal["verified", "unverified", "not_inferable"]

# What the author can do about a field the template does not show.
BY_HAND = {
    "reasoning_content": "write this field by hand; the model card may say which tags the model writes",
    "tool_calls": "write this field by hand; the tool instructions in the prompt or the model card often show "
    "how the model writes calls",
    "content": "write this field by hand",
}


@dataclass
class FieldReport:
    """What the draft could infer about one message field."""

    field: str
    status: Status
    message: str
    notes: list[str] = field(default_factory=list)
    shown: int = 0  # probes whose rendered turn shows the field

    def to_dict(self) -> dict:
        return {"field": self.field, "status": self.status, "message": self.message, "notes": list(self.notes),
                "shown": self.shown}  # fmt: skip


@dataclass
class Draft:
    """A drafted response template, what was inferred per field, and the checks run on it."""

    response_template: dict | None
    fields: list[FieldReport] = field(default_factory=list)
    checks: list[CheckResult] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    probes: int = 0
    seconds: float = 0.0
    # The library format the calls come from (None: read off the history, or no call field), a
    # disagreement between the history and the tool instructions, and what the spec cannot say.
    format: Match | None = None
    disagreement: Disagreement | None = None
    limits: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The response template as JSON text (what the editor shows), or "" when there is none."""
        return json.dumps(self.response_template, indent=2, ensure_ascii=False) + "\n" if self.response_template else ""

    def report(self, name: str) -> FieldReport | None:
        return next((f for f in self.fields if f.field == name), None)

    def to_dict(self) -> dict:
        return {
            "response_template": self.response_template,
            "report": {
                "fields": [f.to_dict() for f in self.fields],
                "checks": [c.to_dict() for c in self.checks],
                "probes": self.probes,
                "seconds": round(self.seconds, 3),
                "format": self.format.to_dict() if self.format else None,
                "disagreement": self.disagreement.to_dict() if self.disagreement else None,
                "limits": list(self.limits),
            },
            "diagnostics": [d.to_dict() for d in self.diagnostics],
        }


def draft_response_template(
    chat_template: str | dict[str, str],
    special_tokens: dict | None = None,
    *,
    template_kwargs: dict | None = None,
    stop_tokens: list[str] | None = None,
    documented: dict[str, str] | None = None,
    checks: bool = True,
    timeout: float | None = None,
) -> Draft:
    """Draft the response template `chat_template` implies. Never raises.

    `special_tokens` are what the template reads as bos_token / eos_token; `stop_tokens` end the
    model's turn (default: the eos token). `documented` are known differences between how the
    template renders history and what the model writes ({field: why}, e.g. a preset's), added to
    the report. With `timeout` (seconds), the whole draft runs in engine.sandbox's killable worker:
    it renders the untrusted template dozens of times."""
    if timeout is not None:
        return _bounded(timeout, chat_template=chat_template, special_tokens=special_tokens,
                        template_kwargs=template_kwargs, stop_tokens=stop_tokens, documented=documented, checks=checks)  # fmt: skip
    started = time.perf_counter()
    special_tokens = dict(special_tokens or {})
    eos = special_tokens.get("eos_token")
    stops = list(stop_tokens) if stop_tokens else ([eos] if isinstance(eos, str) and eos else [])
    turns, failures = render_turns(chat_template, special_tokens, dict(template_kwargs or {}), stops)
    draft = Draft(None, probes=len(turns) + len(failures))
    if not turns:
        _renders_no_probe(draft, failures)
        draft.seconds = time.perf_counter() - started
        return draft
    missing, lost = _locate(turns)
    draft.diagnostics += _prefill_notes(turns)
    built = build([t for t in turns if t.probe.primary], missing, stops)
    outcomes = outcomes_of(built.spec, turns, built.left_out)
    choice = _library_choice(built, turns, failures, outcomes)
    taken = choice.candidate.taken if choice.candidate else ()
    history_left_out = dict(built.left_out)
    # When the history writes calls unlike the instructions, its turns with calls do not parse with
    # what the model is told: they say nothing about the other fields, and cannot round-trip.
    checked = [t for t in turns if choice.disagreement is None or not t.probe.message.get("tool_calls")]
    round_trips = [t for t in checked if choice.disagreement is None or not any(m.get("tool_calls") for m in t.messages)]
    if choice.candidate is not None:
        outcomes = _take(built, choice.candidate, checked)
    draft.response_template = built.spec
    draft.format, draft.disagreement, draft.limits = choice.match, choice.disagreement, list(choice.limits)
    draft.fields = [
        library_report(name, choice, history_left_out.get(name), failures, lost.get(name, []), turns, (documented or {}).get(name))
        if name in taken
        else _field_report(name, built, turns, failures, outcomes, lost, chat_template, (documented or {}).get(name))
        for name in FIELDS
    ]
    documented = _note_calls(draft, choice, taken, documented)
    if built.spec and checks:
        _check_on_probes(draft, chat_template, built.spec, round_trips, special_tokens, stops, documented)
    draft.seconds = time.perf_counter() - started
    return draft


def _renders_no_probe(draft: Draft, failures: list[Failure]) -> None:
    """The draft of a chat template that renders none of the probe conversations: why, and what to give."""
    first = failures[0].message if failures else "no probe"
    unpassed = undefined_name(first)
    draft.diagnostics.append(Diagnostic(
        "error", f"The chat template renders none of the probe conversations: {first}", "chat_template",
        hint=(special_token_advice(unpassed) if unpassed else None) or "Fix the chat template first (its editor shows where).",
    ))  # fmt: skip
    draft.fields = [FieldReport(name, "not_inferable", "The chat template does not render.") for name in FIELDS]


def _locate(turns: list[Turn]) -> tuple[dict[str, str], dict[str, list[str]]]:
    """Where each field went in each turn (set on the turn); why a field is missing from one; and, by
    field, the probes whose turn writes only some of its message's calls."""
    missing: dict[str, str] = {}
    lost: dict[str, list[str]] = {}
    for turn in turns:
        located = locate(turn)
        turn.spans = located.spans
        for name, why in located.missing.items():
            missing.setdefault(name, why)
        if located.lost_calls and len(located.lost_calls) < len(turn.probe.message.get("tool_calls", [])):
            lost.setdefault("tool_calls", []).append(turn.probe.phrase)
    return missing, lost


def _prefill_notes(turns: list[Turn]) -> list[Diagnostic]:
    """A generation prompt that ends with text the history leaves out: the draft reads the history."""
    return [Diagnostic(
        "info", f"The generation prompt ends with {prefilled!r}, which the chat template leaves out when it "
        "renders the reply into history: the draft reads each turn as the history writes it.",
        "chat_template", hint="A model writes after that text, so its output starts inside whatever it opens.",
    ) for prefilled in dict.fromkeys(t.prefilled for t in turns if t.prefilled)]  # fmt: skip


def _library_choice(built: Any, turns: list[Turn], failures: list[Failure], outcomes: list[Outcome]) -> Choice:
    """Which library format the draft takes its calls from, if any: from what the model is told (tool
    instructions, generation prompts) and whether the history's own calls parse back (`outcomes`)."""
    told = what_is_told(turns, failures)
    history_calls = "tool_calls" in (built.spec or {}).get("fields", {}) and not any("tool_calls" in o.failed for o in outcomes)
    return choose(rank_by_robustness(candidates(built.spec, built.implicit, turns, told, outcomes)), history_calls, turns)


def _take(built: Any, candidate: Candidate, checked: list[Turn]) -> list[Outcome]:
    """The library candidate's spec in the draft (the fields it takes no longer left out), and the
    `checked` turns parsed back with it."""
    built.spec = candidate.spec
    for name in candidate.taken:
        built.left_out.pop(name, None)
    return outcomes_of(built.spec, checked, built.left_out)


def _note_calls(draft: Draft, choice: Choice, taken: tuple[str, ...], documented: dict[str, str] | None,
                ) -> dict[str, str] | None:  # fmt: skip
    """The notes on the calls (formats seen but not verified, the limits of the spec behind what the
    draft says) and, when the history writes calls unlike the instructions, a note on every other
    field; the differences the checks then take as documented (that one among them)."""
    calls = draft.report("tool_calls")
    assert calls is not None
    if choice.notes:
        calls.notes += choice.notes
    if "tool_calls" not in taken:
        draft.limits += [limit for limit in history_limits([calls.message, *calls.notes]) if limit not in draft.limits]
    if choice.disagreement is not None:
        documented = {**(documented or {}), "tool_calls": "the chat template writes calls in history unlike what the "
                      "tool instructions tell the model to write (see chat_lint.history_calls)"}  # fmt: skip
        for report in draft.fields:
            if report.field not in taken and report.shown:
                report.notes.append("probes with calls are not counted (nor checked): the history's calls are not what "
                                    "the model is told")
    return documented


def _check_on_probes(draft: Draft, chat_template: str | dict, spec: dict, round_trips: list[Turn], special_tokens: dict,
                     stops: list[str], documented: dict[str, str] | None) -> None:  # fmt: skip
    """The round-trip and streaming checks of the draft on the probe conversations, a field not
    verified taken as intended; the draft stands without them when they cannot run (saying why)."""
    unverified = {f.field: f.message for f in draft.fields if f.status != "verified"}
    claims = (draft.format.name, dict(load_format(draft.format.name).variations)) if draft.format else None
    try:
        draft.checks = run_probe_checks(chat_template, spec, probe_cases(round_trips, set(spec["fields"])), special_tokens,
                                        stops, {**unverified, **(documented or {})}, claims)  # fmt: skip
    except Exception as e:  # noqa: BLE001 - the draft stands without its checks; say why
        draft.diagnostics.append(Diagnostic("warning", f"The checks could not run on the draft: {e}", "response_template"))
    _note_robustness(draft)


def _note_robustness(draft: Draft) -> None:
    """What breaks of what the model writes (the robustness check's failures), on the field it breaks."""
    for result in draft.checks:
        if result.name.startswith("robustness.") and result.status == "fail":
            words = result.details.split(":", 1)[0]
            place = result.details.split("The smallest output that breaks", 1)[-1].split("\n", 2)
            report = draft.report("tool_calls") or draft.report("content")
            if report is not None:
                report.notes.append(f"robustness: {words} break ({result.name}); the smallest: {place[1].strip() if len(place) > 1 else ''}")


def _field_report(name: str, built: Any, turns: list[Turn], failures: list[Failure], outcomes: list[Outcome],
                  lost: dict[str, list[str]], chat_template: str | dict, documented: str | None) -> FieldReport:  # fmt: skip
    notes = list(built.notes.get(name, []))
    if documented:
        notes.append(f"documented difference: {documented}")
    refused = [f for f in failures if name in f.probe.message]
    if refused:
        notes.append(f"the chat template refuses {_probes(f.probe.phrase for f in refused)}: {refused[0].message}")
    spills = sorted({o.turn.probe.phrase for o in outcomes if name in o.spilled})
    shown = sum(1 for t in turns if any(s.field == name for s in t.spans))
    if name in built.left_out or built.spec is None or name not in built.spec["fields"]:
        why = built.left_out.get(name, "not written")
        message = _not_inferable(name, why, turns, chat_template)
        if spills:
            notes.append(f"until it is written, its text lands in another field (in {_probes(spills)})")
        return FieldReport(name, "not_inferable", message, notes, shown)
    unwritten = [t.probe.phrase for t in turns if name in t.probe.message and not any(s.field == name for s in t.spans)]
    if unwritten:
        notes.append(f"the chat template does not write `{name}` in {_probes(unwritten)}, where the message has it")
    if name in lost:
        notes.append(_lost(lost[name]))
    bad = [(o.turn.probe.phrase, o.failed[name]) for o in outcomes if name in o.failed]
    described = describe(name, built.spec["fields"][name], name == built.implicit)
    if bad:
        first = "; ".join(f"{label}: {why}" for label, why in bad[:3])
        more = f" (and {len(bad) - 3} more)" if len(bad) > 3 else ""
        return FieldReport(name, "unverified", f"{described} It does not parse back in {len(bad)} of {shown} probes: {first}{more}.", notes, shown)
    return FieldReport(name, "verified", f"{described} Parsed back exactly in all {shown} probes that show it.", notes, shown)


def library_report(name: str, choice: Choice, left_out: str | None, failures: list[Failure], lost: list[str],
                   turns: list[Turn], documented: str | None) -> FieldReport:  # fmt: skip
    """The report of a field taken from a library format: what it is, what it parses, and how the
    history compares (`left_out`: why the history alone gave no such field)."""
    candidate = choice.candidate
    assert candidate is not None and choice.match is not None
    spec = candidate.spec["fields"][name]
    described = describe(name, spec, False)
    source = f"It is the library's `{candidate.format.name}` format ({candidate.format.title}): {'; '.join(choice.match.how)}."
    notes = [f"documented difference: {documented}"] if documented else []
    refused = [f for f in failures if name in f.probe.message]
    if refused:
        notes.append(f"the chat template refuses {_probes(f.probe.phrase for f in refused)}: {refused[0].message}")
    shown = candidate.probes[1] if name == "tool_calls" else sum(1 for t in turns if any(s.field == name for s in t.spans))
    if lost:
        notes.append(_lost(lost))
    if choice.disagreement is not None and name == "tool_calls":
        notes.append("the history writes calls differently, which is a bug in the chat template: the report shows both "
                     "texts side by side (so does the check `chat_lint.history_calls`)")
    elif left_out == "not written":
        notes.append(f"the history alone does not show it: the chat template never writes `{name}` into an assistant turn")
    elif left_out:
        notes.append(f"the history alone does not show it: {left_out}")
    parsed = candidate.probes[0]
    if candidate.verifies and (candidate.history_agrees or not shown or choice.disagreement is not None):
        return FieldReport(name, "verified", f"{described} {source}", notes, shown)
    why = (f" It does not parse {shown - parsed} of the {shown} history probes with calls"
           + (": the format needs what the spec cannot say (below)." if candidate.format.limits
              else ": the calls come back, their arguments differ." if candidate.named == shown else ".")
           if parsed < shown else " Not every example the format has parses here.")  # fmt: skip
    return FieldReport(name, "unverified", f"{described} {source}{why}", notes, shown)


def _lost(labels: list[str]) -> str:
    return (f"the template writes only some of the calls of a message ({_probes(labels)}), so several calls in one "
            "message cannot be verified")


def _not_inferable(name: str, why: str, turns: list[Turn], chat_template: str | dict) -> str:
    if why != "not written":
        return f"`{name}` is left out: {why}; {BY_HAND[name]}."
    try:
        sources = chat_template.values() if isinstance(chat_template, dict) else [chat_template]
        reads = any(analyse_fields(s).reads(name) for s in sources)
    except Exception:  # noqa: BLE001 - a template that does not parse cannot say
        reads = True
    probed = any(name in t.probe.message for t in turns)
    if not probed:
        return f"No probe with `{name}` could be rendered, so its delimiters cannot be seen: {BY_HAND[name]}."
    if not reads:
        return f"The chat template never renders `{name}` in history, so its delimiters cannot be seen: {BY_HAND[name]}."
    return (f"The chat template reads `{name}` but never writes it into an assistant turn in history, so its "
            f"delimiters cannot be seen: {BY_HAND[name]}.")  # fmt: skip


def describe(name: str, spec: dict, implicit: bool) -> str:
    """One sentence on what a drafted field is."""
    parts = []
    if "open" in spec:
        parts.append(f"opens at {_quote(spec['open'])}")
    elif "open_pattern" in spec:
        parts.append(f"opens at the pattern {_quote(spec['open_pattern'])}")
    elif implicit:
        parts.append("has no opening text (it takes the text no other field claims)")
    if "close" in spec:
        parts.append(f"closes at {_quote(spec['close'])}")
    if spec.get("content") == "json":
        parts.append("is parsed as JSON" + (", one list of calls" if spec.get("transform_each") else ", one call each"))
    elif spec.get("content") == "xml-inline":
        parts.append("reads the arguments one tag each (xml-inline)")
    return f"`{name}` " + ", ".join(parts) + "."


def _quote(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _probes(phrases: Any) -> str:
    """“the probe “a call” (tools offered)”, “the probes “a call” (no tools), … and 2 more”."""
    phrases = list(dict.fromkeys(phrases))
    listed = ", ".join(phrases[:3]) + (f" and {len(phrases) - 3} more" if len(phrases) > 3 else "")
    return f"the probe{'s' if len(phrases) > 1 else ''} {listed}"


def _bounded(timeout: float, **kwargs: Any) -> Draft:
    draft, problem = bounded_or_why(draft_response_template, kwargs, timeout, doing="Drafting", long=True,
                                    hint="Look for nested loops over large ranges in the chat template.")
    if problem is None:
        return draft
    return Draft(None, [FieldReport(n, "not_inferable", problem.message) for n in FIELDS], diagnostics=[problem])
