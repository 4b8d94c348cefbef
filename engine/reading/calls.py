"""How a chat template writes tool calls, and the content parser and transform that read them back
into the standard `{"type": "function", "function": {"name", "arguments"}}` shape."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import regex

from .delimiters import Occurrence

_KEY = regex.compile(r"\w+")


@dataclass
class CallShape:
    """One JSON value per call, or one list of calls (`listed`); where the name, the arguments and
    the id are in it (key paths), or whether the name and id are written before it instead; or the
    arguments as tags (`tag_pattern`, read with the xml-inline parser)."""

    listed: bool
    name_path: tuple | None
    arguments_path: tuple
    name_outside: bool
    keys: tuple[str, ...]
    arguments_as_string: bool = False
    id_path: tuple | None = None
    id_outside: bool = False
    tag_pattern: str | None = None

    @property
    def first_key(self) -> str | None:
        return self.keys[0] if self.keys else None


def call_shape(found: list[Occurrence], notes: list[str], left_out: dict[str, str]) -> CallShape | None:
    """The shape most calls are written in (None, with why in `left_out`, when it cannot be read back)."""
    def key(o: Occurrence) -> tuple:
        s = o.span
        return s.listed, s.name_path, s.arguments_path, s.name_at is not None, s.tag_pattern

    shapes = Counter(key(o) for o in found)
    best, count = shapes.most_common(1)[0]
    span = next(o.span for o in found if key(o) == best)
    if count < len(found):
        notes.append("the template writes calls in more than one shape; the draft follows the most common one")
    if span.name_path is None and span.name_at is None:
        left_out["tool_calls"] = "the calls' arguments are written, but not the function's name"
        return None
    for path in span.name_path or (), span.arguments_path or ():
        if any(not isinstance(k, str) or not _KEY.fullmatch(k) for k in path):
            left_out["tool_calls"] = f"the call is written as JSON, but a transform cannot reach the key path {list(path)}"
            return None
    value = span.value[0] if span.listed and span.value else span.value
    id_path = span.id_path if span.id_path and all(isinstance(k, str) and _KEY.fullmatch(k) for k in span.id_path) else None
    return CallShape(
        listed=span.listed,
        name_path=span.name_path,
        arguments_path=span.arguments_path or (),
        name_outside=span.name_at is not None,
        keys=tuple(value) if isinstance(value, dict) else (),
        arguments_as_string=span.arguments_as_string,
        id_path=id_path,
        id_outside=span.id_at is not None,
        tag_pattern=span.tag_pattern,
    )


def call_parser(calls: CallShape) -> dict:
    """The content parser and transform that turn a call body into the standard shape."""

    def placeholder(root: str | None, path: tuple) -> str:
        return "{" + ".".join(([root] if root else []) + list(path)) + "}"

    root = None if calls.listed else "content"
    name = "{name}" if calls.name_outside else placeholder(root, calls.name_path or ())
    arguments = placeholder(root, calls.arguments_path)
    function: dict | str = {"name": name, "arguments": arguments}
    if function == {"name": "{content.name}", "arguments": "{content.arguments}"} and set(calls.keys) == {"name", "arguments"}:
        function = "{content}"
    transform: dict = {"type": "function", "function": function}
    if calls.id_path is not None or calls.id_outside:
        # The template writes the call's id and the model writes it back (Mistral's templates insist on it).
        transform = {"type": "function", "id": "{id}" if calls.id_outside else placeholder(root, calls.id_path or ()),
                     "function": function}  # fmt: skip
    spec: dict = {"content": "json", "transform": transform}
    if calls.tag_pattern is not None:
        spec["content"] = "xml-inline"
        spec["content_args"] = {"tag_pattern": calls.tag_pattern,
                                "value_parser": {"name": "json", "args": {"allow_non_json": True}}}  # fmt: skip
    if calls.listed:
        spec["transform_each"] = True
    else:
        spec["repeats"] = True
    return spec


def notes_for(calls: CallShape) -> list[str]:
    out = []
    if calls.arguments_as_string:
        out.append("the template writes arguments as a JSON string, so they parse back as a string")
    if calls.tag_pattern is not None:
        out.append("arguments are written one tag each, read with the xml-inline parser; each value is "
                   "read as JSON where it is JSON, else kept as text (the tools' schemas type it back)")  # fmt: skip
    return out
