"""The outputs the robustness check tries: model outputs varied the way models really vary them.

Two sources give the plain outputs, each with the message it must parse to:
- an author's pair: assistant messages rendered through the chat template's own history rendering
  (what the model was trained to write), with adversarial but valid arguments, 0, 1, 2 or 5 calls,
  reasoning on and off (`robustness_run.RenderedTurns`);
- a library format: its examples, with an argument value substituted in the spelling the example
  shows (a JSON string, a Python string, raw text between tags) and a call written again (`ExampleTurns`).
Then the text around the calls is varied as real outputs vary it (`around_calls`): text before,
between and after the calls, whitespace at each delimiter, the end token absent, a text the model
may leave out (an id). Every variant says which variation it is, so the check can demand only what
a format's models write."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field, replace
from typing import Any, Callable

from ..trace import trace_text

# Argument values that break parsers. Each string sits between letters (`a"b`), so a parser that trims
# a value's surrounding whitespace is not blamed for it; the smallest come first.
STRING_ATOMS = ('"', "'", "\\", "\n", "[", "]", "{", "}", "<", ">", "é", "中文", "🙂", "O'Brien", 'say "hi"', "C:\\dir\\n")
# Every atom in one value: what a shrink starts from when no atom alone breaks.
KITCHEN_SINK = 'say "hi" to O\'Brien [x] {y} (z) <t> a\\b, c:d=e; f\n\tg é 中文 🙂'
TYPED_VALUES: tuple[tuple[str, Any, Any], ...] = (
    ("an integer", "count", 2),
    ("a negative decimal", "ratio", -3.5),
    ("a boolean", "metric", True),
    ("null", "note", None),
    ("an array", "days", [1, 2]),
    ("a nested object", "options", {"unit": "celsius", "hours": [6, 12], "deep": {"x": None}}),
    ("an empty object", "extra", {}),
)
_SCHEMA = {"count": {"type": "integer"}, "ratio": {"type": "number"}, "metric": {"type": "boolean"},
           "note": {"type": ["string", "null"]}, "days": {"type": "array", "items": {"type": "integer"}},
           "options": {"type": "object"}, "extra": {"type": "object"}}  # fmt: skip
TEXT_BEFORE, TEXT_BETWEEN, TEXT_AFTER = "Let me check.", "And also:", "Anything else?"


@dataclass
class Variant:
    """One output to try: the variation it shows, the prompt it continues, the output, the message it
    must parse to and the tools (their schemas type the arguments)."""

    variation: str  # e.g. "values.strings", "text.after"
    what: str  # in words: "a string argument holding a quote"
    prompt: str
    output: str
    expected: dict
    tools: list | None = None
    size: int = field(default=0)
    value: Any = None  # the argument value varied (what a shrink makes smaller)
    fields: frozenset | None = None  # the fields compared (None: every field the check compares)

    def __post_init__(self) -> None:
        self.size = self.size or len(self.output)


def probe_tool(arguments: dict) -> dict:
    """The tool a probe call calls, its schema typing every argument it takes (a string by default)."""
    # Every property has a description: some templates print it unguarded (Command R+).
    properties = {key: {**_SCHEMA.get(key, {"type": "string"}), "description": f"The {key}."} for key in arguments} or \
        {"city": {"type": "string", "description": "The city."}}  # fmt: skip
    return {"type": "function", "function": {"name": "get_weather", "description": "Get the weather.",
            "parameters": {"type": "object", "properties": properties}}}  # fmt: skip


def call(arguments: dict, index: int = 0, with_id: bool = True) -> dict:
    out: dict = {"type": "function", "function": {"name": "get_weather", "arguments": arguments}}
    if with_id:
        out["id"] = f"call{index + 1:02d}abcd"[-9:]
    return out


# ----- a library format: its examples, values substituted ----------------------------------------


def _python_string(value: str) -> str:
    body = value.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n").replace("\t", "\\t")
    return f"'{body}'"


def _python_literal(value: Any) -> str:
    if isinstance(value, str):
        return _python_string(value)
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_python_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_python_string(k)}: {_python_literal(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


# How an example spells a string value, tried in order: the first found once in the output is how a
# new value of any type is spelled in its place.
_SPELLINGS: tuple[tuple[str, Callable[[str], str], Callable[[Any], str]], ...] = (
    ("json", lambda v: json.dumps(v, ensure_ascii=False), lambda v: json.dumps(v, ensure_ascii=False)),
    ("json-ascii", lambda v: json.dumps(v), lambda v: json.dumps(v)),
    ("python", _python_string, _python_literal),
    ("raw", lambda v: v, lambda v: v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)),
)


@dataclass
class Slot:
    """Where an example writes one string argument: the call, the key, the span and its spelling."""

    example: Any  # FormatExample
    call: int
    key: str
    start: int
    end: int
    spell: Callable[[Any], str]


def find_slot(example: Any) -> Slot | None:
    """The first string argument of the example's calls found in its output (its last occurrence)."""
    message = example.expected()
    for index, tool_call in enumerate(message.get("tool_calls") or []):
        arguments = (tool_call.get("function") or {}).get("arguments")
        if not isinstance(arguments, dict):
            continue
        for key, value in arguments.items():
            if not isinstance(value, str) or len(value) < 2:
                continue
            for name, spelled, spell in _SPELLINGS:
                text = spelled(value)
                if text in example.output:
                    start = example.output.rindex(text)  # the argument comes after any text that mentions it
                    if name == "raw" and (quote := _wrapper(example.output, start, start + len(text))):
                        # A string between quotes of the format's own (Gemma 4's <|"|>): other values go bare.
                        return Slot(example, index, key, start - len(quote), start + len(text) + len(quote),
                                    lambda v, q=quote: q + v + q if isinstance(v, str) else json.dumps(v, ensure_ascii=False))
                    return Slot(example, index, key, start, start + len(text), spell)
    return None


def _wrapper(output: str, start: int, end: int) -> str:
    """The same non-word text right before and right after a value (a string quote), if any."""
    for size in range(6, 0, -1):
        before, after = output[max(0, start - size) : start], output[end : end + size]
        if len(before) == size and before == after and not any(c.isalnum() or c.isspace() for c in before) and before not in ("=", ">"):
            return before
    return ""


def substituted(slot: Slot, value: Any, variation: str, what: str) -> Variant:
    """The example with the slot's value replaced by `value`, spelled as the example spells it; the
    tools type it as it is."""
    example = slot.example
    output = example.output[: slot.start] + slot.spell(value) + example.output[slot.end :]
    message = example.expected()
    function = message["tool_calls"][slot.call]["function"]
    function["arguments"][slot.key] = value
    schema = _value_schema(value)
    tools = _typed_tools(example.tool_list(), message, function["name"], slot.key, schema)
    return Variant(variation, what, example.prefix or "", output, message, tools)


def _value_schema(value: Any) -> dict:
    for name, kind in (("boolean", bool), ("integer", int), ("number", float), ("string", str), ("array", list), ("object", dict)):
        if isinstance(value, kind):
            return {"type": name}
    return {"type": ["string", "null"]}


def _typed_tools(tools: list | None, message: dict, name: str, key: str, schema: dict) -> list:
    """The example's tools (or tools made from its calls, every argument typed as its value), with
    `key` of tool `name` typed by `schema`."""
    tools = copy.deepcopy(tools) if tools else []
    known = {(t.get("function") or {}).get("name") for t in tools}
    for tool_call in message.get("tool_calls") or []:
        function = tool_call.get("function") or {}
        if function.get("name") not in known and isinstance(function.get("arguments"), dict):
            properties = {k: _value_schema(v) for k, v in function["arguments"].items()}
            tools.append({"type": "function", "function": {"name": function["name"], "parameters": {"type": "object", "properties": properties}}})
            known.add(function.get("name"))
    for tool in tools:
        function = tool.get("function") or {}
        if function.get("name") == name:
            function.setdefault("parameters", {"type": "object"}).setdefault("properties", {})[key] = schema
    return tools


# ----- the text around the calls -------------------------------------------------------------------


@dataclass
class Regions:
    """Where an output's tool-call regions are: (open start, close end, body end) each, every
    delimiter, and its last close when that ends the output (the end token)."""

    calls: list[tuple[int, int, int]]
    delimiters: list[tuple[int, int, str]]  # (start, end, "open" | "close") of every field
    end_token: tuple[int, int] | None


def regions(template: Any, variant: Variant, tool_field: str = "tool_calls") -> Regions:
    segments = trace_text(template, variant.output, variant.prompt, variant.tools).segments
    calls: list[list[int]] = []
    delimiters = []
    current: list[int] | None = None
    for segment in segments:
        if segment.kind in ("open", "close"):
            delimiters.append((segment.start, segment.end, segment.kind))
        if segment.field != tool_field or segment.kind in ("discarded", "pending"):
            current = None
            continue
        if segment.kind == "open" or current is None or current[1] != segment.start:
            current = [segment.start, segment.end, segment.end]
            calls.append(current)
        else:
            current[1] = segment.end
            if segment.kind != "close":
                current[2] = segment.end
        if segment.kind == "close":
            current = None  # the next segment of the field starts a new region
    last = segments[-1] if segments else None
    end = (last.start, last.end) if last is not None and last.kind == "close" and last.end == len(variant.output) and \
        last.field != tool_field else None  # fmt: skip
    return Regions([(c[0], c[1], c[2]) for c in calls], delimiters, end)


def _over_delimiters(delimiters: list[tuple[int, int, str]], at: int, backwards: bool = False) -> int:
    """`at` moved over the one delimiter that touches it (backwards: the one that ends where it is):
    a wrapper's; further back is another field's close or the turn's header."""
    for start, end, _ in delimiters:
        if backwards and end == at and start < at:
            return start
        if not backwards and start == at and end > at:
            return end
    return at


def _calls_end(text: str, call: tuple[int, int, int], turn_ends: list[str]) -> int:
    """Where the model's calls end: after the call's close, or before it when the close is what ends
    the turn (a call list that runs to `</s>` ends where its body does)."""
    closing = text[call[2] : call[1]]
    return call[2] if closing and any(closing.strip() == t.strip() for t in turn_ends if t.strip()) else call[1]


def _with_content(message: dict, before: str = "", after: str = "") -> dict:
    out = copy.deepcopy(message)
    text = " ".join(t for t in (before, (out.get("content") or "").strip(), after) if t)
    if text:
        out["content"] = text
    return out


def around_calls(template: Any, base: Variant, two_calls: Variant | None, end_tokens: list[str],
                 turn_ends: list[str] = (), wrap: tuple[str, str] = ("", "")) -> list[Variant]:  # fmt: skip
    """The text-level variations of a plain output with calls (and of one with two calls): text
    before, between and after the calls, a newline at each delimiter, the end token left out.
    `turn_ends`: texts that end the turn (a call region closed by one ends before it); `wrap`: the
    content field's own open and close, when text is written inside them (Solar's `<|content|>`)."""
    out: list[Variant] = []
    found = regions(template, base)
    text = base.output
    turn_ends = [*end_tokens, *turn_ends]
    if found.calls:
        start, end = found.calls[0][0], _calls_end(text, found.calls[-1], turn_ends)
        # A wrapper around the calls (DeepSeek's <｜tool▁calls▁begin｜>, Solar's <|tool_calls|>) is
        # the model's to write after its text: the text goes before the delimiters that lead up to
        # the first call, and after those that follow the last, unless one ends the turn.
        start = _over_delimiters(found.delimiters, start, backwards=True)
        if end == found.calls[-1][1]:
            end = _over_delimiters([d for d in found.delimiters if text[d[0]:d[1]].strip() not in turn_ends], end)
        if not (base.expected.get("content") or "").strip():
            out.append(replace(base, variation="text.before", what="text before the calls", size=0,
                               output=text[:start] + wrap[0] + TEXT_BEFORE + " " + wrap[1] + text[start:], expected=_with_content(base.expected, TEXT_BEFORE)))  # fmt: skip
        out.append(replace(base, variation="text.after", what="text after the calls", size=0,
                           output=text[:end] + wrap[0] + " " + TEXT_AFTER + wrap[1] + text[end:], expected=_with_content(base.expected, after=TEXT_AFTER)))  # fmt: skip
        for position, kind in ((start, "before the first call"), (end, "after the last call")):
            out.append(replace(base, variation="whitespace", what=f"a newline {kind}", size=0,
                               output=text[:position] + "\n" + text[position:]))  # fmt: skip
        for delimiter_start, delimiter_end, kind in found.delimiters:
            position = delimiter_end if kind == "open" else delimiter_start
            if start <= position <= end:
                at = "after an opening delimiter" if kind == "open" else "before a closing delimiter"
                out.append(replace(base, variation="whitespace", what=f"a newline {at} ({text[delimiter_start:delimiter_end]!r})",
                                   size=0, output=text[:position] + "\n" + text[position:]))  # fmt: skip
    if two_calls is not None:
        between = regions(template, two_calls).calls
        if len(between) >= 2:
            at = _calls_end(two_calls.output, between[0], turn_ends)
            out.append(replace(two_calls, variation="text.between", what="text between two calls", size=0,
                               output=two_calls.output[:at] + wrap[0] + "\n" + TEXT_BETWEEN + "\n" + wrap[1] + two_calls.output[at:],
                               expected=_with_content(two_calls.expected, after=TEXT_BETWEEN)))  # fmt: skip
            out.append(replace(two_calls, variation="whitespace", what="a blank line between two calls", size=0,
                               output=two_calls.output[:at] + "\n\n" + two_calls.output[at:]))  # fmt: skip
    for token in end_tokens or ([text[found.end_token[0]:found.end_token[1]]] if found.end_token else turn_ends):
        if token and text.endswith(token):
            out.append(replace(base, variation="end_token", what=f"the end token {token!r} left out (servers strip it)", size=0,
                               output=text[: -len(token)]))  # fmt: skip
            break
    return out


def repeated_calls(template: Any, two: Variant, count: int) -> Variant | None:
    """An output with two call regions, its first call (with what follows it up to the second)
    written `count - 1` times: the separator the model writes stays."""
    found = regions(template, two).calls
    calls = two.expected.get("tool_calls") or []
    if len(found) != 2 or len(calls) != 2:
        return None
    first, second = found[0][0], found[1][0]
    expected = copy.deepcopy(two.expected)
    expected["tool_calls"] = [copy.deepcopy(calls[0]) for _ in range(count - 1)] + [copy.deepcopy(calls[1])]
    output = two.output[:first] + two.output[first:second] * (count - 1) + two.output[second:]
    return replace(two, variation="calls.count", what=f"{count} calls", output=output, expected=expected, size=0)


def repeated_call(template: Any, base: Variant, count: int, separator: str) -> Variant | None:
    """The example's one call region written `count` times (a format whose calls repeat, a region each)."""
    found = regions(template, base).calls
    calls = base.expected.get("tool_calls") or []
    if len(found) != 1 or len(calls) != 1:
        return None
    start, end, _ = found[0]
    piece = base.output[start:end]
    expected = copy.deepcopy(base.expected)
    expected["tool_calls"] = [copy.deepcopy(calls[0]) for _ in range(count)]
    output = base.output[:start] + separator.join([piece] * count) + base.output[end:]
    return replace(base, variation="calls.count", what=f"{count} calls", output=output, expected=expected, size=0)


def repeated_in_list(template: Any, base: Variant, count: int) -> Variant | None:
    """The example's one call, the only item of a call list (`[{…}]`, `[f(…)]`), written `count`
    times in that list, comma-separated as lists are."""
    found = regions(template, base)
    calls = base.expected.get("tool_calls") or []
    if len(found.calls) != 1 or len(calls) != 1:
        return None
    start, _, body_end = found.calls[0]
    body_start = next((e for s, e, kind in found.delimiters if kind == "open" and s == start), start)
    body = base.output[body_start:body_end]
    inner = body.strip()
    if not (inner.startswith("[") and inner.endswith("]")):
        return None
    lead = body[: len(body) - len(body.lstrip())]
    items = ", ".join([inner[1:-1].strip()] * count)
    expected = copy.deepcopy(base.expected)
    expected["tool_calls"] = [copy.deepcopy(calls[0]) for _ in range(count)]
    output = base.output[:body_start] + lead + "[" + items + "]" + body[len(lead) + len(inner):] + base.output[body_end:]
    return replace(base, variation="calls.count", what=f"{count} calls in one list", output=output, expected=expected, size=0)


def respelled(base: Variant, replacements: tuple[tuple[str, str], ...]) -> Variant | None:
    """The output with texts around its calls in another spelling the model family writes (every
    occurrence of each); the message is the same. None when a text is not in the output."""
    output = base.output
    for text, written in replacements:
        if not text or text not in output:
            return None
        output = output.replace(text, written)
    what = " and ".join(f"{text!r} written as {written!r}" for text, written in replacements)
    return replace(base, variation="wrappers", what=what, output=output, size=0)


def without_text(base: Variant, text: str) -> Variant | None:
    """The output without a text the model may leave out (`{id}` stands for each call's id); the
    message then has no id."""
    output, expected = base.output, copy.deepcopy(base.expected)
    for tool_call in expected.get("tool_calls") or []:
        piece = text.replace("{id}", str(tool_call.get("id", "")))
        if "{id}" in text and "id" not in tool_call or piece not in output:
            return None
        output = output.replace(piece, "", 1)
        if "{id}" in text:
            tool_call.pop("id", None)
    if output == base.output:
        return None
    return replace(base, variation="optional", what=f"{text!r} left out", output=output, expected=expected, size=0)


def rewrapped(template: Any, base: Variant, wrapper: tuple[str, str]) -> Variant | None:
    """The output with its first call region's own open and close replaced by another wrapper the
    model family writes (Llama 4's <|python_start|>…<|python_end|> around a call list)."""
    found = regions(template, base)
    if not found.calls:
        return None
    start, end, body_end = found.calls[0]
    body_start = next((e for s, e, kind in found.delimiters if kind == "open" and s == start), start)
    text = base.output
    output = text[:start] + wrapper[0] + text[body_start:body_end] + wrapper[1] + text[end:]
    return replace(base, variation="wrappers", what=f"the calls in {wrapper[0] + '…' + wrapper[1]!r}", output=output, size=0)
