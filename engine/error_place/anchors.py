"""Tokens with their offsets, and the anchor token of each node on a line: what every placement
of an error ends with (a node's line and the columns of its anchor token)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

import jinja2
from jinja2 import nodes

from ..diagnostics import line_col


class Place(NamedTuple):
    """Where an error is: a 1-based line, and the columns of the offending token (`end` is the column
    just after it; None when the place is a point, such as where a missing `%}` belongs)."""

    line: int | None
    column: int | None = None
    end: int | None = None


def normalised(source: str) -> str:
    """The source with Jinja's newline normalisation (its offsets and lines count this text)."""
    return source.replace("\r\n", "\n").replace("\r", "\n")


def point(text: str, offset: int, length: int = 0) -> Place:
    """The place of `length` characters at `offset` of the normalised text."""
    line, column = line_col(text, offset)
    return Place(line, column, column + length if length else None)


def positioned(env: jinja2.Environment, source: str, offsets: list[int]) -> Iterator[tuple[int, str, str]]:
    """Jinja's raw tokens, recording each one's offset in the newline-normalised source."""
    text = normalised(source)
    cursor = 0
    for lineno, kind, value in env.lexer.tokeniter(source, None):
        start = cursor
        while not text.startswith(value, start) and start < len(text) and text[start].isspace():
            start += 1
        offsets.append(start)
        cursor = start + len(value)
        yield lineno, kind, value


def source_order(node: nodes.Node) -> Iterator[nodes.Node]:
    """Nodes in the order their anchor tokens appear in the source (Jinja's field order is not:
    `a if t else b` stores the test first, `x|f(y)` names f between x and y, `{% filter f %}` and
    `{% call(a) m() %}` store their body or call first)."""
    if isinstance(node, nodes.CondExpr):
        children: list = [node.expr1, node.test, node.expr2]
    elif isinstance(node, nodes.For):
        children = [node.target, node.iter, node.test, *node.body, *node.else_]
    elif isinstance(node, nodes.FilterBlock):
        children = [node.filter, *node.body]
    elif isinstance(node, nodes.CallBlock):
        children = [*node.args, *node.defaults, node.call, *node.body]
    elif isinstance(node, (nodes.Filter, nodes.Test, nodes.Getattr, nodes.Getitem)):
        inner = getattr(node, "node", None)
        yield from source_order(inner) if inner is not None else ()
        yield node
        for child in node.iter_child_nodes():
            if child is not inner:
                yield from source_order(child)
        return
    else:
        yield node
        children = list(node.iter_child_nodes())
    if isinstance(node, (nodes.CondExpr, nodes.For, nodes.FilterBlock, nodes.CallBlock)):
        yield node
    for child in children:
        if child is not None:
            yield from source_order(child)


def _nth_newline(text: str, n: int) -> int:
    """The offset of the `n`-th newline of `text` (1-based), or len(text) when it has fewer."""
    at = -1
    for _ in range(n):
        at = text.find("\n", at + 1)
        if at < 0:
            return len(text)
    return at


_TAG = ("{%", "{%-", "{%+")
# The keyword that opens each statement (a `{% generation %}` block is a call block).
_KEYWORDS: dict[type, tuple[str, ...]] = {
    nodes.For: ("for",), nodes.If: ("if", "elif"), nodes.Macro: ("macro",), nodes.CallBlock: ("call", "generation"),
    nodes.FilterBlock: ("filter",), nodes.Break: ("break",), nodes.Continue: ("continue",),
    nodes.Extends: ("extends",), nodes.Include: ("include",), nodes.Import: ("import",), nodes.FromImport: ("from",),
    nodes.With: ("with",), nodes.Assign: ("set",), nodes.AssignBlock: ("set",), nodes.Block: ("block",),
}  # fmt: skip


class _Token(NamedTuple):
    kind: str
    value: str
    column: int
    before: str  # the previous significant token's text
    after: str  # the next significant token's text

    @property
    def keyword_argument(self) -> bool:
        """`name=` inside a call's brackets (or a macro's parameter with a default)."""
        return self.kind == "name" and self.before in ("(", ",") and self.after == "="


class Anchors:
    """The columns of each node's anchor token on one line: `.attr`, `['key']`, a name, `|filter`,
    `is test`, a keyword argument's name, a block's name, a tag's keyword; a call is placed on what
    it calls, anything else on its first anchored part."""

    def __init__(self, env: jinja2.Environment, source: str, line: int, ast: nodes.Template):
        self.line = line
        offsets: list[int] = []
        raw = list(positioned(env, source, offsets))
        text = normalised(source)
        # The line's span, found once: counting newlines for every token would be quadratic on a
        # large template (seconds at the size limit, inside the render's time limit).
        start = 0 if line <= 1 else _nth_newline(text, line - 1) + 1
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        significant = [i for i, (_, kind, _) in enumerate(raw) if kind != "whitespace"]
        self.tokens = []
        for n, i in enumerate(significant):
            if start <= offsets[i] <= end:
                before = raw[significant[n - 1]][2] if n else ""
                after = raw[significant[n + 1]][2] if n + 1 < len(significant) else ""
                self.tokens.append(_Token(raw[i][1], raw[i][2], offsets[i] - start + 1, before, after))
        self.columns: dict[int, tuple[int, int]] = {}
        self.nodes: list[nodes.Node] = []  # the line's nodes, in source order
        used: dict[tuple, int] = {}
        for node in source_order(ast):
            if getattr(node, "lineno", None) != line:
                continue
            self.nodes.append(node)
            key = self._key(node)
            if key is None:
                continue
            n = used.get(key, 0)
            used[key] = n + 1
            matches = [t for t in self.tokens if self._matches(t, key)]
            if n < len(matches):
                self.columns[id(node)] = (matches[n].column, matches[n].column + len(matches[n].value))

    @staticmethod
    def _matches(token: _Token, key: tuple) -> bool:
        kind, values, befores, role = key
        if token.kind != kind:
            return False
        if kind == "string":
            return len(token.value) >= 2 and token.value[1:-1] in values
        if token.value not in values or (befores is not None and token.before not in befores):
            return False
        return role == "any" or (role == "keyword") == token.keyword_argument

    @staticmethod
    def _key(node: nodes.Node) -> tuple | None:
        """(token kind, its texts, the texts allowed before it, "keyword" / "not keyword" / "any")."""
        if isinstance(node, nodes.Getattr):
            return ("name", (node.attr,), (".",), "any")
        if isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Const) and isinstance(node.arg.value, str):
            return ("string", (node.arg.value,), None, "any")
        if isinstance(node, nodes.Name):
            # A name read is never the `key` of `key=value`; a stored name or parameter may look like one.
            return ("name", (node.name,), None, "not keyword" if node.ctx == "load" else "any")
        if isinstance(node, nodes.Keyword):
            return ("name", (node.key,), None, "keyword")
        if isinstance(node, nodes.Filter):
            return ("name", (node.name,), ("|", "filter"), "any")
        if isinstance(node, nodes.Test):
            return ("name", (node.name,), ("is", "not"), "any")
        if isinstance(node, nodes.Block):
            return ("name", (node.name,), ("block",), "any")
        keywords = _KEYWORDS.get(type(node))
        if keywords is not None:
            return ("name", keywords, _TAG, "any")
        return None

    def of(self, node: nodes.Node) -> tuple[int, int] | None:
        """(column, end) of the node's anchor token on this line, or None."""
        if id(node) in self.columns:
            return self.columns[id(node)]
        if isinstance(node, nodes.Call):
            return self.of(node.node)
        for child in source_order(node):
            if child is not node and id(child) in self.columns:
                return self.columns[id(child)]
        return None

    def place(self, node: nodes.Node) -> Place:
        found = self.of(node)
        return Place(self.line, *found) if found else Place(self.line)


def node_place(env: jinja2.Environment, source: str, ast: nodes.Template, node: nodes.Node) -> Place:
    """The line and columns of `node` (a node of `ast`, the parsed `source`)."""
    line = getattr(node, "lineno", None)
    if not isinstance(line, int):
        return Place(None)
    return Anchors(env, source, line, ast).place(node)
