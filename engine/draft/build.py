"""Assemble a response template from the delimiters read off the probe turns: each field's open and
close, the content parser and transform of tool calls, the implicit field and the start anchor.
Every field the turns do not show is left out, with why."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import regex

from .delimiters import NAME, Delimiter, Occurrence, choose_close, choose_open, occurrences, start_anchor
from .locate import Span
from .probes import FIELDS, Turn

_KEY = regex.compile(r"\w+")
# The order keys are written in (the presets' order: delimiters, repetition, then parsing).
_KEY_ORDER = ["open", "open_pattern", "close", "close_pattern", "repeats", "join", "content", "content_args",
              "transform_each", "transform"]


@dataclass
class Built:
    """The drafted spec (None when no field could be drafted), and per field how it was read or why
    it was left out."""

    spec: dict | None
    notes: dict[str, list[str]] = field(default_factory=dict)
    left_out: dict[str, str] = field(default_factory=dict)
    implicit: str | None = None


def build(turns: list[Turn], missing: dict[str, str]) -> Built:
    """The draft from the primary turns. `missing` holds why each field the turns never show is absent."""
    built = Built(None, {name: [] for name in FIELDS})
    found = occurrences(turns)
    for name in FIELDS:
        if name not in found:
            built.left_out[name] = missing.get(name, "not written")
    closes = {name: choose_close(found[name]) for name in found}
    calls = _call_shape(found.get("tool_calls", []), built)
    opens: dict[str, Delimiter | None] = {}
    for name in found:
        if name == "tool_calls" and calls is None:
            continue
        named = name == "tool_calls" and calls is not None and calls.name_at is not None
        opens[name] = choose_open(name, found[name], closes, turns, named)
        if named and opens[name] is None:
            built.left_out[name] = "the call's name is written before its body, but no text around it marks where a call starts"
    _implicit(found, opens, calls, built)
    fields: dict[str, dict] = {}
    for name in FIELDS:
        if name not in opens or name in built.left_out:
            continue
        spec: dict = {}
        if (opened := opens[name]) is not None:
            key = "open" if opened.literal else "open_pattern"
            spec[key] = opened.text if opened.literal else opened.pattern(_name_class(opened, calls))
        if closes.get(name):
            spec["close"] = closes[name]
        if name == "tool_calls":
            assert calls is not None
            spec.update(_call_parser(calls, built))
        else:
            spec["content"] = "text"
        fields[name] = spec
    for name, spec in fields.items():
        fields[name] = {k: spec[k] for k in sorted(spec, key=_KEY_ORDER.index)}
    if built.implicit and len(fields) > 1:
        # Text around other regions may come in several stretches (the newline between two calls):
        # join them, or a later stretch would replace the text before it.
        fields[built.implicit] = {**fields[built.implicit], "repeats": True, "join": ""}
        fields[built.implicit] = {k: fields[built.implicit][k] for k in sorted(fields[built.implicit], key=_KEY_ORDER.index)}
    if fields:
        anchors = start_anchor(turns, [o for n, o in opens.items() if o is not None and n in fields])
        spec_anchor: dict = {"start_anchor": anchors[0] if len(anchors) == 1 else anchors} if anchors else {}
        if not anchors:
            built.notes.setdefault("content", []).append("no text marks where the model's turn starts in the prompt")
        built.spec = {"version": 1, "defaults": {"role": "assistant"}, **spec_anchor, "fields": fields}
    return built


@dataclass
class CallShape:
    """How the template writes tool calls: one JSON value per call, or one list of calls; where the
    name and the arguments are in it (paths), or the name before it (`name_at`)."""

    listed: bool
    name_path: tuple | None
    arguments_path: tuple
    name_at: int | None
    keys: tuple[str, ...]
    arguments_as_string: bool
    id_path: tuple | None = None

    @property
    def first_key(self) -> str | None:
        return self.keys[0] if self.keys else None


def _call_shape(found: list[Occurrence], built: Built) -> CallShape | None:
    if not found:
        return None
    shapes = Counter((s.listed, s.name_path, s.arguments_path, s.name_at is not None) for s in (o.span for o in found))
    (listed, name_path, arguments_path, named), count = shapes.most_common(1)[0]
    span: Span = next(o.span for o in found if (o.span.listed, o.span.name_path, o.span.arguments_path, o.span.name_at is not None) == (listed, name_path, arguments_path, named))
    if count < len(found):
        built.notes["tool_calls"].append("the template writes calls in more than one shape; the draft follows the most common one")
    if name_path is None and not named:
        built.left_out["tool_calls"] = "the calls' arguments are written, but not the function's name"
        return None
    id_path = span.id_path if span.id_path and all(isinstance(k, str) and _KEY.fullmatch(k) for k in span.id_path) else None
    for path in (name_path or ()), arguments_path:
        if any(not isinstance(k, str) or not _KEY.fullmatch(k) for k in path):
            built.left_out["tool_calls"] = f"the call is written as JSON, but a transform cannot reach the key path {list(path)}"
            return None
    value = span.value[0] if listed and span.value else span.value
    keys = tuple(value) if isinstance(value, dict) else ()
    return CallShape(listed, name_path, arguments_path, span.name_at, keys, span.arguments_as_string, id_path)


def _implicit(found: dict[str, list[Occurrence]], opens: dict[str, Delimiter | None], calls: CallShape | None,
              built: Built) -> None:  # fmt: skip
    """At most one field may have no open: it takes the text no other region claims."""
    openless = [name for name in FIELDS if name in opens and opens[name] is None and name not in built.left_out]
    if "tool_calls" in openless and calls is not None and calls.first_key and len(openless) > 1:
        # The calls are written with nothing before them (Llama 3.1's bare JSON): open where the JSON
        # starts, without consuming it.
        bracket = r"\[\s*\{" if calls.listed else r"\{"
        opens["tool_calls"] = Delimiter("", raw=f"(?={bracket}\\s*\"{regex.escape(calls.first_key)}\"\\s*:)")
        built.notes["tool_calls"].append(
            f"nothing marks where a call starts, so the field opens where a JSON value starting with "
            f"\"{calls.first_key}\" begins (a lookahead, which some other regex engines lack)"
        )
        openless.remove("tool_calls")
    if not openless:
        return
    keep = "content" if "content" in openless else openless[0]
    built.implicit = keep
    for name in openless:
        if name != keep:
            built.left_out[name] = f"nothing marks where it starts (like {keep}, it has no opening text), so the two cannot be told apart"


def _name_class(opened: Delimiter, calls: CallShape | None) -> str:
    """The characters a call's name may have: anything up to the text that follows it in the open."""
    if NAME not in opened.text:
        return r"[^\s<]+"
    after = opened.text[opened.text.index(NAME) + 1 : opened.text.index(NAME) + 2] or "{"
    return r"[^\s" + regex.escape(after) + "]+" if not after.isspace() else r"[^\s]+"


def _call_parser(calls: CallShape, built: Built) -> dict:
    """The content parser and transform that turn a call body into the standard shape."""

    def placeholder(root: str | None, path: tuple) -> str:
        return "{" + ".".join(([root] if root else []) + list(path)) + "}"

    if calls.name_at is not None:
        name = "{name}"
        arguments = placeholder("content", calls.arguments_path)
    elif calls.listed:
        name = placeholder(None, calls.name_path or ())
        arguments = placeholder(None, calls.arguments_path)
    else:
        name = placeholder("content", calls.name_path or ())
        arguments = placeholder("content", calls.arguments_path)
    if calls.arguments_as_string:
        built.notes["tool_calls"].append("the template writes arguments as a JSON string, so they parse back as a string")
    function: dict | str = {"name": name, "arguments": arguments}
    if function == {"name": "{content.name}", "arguments": "{content.arguments}"} and set(calls.keys) == {"name", "arguments"}:
        function = "{content}"
    transform: dict = {"type": "function", "function": function}
    if calls.id_path is not None:
        # The template writes the call's id, and the model writes it back (Mistral's templates insist on it).
        transform = {"type": "function", "id": placeholder(None if calls.listed else "content", calls.id_path),
                     "function": function}  # fmt: skip
    spec = {"content": "json", "transform": transform}
    if calls.listed:
        spec["transform_each"] = True
    else:
        spec["repeats"] = True
    return spec
