"""Syntax errors (raised while lexing or parsing), placed on the token the author has to look at."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import jinja2
from jinja2.lexer import TOKEN_EOF, TokenStream
from jinja2.parser import Parser

from .anchors import Place, normalised, point, positioned

_OPENERS = frozenset({"if", "for", "macro", "call", "filter", "block", "generation", "raw", "with", "autoescape"})


# Parser failures raised once the parser has read past the offending token.
_ABOUT_THE_TOKEN_BEFORE = ("can't assign to", "non-default argument follows default argument")
# Lexer failures that name no offset: the construct left open is where the author has to look.
_OPENED_BY = {"Missing end of comment tag": "comment_begin", "Missing end of raw directive": "raw_begin"}


def syntax_error_place(env: jinja2.Environment, source: str, error: jinja2.TemplateSyntaxError) -> Place:
    """Where the author has to look for this syntax error (raised while lexing or parsing)."""
    text = normalised(source)
    message = error.message or ""
    at = re.search(r"unexpected char .* at (\d+)$", message)
    if at:  # the lexer names the offset itself
        return point(text, int(at.group(1)), 1)
    offsets: list[int] = []
    raw: list[tuple[int, str, str]] = []
    try:  # the lexer first, on its own: it can fail before the parser reads a token
        raw.extend(positioned(env, source, offsets))
    except jinja2.TemplateSyntaxError:
        return _lexer_failure(text, raw, offsets, message)
    made: dict[int, int] = {}  # id(wrapped token) -> index of the raw token it came from
    wrapping = [0]  # the raw token being wrapped
    wrap_failed: list[int] = []  # a token Jinja rejects as it wraps it (an invalid escape in a string)

    def raw_tokens() -> Iterator[tuple[int, str, str]]:
        for i, item in enumerate(raw):
            wrapping[0] = i
            yield item

    def wrapped() -> Iterator[Any]:
        try:
            for token in env.lexer.wrap(raw_tokens()):
                made[id(token)] = wrapping[0]
                yield token
        except jinja2.TemplateSyntaxError:
            wrap_failed.append(wrapping[0])
            raise

    parser = Parser(env, "")
    try:
        parser.stream = TokenStream(wrapped(), None, None)
        parser.parse()
    except jinja2.TemplateSyntaxError:
        pass
    except Exception:  # noqa: BLE001 - anything else: keep Jinja's line
        return Place(error.lineno)
    if wrap_failed:
        index = wrap_failed[0]
        return point(text, offsets[index], len(raw[index][2]))
    current = parser.stream.current
    if "Unexpected end of template" in message or current.type == TOKEN_EOF and "innermost block" in message:
        opened = _innermost_unclosed(raw)
        if opened is not None:
            return point(text, offsets[opened], len(raw[opened][2]))
    index = made.get(id(current))
    if index is None:  # the end of the template: just after the last token
        index = len(raw)
    if message.startswith(_ABOUT_THE_TOKEN_BEFORE) and index > 0:
        previous = _previous_significant(raw, index)
        if previous is not None:  # the parser has read past it: `{% set 1 = 2 %}` fails at `=`
            return point(text, offsets[previous], len(raw[previous][2]))
    if message.startswith("expected token 'end of") or index >= len(raw):
        previous = _previous_significant(raw, index)
        if previous is not None:
            return point(text, offsets[previous] + len(raw[previous][2]))
    if index < len(raw):
        return point(text, offsets[index], len(raw[index][2]))
    return Place(error.lineno)


def _lexer_failure(text: str, raw: list[tuple[int, str, str]], offsets: list[int], message: str) -> Place:
    """The lexer stopped: on the comment or raw block left open, else at the first character after
    the last token it read (an unbalanced bracket)."""
    opener = _OPENED_BY.get(message)
    if opener is not None:
        for i in range(len(raw) - 1, -1, -1):
            if raw[i][1] == opener:
                return point(text, offsets[i], len(raw[i][2]))
    offset = offsets[-1] + len(raw[-1][2]) if raw else 0
    while offset < len(text) and text[offset].isspace():
        offset += 1
    return point(text, offset, 1 if offset < len(text) else 0)


def _previous_significant(raw: list[tuple[int, str, str]], index: int) -> int | None:
    for i in range(min(index, len(raw)) - 1, -1, -1):
        if raw[i][1] not in ("whitespace", "comment_begin", "comment", "comment_end"):
            return i
    return None


def _innermost_unclosed(raw: list[tuple[int, str, str]]) -> int | None:
    """The raw token that opens the block opened last and never closed."""
    stack: list[int] = []
    for i, (_, kind, _value) in enumerate(raw):
        if kind != "block_begin":
            continue
        j = i + 1
        while j < len(raw) and raw[j][1] == "whitespace":
            j += 1
        if j >= len(raw) or raw[j][1] != "name":
            continue
        name = raw[j][2]
        if name.startswith("end") and stack:
            stack.pop()
        elif name in _OPENERS:
            stack.append(i)
        elif name == "set" and not _has_assignment(raw, j):
            stack.append(i)  # a block set: {% set x %}…{% endset %}
    return stack[-1] if stack else None


def _has_assignment(raw: list[tuple[int, str, str]], start: int) -> bool:
    for _, kind, value in raw[start:]:
        if kind == "block_end":
            return False
        if kind == "operator" and value == "=":
            return True
    return False
