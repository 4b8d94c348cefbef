"""What people type, checked before anything else reads it: size, nesting, and text that is not
valid Unicode. Each problem becomes a diagnostic at its line and column, never an exception.

Why these three: a JSON value nested a thousand levels deep loads fine but then exhausts Python's
recursion limit in whatever walks it (copying, rendering, the UI's serialiser); a lone surrogate
(`"\\ud800"` in JSON, or a half emoji from a script) is a valid Python string that no UTF-8
encoder accepts, so it breaks every view that shows it; and size bounds the time of everything.
"""

from __future__ import annotations

import json
import re
from typing import Any

from . import limits
from .diagnostics import Diagnostic, Source, json_error, line_col, line_text

_SURROGATE = re.compile(r"[\ud800-\udfff]")
_ESCAPE = re.compile(r"\\(u[0-9a-fA-F]{4}|.)", re.DOTALL)


def check_text(text: str, source: Source, what: str, max_chars: int) -> list[Diagnostic]:
    """Problems with a text a person typed (a template, an output): too long, or holding a lone
    surrogate (at its line and column)."""
    if not isinstance(text, str):
        return [Diagnostic("error", f"The {what} must be text, got {type(text).__name__}.", source)]
    if len(text) > max_chars:
        return [Diagnostic("error", f"Too long ({what}): {len(text):,} characters, over the {max_chars:,} limit.", source,
                           hint="Real ones are far smaller; check that the right text was pasted.")]
    found = _SURROGATE.search(text)
    if found:
        return [_surrogate_at(text, found.start(), source, what)]
    return []


def load_json(text: str, source: Source, what: str, max_chars: int = limits.MAX_CASE_CHARS,
              label: str | None = None) -> tuple[Any, list[Diagnostic]]:
    """Parse JSON a person typed. Returns (value, []) or (None, [diagnostic]): a syntax error at
    its line and column (the message starts with `label`, default "<what>: invalid JSON"), too
    long, nested too deeply, or holding a lone surrogate."""
    problems = check_text(text, source, what, max_chars)
    if problems:
        return None, problems
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        return None, [json_error(text, e, source, label or f"{what}: invalid JSON")]
    except RecursionError:
        return None, [too_deep(source, what, text)]
    problems = check_value(value, source, what, text)
    return (None, problems) if problems else (value, [])


def check_value(value: Any, source: Source, what: str, text: str | None = None) -> list[Diagnostic]:
    """Problems with JSON-like data (from a file, a share link, an API call): nested deeper than
    `limits.MAX_JSON_DEPTH`, or a string holding a lone surrogate. `text`, when given, is the JSON
    it came from, to place a surrogate at its line and column."""
    if depth(value) > limits.MAX_JSON_DEPTH:
        return [too_deep(source, what, text)]
    path = surrogate_path(value)
    if path is None:
        return []
    if text is not None and (offset := _escaped_surrogate(text)) is not None:
        return [_surrogate_at(text, offset, source, what)]
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")
    return [Diagnostic("error", f"Lone surrogate in the {what}{f' (at {where})' if where else ''}: it is not valid "
                       "Unicode, so it cannot be encoded as UTF-8 (or tokenized).", source, hint=_SURROGATE_HINT)]


def too_deep(source: Source, what: str, text: str | None = None) -> Diagnostic:
    """Nesting over the limit; at the bracket that goes past it when the JSON `text` is given."""
    line = column = snippet = None
    if text is not None and (offset := _too_deep_at(text)) is not None:
        line, column = line_col(text, offset)
        snippet = line_text(text, line)
        snippet = printable(snippet[:200]) if snippet is not None else None
    return Diagnostic("error", f"Nested too deeply ({what}): more than {limits.MAX_JSON_DEPTH} levels of lists and "
                      "objects.", source, line=line, column=column, snippet=snippet,
                      hint="Real messages, tools and templates nest a few levels; check for a runaway generator.")


def _too_deep_at(text: str) -> int | None:
    """Offset of the first `[` or `{` (outside strings) that opens level MAX_JSON_DEPTH + 1."""
    level, in_string, escaped = 0, False, False
    for offset, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            level += 1
            if level > limits.MAX_JSON_DEPTH:
                return offset
        elif char in "]}":
            level -= 1
    return None


def depth(value: Any, limit: int = limits.MAX_JSON_DEPTH) -> int:
    """How deeply lists and dicts nest in `value` (0 for a scalar); stops counting past `limit`.
    Iterative, so it works on values too deep for recursion."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        deepest = max(deepest, level)
        if deepest > limit:
            return deepest
        stack.extend((child, level + 1) for child in children)
    return deepest


def surrogate_path(value: Any) -> tuple | None:
    """The path (keys and indices) of the first string or key in `value` holding a lone surrogate."""
    stack: list[tuple[Any, tuple]] = [(value, ())]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return path
        elif isinstance(item, dict):
            for key, child in item.items():
                if isinstance(key, str) and _SURROGATE.search(key):
                    return (*path, key)
                stack.append((child, (*path, key)))
        elif isinstance(item, (list, tuple)):
            stack.extend((child, (*path, i)) for i, child in enumerate(item))
    return None


def _escaped_surrogate(text: str) -> int | None:
    """Offset of the first `\\uD8xx`-style escape in JSON text that is not half of a pair."""
    pending: tuple[int, int] | None = None  # (offset, end) of a high surrogate waiting for its low half
    for match in _ESCAPE.finditer(text):
        escape = match.group(1)
        code = int(escape[1:], 16) if escape[0] == "u" else None
        if pending is not None:
            if code is not None and 0xDC00 <= code <= 0xDFFF and match.start() == pending[1]:
                pending = None
                continue
            return pending[0]
        if code is not None and 0xD800 <= code <= 0xDBFF:
            pending = (match.start(), match.end())
        elif code is not None and 0xDC00 <= code <= 0xDFFF:
            return match.start()
    return pending[0] if pending else None


_SURROGATE_HINT = "Remove it, or write the whole character (both halves of a surrogate pair)."


def _surrogate_at(text: str, offset: int, source: Source, what: str) -> Diagnostic:
    line, column = line_col(text, offset)
    snippet = line_text(text, line)
    return Diagnostic("error", f"Lone surrogate in the {what}: it is not valid Unicode, so it cannot be encoded "
                      "as UTF-8 (or tokenized).", source, line=line, column=column,
                      snippet=printable(snippet) if snippet is not None else None, hint=_SURROGATE_HINT)


def printable_value(value: Any) -> Any:
    """JSON-like `value` with lone surrogates replaced by U+FFFD in every string and key (for data that
    must be shown or sent as UTF-8; check `depth` first: this recurses)."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {printable_value(k): printable_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [printable_value(v) for v in value]
    return value


def printable(text: str) -> str:
    """`text` with lone surrogates replaced by U+FFFD, so it can be encoded (for showing it)."""
    return _SURROGATE.sub("\ufffd", text)
