"""A chat template as Jinja itself sees it (never regex on the source): its AST, and its tokens with
exact positions, so every finding about the template gets a line and column.

The environment is transformers' own (`compile_template(...).environment`: sandboxed, with
trim_blocks and lstrip_blocks and the `{% generation %}` tag), so a template is lexed and parsed
exactly as `apply_chat_template` does."""

from __future__ import annotations

from collections import defaultdict
from functools import lru_cache
from typing import Any, NamedTuple

import jinja2
from jinja2 import nodes

from .transformers_compat import compile_template


class Token(NamedTuple):
    """A token from Jinja's lexer, with its position in the (newline-normalised) source."""

    kind: str
    value: str
    start: int
    end: int
    line: int
    column: int


def normalise_newlines(source: str) -> str:
    """Jinja's lexer works on the source with every newline as `\\n`; offsets are in that text."""
    return source.replace("\r\n", "\n").replace("\r", "\n")


def environment(source: str) -> jinja2.Environment:
    """transformers' Jinja environment for this template (raises TemplateSyntaxError if it does not compile)."""
    return compile_template(source).environment


@lru_cache(maxsize=16)
def parse(source: str) -> nodes.Template:
    """The template's AST, shared by the lints that only read it (do not modify it)."""
    return environment(source).parse(source)


def lex(source: str) -> list[Token]:
    """Every token of `source` with its offsets (a fresh list of the cached tokens)."""
    return list(_lex(source))


@lru_cache(maxsize=16)
def _lex(source: str) -> tuple[Token, ...]:
    """Every token of `source` with its offsets. Jinja's lexer reports raw token text but drops the
    whitespace that lstrip_blocks and `-` remove before a tag; that whitespace is skipped here, which
    is how each token is pinned to its exact position."""
    text = normalise_newlines(source)
    tokens: list[Token] = []
    cursor = 0
    line, line_start = 1, 0  # counted as the cursor moves: from the start for each token is quadratic
    for _, kind, value in environment(source).lexer.tokeniter(source, None):
        start = cursor
        while not text.startswith(value, start) and start < len(text) and text[start].isspace():
            start += 1
        if not text.startswith(value, start):
            break  # cannot happen for a template that lexes; stop rather than mis-locate
        newlines = text.count("\n", cursor, start)
        if newlines:
            line, line_start = line + newlines, text.rfind("\n", cursor, start) + 1
        tokens.append(Token(kind, value, start, start + len(value), line, start - line_start + 1))
        end = start + len(value)
        newlines = value.count("\n")
        if newlines:
            line, line_start = line + newlines, value.rfind("\n") + start + 1
        cursor = end
    return tuple(tokens)


class TokenIndex:
    """Finds the column of an AST node's token on its line. Jinja's AST has line numbers only, so a
    finding is pinned to the n-th matching token on that line (nodes are visited in source order)."""

    def __init__(self, tokens: list[Token]):
        self.by_line: dict[int, list[int]] = defaultdict(list)
        self.tokens = tokens
        for index, token in enumerate(tokens):
            self.by_line[token.line].append(index)
        self._used: dict[tuple, int] = defaultdict(int)

    def column(self, line: int, kind: str, value: str | None, after: str | None = None) -> int | None:
        """Column of the next unused token (kind, value) on `line` (value None: any); `after` requires
        the previous non-whitespace token to have that value (e.g. "." for an attribute)."""
        key = (line, kind, value, after)
        wanted = self._used[key]
        seen = 0
        for index in self.by_line.get(line, []):
            token = self.tokens[index]
            if token.kind != kind or (value is not None and token.value != value):
                continue
            if after is not None and self.previous(index).value != after:
                continue
            if seen == wanted:
                self._used[key] += 1
                return token.column
            seen += 1
        return None

    def string_column(self, line: int, text: str) -> int | None:
        """Column of a string literal whose value is `text` (either quote style)."""
        for quoted in (f"'{text}'", f'"{text}"'):
            column = self.column(line, "string", quoted)
            if column is not None:
                return column
        return None

    def previous(self, index: int) -> Token:
        index -= 1
        while index >= 0 and self.tokens[index].kind == "whitespace":
            index -= 1
        return self.tokens[index] if index >= 0 else Token("", "", 0, 0, 0, 0)

    def next(self, index: int) -> Token:
        index += 1
        while index < len(self.tokens) and self.tokens[index].kind == "whitespace":
            index += 1
        return self.tokens[index] if index < len(self.tokens) else Token("", "", 0, 0, 0, 0)


def block_tag_name(tokens: list[Token], begin: int) -> str:
    """The tag name of the block starting at token index `begin` (`for`, `if`, `endif`, …)."""
    for token in tokens[begin + 1 :]:
        if token.kind == "whitespace":
            continue
        return token.value if token.kind == "name" else ""
    return ""


def describe_node(node: Any) -> str:
    """A short source-like rendering of an expression for messages (`message.tool_calls`)."""
    if isinstance(node, nodes.Name):
        return node.name
    if isinstance(node, nodes.Getattr):
        return f"{describe_node(node.node)}.{node.attr}"
    if isinstance(node, nodes.Getitem):
        arg = node.arg.value if isinstance(node.arg, nodes.Const) else "…"
        return f"{describe_node(node.node)}[{arg!r}]"
    if isinstance(node, nodes.Filter):
        return f"{describe_node(node.node)}|{node.name}"
    if isinstance(node, nodes.Call):
        return f"{describe_node(node.node)}(…)"
    if isinstance(node, nodes.Dict):
        return "{…}"
    if isinstance(node, (nodes.List, nodes.Tuple)):
        return "[…]"
    if isinstance(node, nodes.Const):
        return repr(node.value)
    return "this expression"
