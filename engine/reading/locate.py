"""Find where each probe field went in a rendered turn: the text sentinels of content and reasoning,
and the body of each tool call (the JSON value holding its arguments, and where its name is)."""

from __future__ import annotations

import json

import regex
from dataclasses import dataclass, field
from typing import Any

from .text import boundary_suffix, escape
from .probes import ARGUMENTS, CALL_IDS, CALL_NAMES, SENTINELS, Turn

# A turn longer than this is not scanned for JSON values (a probe turn is a few hundred characters).
_MAX_SCAN = 20_000


@dataclass
class Span:
    """A field's body in `Turn.text`. For tool calls: the JSON value (`value`), the probe calls it holds
    (`calls`: one, or several when the template writes one list of calls), the path of the name and of
    the arguments inside the value (None when the name is written outside it, at `name_at`)."""

    field: str
    start: int
    end: int
    calls: tuple[int, ...] = ()
    value: Any = None
    name_path: tuple | None = None
    arguments_path: tuple | None = None
    arguments_as_string: bool = False
    name_at: int | None = None
    id_path: tuple | None = None
    id_at: int | None = None
    tag_pattern: str | None = None  # arguments written as tags (read with xml-inline)

    @property
    def listed(self) -> bool:
        """A list of calls in one body (each element a call)."""
        return isinstance(self.value, list)


@dataclass
class Located:
    """What one turn shows: the spans found, and for each field of the probe message that is not
    found, why (for the report)."""

    spans: list[Span] = field(default_factory=list)
    missing: dict[str, str] = field(default_factory=dict)
    lost_calls: list[int] = field(default_factory=list)


def locate(turn: Turn) -> Located:
    message = turn.probe.message
    text, offset = turn.text, turn.offset
    out = Located()
    for name, sentinel in SENTINELS.items():
        if name not in message:
            continue
        at = text.find(sentinel, offset)
        if at < 0:
            out.missing[name] = "not written"
        else:
            out.spans.append(Span(name, at, at + len(sentinel)))
    if message.get("tool_calls"):
        _locate_calls(turn, len(message["tool_calls"]), out)
    out.spans.sort(key=lambda s: s.start)
    return out


def _locate_calls(turn: Turn, count: int, out: Located) -> None:
    text, offset = turn.text, turn.offset
    taken = [(s.start, s.end) for s in out.spans]
    values = [v for v in json_values(text, offset) if not any(v[0] < e and s < v[1] for s, e in taken)]
    bodies: dict[tuple[int, int], Span] = {}
    tags: str | None = None
    after = offset
    for index in range(count):
        name, arguments = CALL_NAMES[index], ARGUMENTS[index]
        holding = [v for v in values if _path_to(v[2], lambda x: _same_arguments(x, arguments)) is not None]
        if text.find(name, offset) < 0:
            if holding:  # Kimi K2 Thinking writes the call's id where the name goes
                out.missing.setdefault("tool_calls", "the calls' arguments are written, but not the function's name")
            out.lost_calls.append(index)
            continue
        if holding:
            start, end, value = min(holding, key=lambda v: (v[0], -v[1]))
            span = bodies.setdefault((start, end), Span("tool_calls", start, end, value=value))
            span.calls += (index,)
            after = end
            continue
        tagged = _tagged(text, after, index, tags)
        if tagged is None:
            out.missing.setdefault("tool_calls", _why_no_json(text[offset:], arguments))
            out.lost_calls.append(index)
            continue
        tags, after = tagged.tag_pattern, tagged.end
        bodies[tagged.start, tagged.end] = tagged
    if len(out.lost_calls) == count:
        out.missing.setdefault("tool_calls", "not written")
    for span in bodies.values():
        if span.tag_pattern is None:
            _paths(span, text, offset)
        out.spans.append(span)


def _tagged(text: str, start: int, index: int, known: str | None) -> Span | None:
    """A call whose arguments are written one tag each (Qwen3-Coder's <parameter=KEY>value</parameter>,
    GLM's <arg_key>KEY</arg_key><arg_value>value</arg_value>): the tags as a span, read with the
    xml-inline parser by `tag_pattern` (derived from a call with several arguments, or `known`)."""
    name_at = text.find(CALL_NAMES[index], start)
    if name_at < 0:
        return None
    places = []
    position = name_at + len(CALL_NAMES[index])
    for key, value in ARGUMENTS[index].items():
        key_at = text.find(key, position)
        if key_at < 0:
            return None
        found = [(at, form) for form in _forms(value) if (at := text.find(form, key_at + len(key))) >= 0]
        if not found:
            return None
        value_at, form = min(found)
        places.append((key_at, key_at + len(key), value_at, value_at + len(form)))
        position = value_at + len(form)
    pattern = known or _tag_pattern(text, name_at + len(CALL_NAMES[index]), places)
    if pattern is None:
        return None
    tag = regex.compile(pattern, regex.DOTALL)
    first = tag.search(text, name_at)
    if first is None:
        return None
    end = first.end()
    while (more := tag.match(text, end + len(text[end:]) - len(text[end:].lstrip()))) is not None:
        end = more.end()
    return Span("tool_calls", first.start(), end, calls=(index,), arguments_path=(), name_at=name_at, tag_pattern=pattern)


def _tag_pattern(text: str, after_name: int, places: list[tuple[int, int, int, int]]) -> str | None:
    """The regex of one argument tag, from the text around the keys and values of a call with
    several arguments: what comes before each key, between key and value, and after each value."""
    if len(places) < 2:
        return None
    mids = {text[key_end:value_at].strip() for _, key_end, value_at, _ in places}
    between = {text[places[i][3] : places[i + 1][0]] for i in range(len(places) - 1)}
    if len(mids) != 1 or len(between) != 1:
        return None
    mid, gap = mids.pop(), between.pop()
    before_key = boundary_suffix([gap, text[after_name : places[0][0]]]).strip()
    after_value = gap[: len(gap) - len(gap.lstrip()) + len(gap.strip()) - len(before_key)].strip() if before_key else ""
    if not before_key or not after_value or not mid:
        return None
    flexible = lambda part: regex.sub(r"(?:\\n|\\t)+", r"\\s*", escape(part))  # noqa: E731
    return (f"{flexible(before_key)}(?P<key>[^\\s{escape(mid[0])}]+){flexible(mid)}\\s*(?P<value>.*?)\\s*"
            f"{flexible(after_value)}")  # fmt: skip


def _forms(value: Any) -> list[str]:
    """How a template may write an argument's value: as JSON, as text, as a Python literal."""
    forms = [json.dumps(value, ensure_ascii=False)]
    if isinstance(value, str):
        forms.append(value)
    elif isinstance(value, bool):
        forms.append(str(value))
    elif isinstance(value, (list, dict)):
        forms += [json.dumps(value, ensure_ascii=False, separators=(",", ":")), str(value)]
    return list(dict.fromkeys(forms))


def _paths(span: Span, text: str, offset: int) -> None:
    """Where the name and the arguments are in the body (for a list, in its first call)."""
    first = span.calls[0]
    item: Any = span.value
    prefix: tuple = ()
    if span.listed:
        position = next((i for i, v in enumerate(span.value) if _path_to(v, lambda x: _same_arguments(x, ARGUMENTS[first])) is not None), 0)
        item = span.value[position] if span.value else None
    arguments = _path_to(item, lambda x: _same_arguments(x, ARGUMENTS[first]))
    span.arguments_path = prefix + (arguments or ())
    span.arguments_as_string = isinstance(_get(item, arguments or ()), str)
    span.name_path = _path_to(item, lambda x: x == CALL_NAMES[first])
    span.id_path = _path_to(item, lambda x: x == CALL_IDS[first])
    if not span.listed:
        # Written before the body instead (gpt-oss's recipient, Mistral's [TOOL_CALLS]NAME[CALL_ID]ID[ARGS]).
        if span.name_path is None:
            at = text.rfind(CALL_NAMES[first], offset, span.start)
            span.name_at = at if at >= 0 else None
        if span.id_path is None:
            at = text.rfind(CALL_IDS[first], offset, span.start)
            span.id_at = at if at >= 0 and span.name_at is not None and at > span.name_at else None


def json_values(text: str, offset: int) -> list[tuple[int, int, Any]]:
    """Every JSON object or array that starts in text[offset:], as (start, end, value)."""
    decoder = json.JSONDecoder()
    out = []
    limit = min(len(text), offset + _MAX_SCAN)
    for position in range(offset, limit):
        if text[position] not in "{[":
            continue
        try:
            value, end = decoder.raw_decode(text, position)
        except (ValueError, RecursionError):  # not JSON, or nested deeper than Python parses: not a call
            continue
        out.append((position, end, value))
    return out


def _same_arguments(value: Any, arguments: dict) -> bool:
    """`value` is the probe's arguments: as an object, or as a JSON string of one (compared as JSON,
    so that true is not 1)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return False
    return isinstance(value, dict) and _canonical(value) == _canonical(arguments)


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _path_to(value: Any, match: Any, path: tuple = ()) -> tuple | None:
    """The shortest path (keys and indices) to a part of `value` that `match`es."""
    queue = [(value, path)]
    while queue:
        current, at = queue.pop(0)
        if match(current):
            return at
        if isinstance(current, dict):
            queue += [(v, at + (k,)) for k, v in current.items()]
        elif isinstance(current, list):
            queue += [(v, at + (i,)) for i, v in enumerate(current)]
    return None


def _get(value: Any, path: tuple) -> Any:
    for key in path:
        value = value[key]
    return value


def _why_no_json(output: str, arguments: dict) -> str:
    """Why a call's arguments were not found as JSON."""
    first = next(iter(arguments))
    if f"'{first}'" in output or "True" in output:
        return "written as a Python dict (single quotes, True/False), which no content parser reads as JSON"
    if first in output:
        return "the arguments are not written as a JSON object (each is written on its own), which the draft cannot read yet"
    return "the arguments are not written"
