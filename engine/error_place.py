"""Where a Jinja error really is. Jinja reports a line only, and for a syntax error sometimes the
line after the broken one (`{{ x` without `}}` fails on the next token). On a one-line template (a
2,000-character DeepSeek template is one line) a line is no help at all, so:

- a **syntax error** is placed on the token the parser stopped at, found by parsing again with every
  token's offset recorded; when the parser expected the end of a tag, the place is just after the
  last good token (where `%}` or `}}` is missing); an unclosed block points at its opening tag;
- a **runtime error** is placed on the node that failed, found by rendering again with the nodes on
  the failing line instrumented (each records when its evaluation starts and ends, and whether it
  produced an undefined value): the node being evaluated when the error was raised, or, for an
  undefined value, the read that produced it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import jinja2
from jinja2 import nodes
from jinja2.lexer import TOKEN_EOF, TokenStream
from jinja2.parser import Parser
from jinja2.visitor import NodeTransformer

from .diagnostics import line_col

_OPENERS = frozenset({"if", "for", "macro", "call", "filter", "block", "generation", "raw", "with", "autoescape"})


def _positioned(env: jinja2.Environment, source: str, offsets: list[int]) -> Iterator[tuple[int, str, str]]:
    """Jinja's raw tokens, recording each one's offset in the newline-normalised source."""
    text = source.replace("\r\n", "\n").replace("\r", "\n")
    cursor = 0
    for lineno, kind, value in env.lexer.tokeniter(source, None):
        start = cursor
        while not text.startswith(value, start) and start < len(text) and text[start].isspace():
            start += 1
        offsets.append(start)
        cursor = start + len(value)
        yield lineno, kind, value


def syntax_error_place(env: jinja2.Environment, source: str, error: jinja2.TemplateSyntaxError) -> tuple[int | None, int | None]:
    """(line, column) where the author has to look for this syntax error."""
    text = source.replace("\r\n", "\n").replace("\r", "\n")
    message = error.message or ""
    at = re.search(r"unexpected char .* at (\d+)$", message)
    if at:  # the lexer names the offset itself
        return line_col(text, int(at.group(1)))
    offsets: list[int] = []
    raw: list[tuple[int, str, str]] = []
    made: dict[int, int] = {}  # id(wrapped token) -> index of the raw token it came from

    lexer_failed = []

    def raw_tokens() -> Iterator[tuple[int, str, str]]:
        try:
            for item in _positioned(env, source, offsets):
                raw.append(item)
                yield item
        except jinja2.TemplateSyntaxError:
            lexer_failed.append(True)
            raise

    def wrapped() -> Iterator[Any]:
        for token in env.lexer.wrap(raw_tokens()):
            made[id(token)] = len(raw) - 1
            kept.append(token)
            yield token

    kept: list[Any] = []
    parser = Parser(env, source)
    try:
        parser.stream = TokenStream(wrapped(), None, None)
        parser.parse()
    except jinja2.TemplateSyntaxError:
        pass
    except Exception:  # noqa: BLE001 - anything else: keep Jinja's line
        return error.lineno, None
    if lexer_failed:  # the lexer stopped: at the first character after the last token it read
        offset = offsets[-1] + len(raw[-1][2]) if raw else 0
        while offset < len(text) and text[offset].isspace():
            offset += 1
        return line_col(text, offset)
    current = parser.stream.current
    if "Unexpected end of template" in message or current.type == TOKEN_EOF and "innermost block" in message:
        opened = _innermost_unclosed(raw, offsets)
        if opened is not None:
            return line_col(text, opened)
    index = made.get(id(current))
    if index is None:  # the end of the template: just after the last token
        index = len(raw)
    if message.startswith("expected token 'end of") or index >= len(raw):
        previous = _previous_significant(raw, index)
        if previous is not None:
            return line_col(text, offsets[previous] + len(raw[previous][2]))
    if index < len(raw):
        return line_col(text, offsets[index])
    return error.lineno, None


def _previous_significant(raw: list[tuple[int, str, str]], index: int) -> int | None:
    for i in range(min(index, len(raw)) - 1, -1, -1):
        if raw[i][1] not in ("whitespace", "comment_begin", "comment", "comment_end"):
            return i
    return None


def _innermost_unclosed(raw: list[tuple[int, str, str]], offsets: list[int]) -> int | None:
    """Offset of the block tag opened last and never closed."""
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
    return offsets[stack[-1]] if stack else None


def _has_assignment(raw: list[tuple[int, str, str]], start: int) -> bool:
    for _, kind, value in raw[start:]:
        if kind == "block_end":
            return False
        if kind == "operator" and value == "=":
            return True
    return False


# ----- runtime errors -----------------------------------------------------------------------------

# Expression nodes that can fail, and so are instrumented on the failing line.
_WATCHED = (nodes.Getattr, nodes.Getitem, nodes.Name, nodes.Call, nodes.Filter, nodes.Test, nodes.BinExpr,
            nodes.UnaryExpr, nodes.Concat, nodes.Compare, nodes.CondExpr, nodes.List, nodes.Dict, nodes.Tuple)  # fmt: skip


def _source_order(node: nodes.Node) -> Iterator[nodes.Node]:
    """Nodes in the order their anchor tokens appear in the source (Jinja's field order is not:
    `a if t else b` stores the test first, `x|f(y)` names f between x and y)."""
    if isinstance(node, nodes.CondExpr):
        children: list = [node.expr1, node.test, node.expr2]
    elif isinstance(node, nodes.For):
        children = [node.target, node.iter, node.test, *node.body, *node.else_]
    elif isinstance(node, (nodes.Filter, nodes.Test, nodes.Getattr, nodes.Getitem)):
        inner = getattr(node, "node", None)
        yield from _source_order(inner) if inner is not None else ()
        yield node
        for child in node.iter_child_nodes():
            if child is not inner:
                yield from _source_order(child)
        return
    else:
        yield node
        children = list(node.iter_child_nodes())
    if isinstance(node, (nodes.CondExpr, nodes.For)):
        yield node
    for child in children:
        if child is not None:
            yield from _source_order(child)


def _nth_newline(text: str, n: int) -> int:
    """The offset of the `n`-th newline of `text` (1-based), or len(text) when it has fewer."""
    at = -1
    for _ in range(n):
        at = text.find("\n", at + 1)
        if at < 0:
            return len(text)
    return at


class _Columns:
    """The column of each node's anchor token on one line: `.attr`, `['key']`, a name, `|filter`,
    `is test`; a call is placed on what it calls, anything else on its first anchored part."""

    def __init__(self, env: jinja2.Environment, source: str, line: int, ast: nodes.Template):
        offsets: list[int] = []
        raw = list(_positioned(env, source, offsets))
        text = source.replace("\r\n", "\n").replace("\r", "\n")
        # The line's span, found once: counting newlines for every token would be quadratic on a
        # large template (seconds at the size limit, inside the render's time limit).
        start = 0 if line <= 1 else _nth_newline(text, line - 1) + 1
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        self.tokens = [(kind, value, offsets[i] - start + 1, self._before(raw, i)) for i, (_, kind, value) in enumerate(raw)
                       if kind != "whitespace" and start <= offsets[i] <= end]  # fmt: skip
        self.column: dict[int, int] = {}
        used: dict[tuple, int] = {}
        for node in _source_order(ast):
            if getattr(node, "lineno", None) != line:
                continue
            key = self._key(node)
            if key is None:
                continue
            n = used.get(key, 0)
            used[key] = n + 1
            matches = [t[2] for t in self.tokens if self._matches(t, key)]
            if n < len(matches):
                self.column[id(node)] = matches[n]

    @staticmethod
    def _matches(token: tuple, key: tuple) -> bool:
        kind, value, _, before = token
        if kind != key[0]:
            return False
        if kind == "string":
            return len(value) >= 2 and value[1:-1] == key[1]
        return value == key[1] and (key[2] is None or before in key[2])

    @staticmethod
    def _before(raw: list, i: int) -> str:
        j = i - 1
        while j >= 0 and raw[j][1] == "whitespace":
            j -= 1
        return raw[j][2] if j >= 0 else ""

    @staticmethod
    def _key(node: nodes.Node) -> tuple | None:
        if isinstance(node, nodes.Getattr):
            return ("name", node.attr, (".",))
        if isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Const) and isinstance(node.arg.value, str):
            return ("string", node.arg.value, None)
        if isinstance(node, nodes.Name) and node.ctx == "load":
            return ("name", node.name, None)
        if isinstance(node, nodes.Filter):
            return ("name", node.name, ("|",))
        if isinstance(node, nodes.Test):
            return ("name", node.name, ("is", "not"))
        return None

    def of(self, node: nodes.Node) -> int | None:
        if id(node) in self.column:
            return self.column[id(node)]
        if isinstance(node, nodes.Call):
            return self.of(node.node)
        for child in _source_order(node):
            if child is not node and id(child) in self.column:
                return self.column[id(child)]
        return None


class _Instrument(NodeTransformer):
    """Wraps every watched expression on one line as `_pg_leave(_pg_enter(k) and node, k)` (as Jinja
    nodes), so rendering records which node was being evaluated when an error was raised."""

    def __init__(self, line: int):
        self.line = line
        self.watched: list[nodes.Node] = []

    def generic_visit(self, node: nodes.Node, *args: Any, **kwargs: Any) -> Any:
        node = super().generic_visit(node, *args, **kwargs)
        if not isinstance(node, _WATCHED) or getattr(node, "lineno", None) != self.line:
            return node
        if getattr(node, "ctx", "load") != "load" or (isinstance(node, nodes.Filter) and node.node is None):
            return node
        k = len(self.watched)
        self.watched.append(node)
        lineno = node.lineno
        enter = nodes.Call(nodes.Name("_pg_enter", "load", lineno=lineno), [nodes.Const(k, lineno=lineno)], [], None, None, lineno=lineno)
        guarded = nodes.CondExpr(enter, node, nodes.Const(None, lineno=lineno), lineno=lineno)
        return nodes.Filter(guarded, "_pg_leave", [nodes.Const(k, lineno=lineno)], [], None, None, lineno=lineno)


def runtime_error_column(env: jinja2.Environment, source: str, line: int, error: Exception, variables: dict) -> int | None:
    """The column of the node on `line` that raised `error` when `source` was rendered with
    `variables` (None when it cannot be told)."""
    try:
        overlay = env.overlay()
        ast = overlay.parse(source)
        # Columns first, on the AST as parsed; instrumenting wraps the same node objects.
        columns = _Columns(env, source, line, ast)
        instrument = _Instrument(line)
        template = instrument.visit(ast)
    except Exception:  # noqa: BLE001 - the place stays approximate
        return None
    stack: list[int] = []
    left: list[tuple[int, bool]] = []

    def enter(k: int) -> bool:
        stack.append(k)
        return True

    def leave(value: Any, k: int) -> Any:
        while stack and stack.pop() != k:
            pass
        left.append((k, isinstance(value, jinja2.Undefined)))
        return value

    overlay.globals = {**overlay.globals, "_pg_enter": enter}
    overlay.filters = {**overlay.filters, "_pg_leave": leave}
    try:
        overlay.from_string(template).render(**variables)
    except Exception as again:  # noqa: BLE001 - the same failure, now with the evaluation recorded
        if type(again) is not type(error):
            return None
    else:
        return None
    return _pick(error, instrument.watched, stack, left, columns)


def _pick(error: Exception, watched: list[nodes.Node], stack: list[int], left: list[tuple[int, bool]], columns: _Columns) -> int | None:
    """The failing node's column: the raise_exception call being made; the read that produced the
    undefined value an UndefinedError names; else the innermost node being evaluated."""
    if type(error) is jinja2.TemplateError:
        for k in reversed(stack):
            node = watched[k]
            if isinstance(node, nodes.Call) and isinstance(node.node, nodes.Name) and node.node.name == "raise_exception":
                return columns.of(node)
    if isinstance(error, jinja2.UndefinedError):
        name = re.search(r"'([^']+)' (?:is undefined|has no attribute '([^']+)')", str(error))
        needle = (name.group(2) or name.group(1)) if name else None
        for k, undefined in reversed(left):
            if undefined and needle is not None and _reads(watched[k], needle):
                return columns.of(watched[k])
    for k in reversed(stack):
        column = columns.of(watched[k])
        if column is not None:
            return column
    return None


def _reads(node: nodes.Node, name: str) -> bool:
    if isinstance(node, nodes.Getattr):
        return node.attr == name
    if isinstance(node, nodes.Getitem):
        return isinstance(node.arg, nodes.Const) and node.arg.value == name
    return isinstance(node, nodes.Name) and node.name == name
