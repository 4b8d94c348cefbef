"""Whether a drafted response template reads the probes back: every probe turn parsed with
transformers' `parse_response` (the prompt as prefix, the probe's tools for typing) and compared with
the message the turn was rendered from, field by field (the draft then runs the round-trip and
streaming checks on the probe conversations: `engine.draft.verify`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from transformers.utils.chat_parsing import parse_response
from transformers.utils.chat_parsing.response_templates import ResponseTemplate, load_response_template

from ..cases import normalise_message
from ..text import short
from .probes import MARKS, Turn


@dataclass
class Outcome:
    """One probe turn parsed with the draft: the fields that did not come back, each with why."""

    turn: Turn
    parsed: dict | None
    failed: dict[str, str] = field(default_factory=dict)
    # Fields left out of the draft whose text this turn parses into another field.
    spilled: dict[str, str] = field(default_factory=dict)


def expected_message(turn: Turn, drafted: set[str]) -> dict:
    """The probe message as far as the turn shows it and the draft has fields for it: the fields
    found in the turn, and the calls the template wrote."""
    message: dict[str, Any] = {"role": "assistant"}
    for span in turn.spans:
        if span.field not in drafted:
            continue
        if span.field == "tool_calls":
            message.setdefault("tool_calls", [])
            message["tool_calls"] += [turn.message["tool_calls"][i] for i in span.calls]
        else:
            message[span.field] = turn.message[span.field]
    return message


def verify_turn(spec: dict | ResponseTemplate, turn: Turn, drafted: set[str], left_out: set[str]) -> Outcome:
    try:
        parsed = parse_response(turn.output, spec, prefix=turn.prompt, tools=turn.probe.context.tools)
    except Exception as e:  # noqa: BLE001 - the parser's message is the finding
        problem = f"does not parse: {type(e).__name__}: {short(str(e), 160)}"
        return Outcome(turn, None, {name: problem for name in _fields_in(turn) if name in drafted})
    expected = normalise_message(expected_message(turn, drafted))
    got = normalise_message(parsed)
    outcome = Outcome(turn, parsed)
    for name in sorted(set(expected) | set(got)):
        if expected.get(name) == got.get(name):
            continue
        value = got.get(name)
        spilled = [o for o in left_out if _holds(value, MARKS.get(o))]
        if spilled:
            for other in spilled:
                outcome.spilled[other] = f"its text is parsed into `{name}`"
            continue
        if name in expected:
            outcome.failed[name] = _difference(name, expected[name], value)
            continue
        owner = next((o for o in drafted if _holds(value, MARKS.get(o))), None)
        if owner is not None and owner != name:
            outcome.failed[owner] = f"its text comes back in `{name}`"
        else:
            outcome.failed[name] = f"takes text that belongs to no field: {_show(value)}"
    return outcome


def outcomes_of(spec: dict | None, turns: list[Turn], left_out: dict[str, str] | set[str]) -> list[Outcome]:
    """Every turn parsed with `spec` (none without a spec)."""
    if not spec:
        return []
    drafted = set(spec.get("fields", {}))
    try:
        compiled: dict | ResponseTemplate = load_response_template(spec)  # once, not per turn
    except Exception:  # noqa: BLE001 - each turn then says why it does not parse
        compiled = spec
    return [verify_turn(compiled, t, drafted, set(left_out)) for t in turns]


def _difference(name: str, expected: Any, got: Any) -> str:
    """How a field comes back wrong; for calls, the first argument (or name) that differs."""
    if got is None:
        return "does not come back"
    if name == "tool_calls" and isinstance(got, list) and isinstance(expected, list):
        if len(got) != len(expected):
            return f"comes back as {len(got)} call(s) instead of {len(expected)}"
        for want, have in zip(expected, got):
            if not isinstance(have, dict) or want.get("name") != have.get("name"):
                return f"a call comes back as {_show(have)}"
            arguments = have.get("arguments")
            if not isinstance(arguments, dict):
                return f"the arguments of {want['name']} come back as {_show(arguments)}"
            for key, value in want["arguments"].items():
                if arguments.get(key) != value:
                    return f"argument `{key}` comes back as {_show(arguments.get(key))} instead of {_show(value)}"
    return f"comes back as {_show(got)}"


def _fields_in(turn: Turn) -> set[str]:
    return {span.field for span in turn.spans}


def _holds(value: Any, sentinel: str | None) -> bool:
    if sentinel is None or value is None:
        return False
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return sentinel in text


def _show(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return repr(short(text, 120))
