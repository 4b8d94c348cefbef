"""Response templates as the author edits them: JSON text in, the spec as data plus diagnostics out.

Validation is transformers' own (`load_response_template`); this module adds JSON syntax errors with
line and column, and points each of transformers' messages at the JSON line of the field it names.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import regex
from transformers.utils.chat_parsing.response_templates import ResponseTemplate, load_response_template

from . import limits, regex_bounds
from .diagnostics import Diagnostic, line_col, line_text
from .inputs import check_value, load_json

# The keys a field may have, longest first so "open_pattern" is found before "open" in a message.
FIELD_KEYS = sorted(
    [
        "open", "open_pattern", "close", "close_pattern", "content", "content_args",
        "repeats", "join", "optional", "transform", "transform_each",
    ],
    key=len,
    reverse=True,
)  # fmt: skip
TOP_KEYS = ["start_anchor_pattern", "start_anchor", "defaults", "version", "fields"]


@dataclass
class LoadedSpec:
    """A response template loaded from the editor: `spec` is the JSON data (None if it is not valid
    JSON), `template` transformers' compiled form (None if transformers rejects it)."""

    spec: dict | None
    template: ResponseTemplate | None
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.template is not None


def load_response_spec(text: str) -> LoadedSpec:
    """Parse and validate the response template JSON text. Never raises."""
    data, problems = load_json(text, "response_template", "response template", limits.MAX_RESPONSE_TEMPLATE_CHARS,
                               label="Invalid JSON")
    if problems:
        return LoadedSpec(None, None, problems)
    return compile_spec(data, text)


def compile_spec(data: Any, text: str | None = None) -> LoadedSpec:
    """Validate spec data with transformers. When the JSON `text` it came from is given, each
    message is located at the line and column of the key it names. Author regexes compile with
    bounds (engine.regex_bounds): a pattern too costly to compile is an error on its key."""
    problems = check_value(data, "response_template", "response template", text)
    if problems:
        return LoadedSpec(None, None, problems)
    try:
        template = load_response_template(data)
    except Exception as e:  # noqa: BLE001 - any rejection is the author's to see
        return LoadedSpec(data if isinstance(data, dict) else None, None, [_validation_error(str(e), data, text)])
    return LoadedSpec(data, template, _extra_checks(data, text))


def _validation_error(message: str, data: Any, text: str | None) -> Diagnostic:
    path = _path_for_message(message, data)
    line = column = None
    if text is not None and path is not None:
        offset = key_offsets(text).get(path)
        if offset is not None:
            line, column = line_col(text, offset)
    snippet = line_text(text, line) if text is not None else None
    return Diagnostic("error", message, "response_template", line=line, column=column, snippet=snippet)


def _path_for_message(message: str, data: Any) -> tuple | None:
    """The JSON path of the key a transformers validation message is about."""
    if not isinstance(data, dict):
        return None
    fields = data.get("fields") if isinstance(data.get("fields"), dict) else {}
    named = re.match(r"Field '([^']+)'", message)
    if named and named.group(1) in fields:
        name = named.group(1)
        spec = fields[name] if isinstance(fields[name], dict) else {}
        unknown = re.search(r"unknown keys \[(.*)\]", message)
        if unknown:
            for key in re.findall(r"'([^']+)'", unknown.group(1)):
                if key in spec:
                    return ("fields", name, key)
        for key in FIELD_KEYS:
            if key in spec and re.search(rf"(?<![\w]){key}(?![\w])", message):
                return ("fields", name, key)
        return ("fields", name)
    implicit = re.search(r"Found: (.+)$", message)
    if implicit and "At most one field" in message:
        second = implicit.group(1).split(", ")[-1]
        return ("fields", second) if second in fields else ("fields",)
    unknown = re.search(r"Unknown keys in response_template: \[(.*)\]", message)
    if unknown:
        keys = re.findall(r"'([^']+)'", unknown.group(1))
        return (keys[0],) if keys else None
    for key in TOP_KEYS:
        if key in data and key in message:
            return (key,)
    return None


def _extra_checks(data: dict, text: str | None) -> list[Diagnostic]:
    """Mistakes transformers only finds when a region closes mid-stream: a content_args regex that
    does not compile. Reported at load time so the author sees them while typing."""
    problems = []
    for name, spec in data.get("fields", {}).items():
        args = spec.get("content_args") if isinstance(spec, dict) else None
        pattern = args.get("tag_pattern") if isinstance(args, dict) else None
        if pattern is None:
            continue
        try:
            compiled = regex_bounds.compile(pattern, regex.DOTALL)
        except (regex.error, TypeError) as e:
            problems.append(_at(text, ("fields", name, "content_args", "tag_pattern"), f"Field '{name}': invalid tag_pattern regex: {e}"))
            continue
        if "key" not in compiled.groupindex:
            problems.append(_at(text, ("fields", name, "content_args", "tag_pattern"), f"Field '{name}': tag_pattern needs a named group 'key' (and usually 'value')."))
    return problems


def _at(text: str | None, path: tuple, message: str, severity: str = "error") -> Diagnostic:
    line = column = None
    if text is not None and (offset := key_offsets(text).get(path)) is not None:
        line, column = line_col(text, offset)
    return Diagnostic(severity, message, "response_template", line=line, column=column,  # type: ignore[arg-type]
                      snippet=line_text(text, line) if text else None)


def locate(text: str | None, path: tuple) -> tuple[int | None, int | None]:
    """1-based (line, column) of the key at `path` in the JSON text, or (None, None)."""
    if text is None or (offset := key_offsets(text).get(path)) is None:
        return None, None
    return line_col(text, offset)


def key_offsets(text: str) -> dict[tuple, int]:
    """Map each JSON path (tuple of keys and indices) to the character offset of its key (or of
    the array element), so diagnostics can point into the editor. Returns {} for invalid JSON."""
    return {path: start for path, (start, _) in key_spans(text).items()}


def key_spans(text: str) -> dict[tuple, tuple[int, int]]:
    """Map each JSON path to where it is written: from its key (or array element) to the end of
    its value. Returns {} for invalid JSON."""
    decoder = json.JSONDecoder()
    spans: dict[tuple, tuple[int, int]] = {}
    whitespace = re.compile(r"[ \t\n\r]*")

    def skip(pos: int) -> int:
        return whitespace.match(text, pos).end()

    def value(pos: int, path: tuple) -> int:
        pos = skip(pos)
        if text.startswith("{", pos):
            pos = skip(pos + 1)
            if text.startswith("}", pos):
                return pos + 1
            while True:
                key_start = pos
                key, pos = json.decoder.scanstring(text, pos + 1)
                pos = skip(pos)  # then ':'
                pos = value(pos + 1, path + (key,))
                spans[path + (key,)] = (key_start, pos)
                pos = skip(pos)
                if text.startswith(",", pos):
                    pos = skip(pos + 1)
                    continue
                return pos + 1
        if text.startswith("[", pos):
            pos = skip(pos + 1)
            if text.startswith("]", pos):
                return pos + 1
            index = 0
            while True:
                start = pos
                pos = value(pos, path + (index,))
                spans[path + (index,)] = (start, pos)
                pos = skip(pos)
                index += 1
                if text.startswith(",", pos):
                    pos = skip(pos + 1)
                    continue
                return pos + 1
        _, end = decoder.raw_decode(text, pos)
        return end

    try:
        value(0, ())
    except (ValueError, IndexError, RecursionError):
        return {}
    return spans


def literal_delimiters(template: ResponseTemplate) -> set[str]:
    """The literal open/close delimiters of a compiled response template (regex delimiters have
    none): text the prompt view boxes as the tokens they are."""
    found: set[str] = set()
    for spec in template.fields.values():
        for literals in (spec.open_literals, spec.close_literals):
            found.update(text.strip() for text in literals or () if text.strip())
    return found
