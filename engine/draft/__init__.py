"""Draft a response template from a chat template.

The chat template already says how an assistant turn looks: it renders the reasoning, tool calls
and content of assistant messages in history. The draft probes it with messages carrying a unique
sentinel in each field (engine.draft.probes), finds where each went (locate), reads the delimiters
around them (delimiters, build) and verifies the result by parsing every probe back with
transformers and running the round-trip and streaming checks (verify). It never invents: a field
the template does not show is left out, with why and what the author can do.

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
from ..sandbox import bounded_or_why
from .build import build
from .locate import locate
from .probes import FIELDS, Failure, Turn, render_turns
from .verify import Outcome, probe_cases, run_probe_checks, verify_turn

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
        draft.diagnostics.append(Diagnostic(
            "error", f"The chat template renders none of the probe conversations: {failures[0].message if failures else 'no probe'}",
            "chat_template", hint="Fix the chat template first (its editor shows where).",
        ))  # fmt: skip
        draft.fields = [FieldReport(name, "not_inferable", "The chat template does not render.") for name in FIELDS]
        draft.seconds = time.perf_counter() - started
        return draft
    missing: dict[str, str] = {}
    lost: dict[str, list[str]] = {}
    for turn in turns:
        located = locate(turn)
        turn.spans = located.spans
        for name, why in located.missing.items():
            missing.setdefault(name, why)
        if located.lost_calls and len(located.lost_calls) < len(turn.probe.message.get("tool_calls", [])):
            lost.setdefault("tool_calls", []).append(turn.probe.label)
    for prefilled in dict.fromkeys(t.prefilled for t in turns if t.prefilled):
        draft.diagnostics.append(Diagnostic(
            "info", f"The generation prompt ends with {prefilled!r}, which the chat template leaves out when it "
            "renders the reply into history: the draft reads each turn as the history writes it.",
            "chat_template", hint="A model writes after that text, so its output starts inside whatever it opens.",
        ))  # fmt: skip
    primary = [t for t in turns if t.probe.primary]
    built = build(primary, missing, stops)
    draft.response_template = built.spec
    drafted = set((built.spec or {}).get("fields", {}))
    outcomes = [verify_turn(built.spec, t, drafted, set(built.left_out)) for t in turns] if built.spec else []
    draft.fields = [
        _field_report(name, built, turns, failures, outcomes, lost, chat_template, (documented or {}).get(name))
        for name in FIELDS
    ]
    if built.spec and checks:
        unverified = {f.field: f.message for f in draft.fields if f.status != "verified"}
        try:
            draft.checks = run_probe_checks(chat_template, built.spec, probe_cases(turns, drafted), special_tokens,
                                            stops, {**unverified, **(documented or {})})  # fmt: skip
        except Exception as e:  # noqa: BLE001 - the draft stands without its checks; say why
            draft.diagnostics.append(Diagnostic("warning", f"The checks could not run on the draft: {e}", "response_template"))
    draft.seconds = time.perf_counter() - started
    return draft


def _field_report(name: str, built: Any, turns: list[Turn], failures: list[Failure], outcomes: list[Outcome],
                  lost: dict[str, list[str]], chat_template: str | dict, documented: str | None) -> FieldReport:  # fmt: skip
    notes = list(built.notes.get(name, []))
    if documented:
        notes.append(f"documented difference: {documented}")
    refused = [f for f in failures if name in f.probe.message]
    if refused:
        notes.append(f"the chat template refuses {_probes(f.probe.label for f in refused)}: {refused[0].message}")
    spills = sorted({o.turn.probe.label for o in outcomes if name in o.spilled})
    shown = sum(1 for t in turns if any(s.field == name for s in t.spans))
    if name in built.left_out or built.spec is None or name not in built.spec["fields"]:
        why = built.left_out.get(name, "not written")
        message = _not_inferable(name, why, turns, chat_template)
        if spills:
            notes.append(f"until it is written, its text lands in another field ({_probes(spills)})")
        return FieldReport(name, "not_inferable", message, notes, shown)
    unwritten = [t.probe.label for t in turns if name in t.probe.message and not any(s.field == name for s in t.spans)]
    if unwritten:
        notes.append(f"the template does not write it in {_probes(unwritten)}")
    if name in lost:
        notes.append(f"the template writes only some of the calls of a message ({_probes(lost[name])}), "
                     "so several calls in one message cannot be verified")  # fmt: skip
    bad = [(o.turn.probe.label, o.failed[name]) for o in outcomes if name in o.failed]
    described = describe(name, built.spec["fields"][name], name == built.implicit)
    if bad:
        first = "; ".join(f"{label}: {why}" for label, why in bad[:3])
        more = f" (and {len(bad) - 3} more)" if len(bad) > 3 else ""
        return FieldReport(name, "unverified", f"{described} It does not parse back in {len(bad)} of {shown} probes: {first}{more}.", notes, shown)
    return FieldReport(name, "verified", f"{described} Parsed back exactly in all {shown} probes that show it.", notes, shown)


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


def _probes(labels: Any) -> str:
    labels = list(dict.fromkeys(labels))
    return ", ".join(labels[:3]) + (f" and {len(labels) - 3} more" if len(labels) > 3 else "")


def _bounded(timeout: float, **kwargs: Any) -> Draft:
    draft, problem = bounded_or_why(draft_response_template, kwargs, timeout, doing="Drafting", long=True,
                                    hint="Look for nested loops over large ranges in the chat template.")
    if problem is None:
        return draft
    return Draft(None, [FieldReport(n, "not_inferable", problem.message) for n in FIELDS], diagnostics=[problem])
