"""Runtime errors, placed on the node that failed: the template is rendered again with the nodes on
the failing line instrumented (each records when its evaluation starts and ends, and whether it
produced an undefined value)."""

from __future__ import annotations

import re
from typing import Any

import jinja2
from jinja2 import nodes
from jinja2.visitor import NodeTransformer

from .anchors import Anchors

# What Jinja's UndefinedError says: `'name' is undefined` (a name nobody passed) or `'dict object' has
# no attribute 'key'` (a key a value lacks). The one reading of it: the render's hint, the error's
# place, and the advice of the checks and the draft all go through `undefined_read`.
UNDEFINED = re.compile(r"'([^']+)' (?:is undefined|has no attribute '([^']+)')")


def undefined_read(message: str) -> tuple[str, str | None] | None:
    """What an undefined-value message names: (the name, None) for a name never passed, (the value,
    the key) for a key a value lacks; None when it names neither."""
    found = UNDEFINED.search(message)
    return (found.group(1), found.group(2)) if found else None


def undefined_name(message: str) -> str | None:
    """The top-level name a message says was read and never passed (not a key a value lacks)."""
    read = undefined_read(message)
    return read[0] if read is not None and read[1] is None and read[0].isidentifier() else None


# Expression nodes that can fail, and so are instrumented on the failing line.
_WATCHED = (nodes.Getattr, nodes.Getitem, nodes.Name, nodes.Call, nodes.Filter, nodes.Test, nodes.BinExpr,
            nodes.UnaryExpr, nodes.Concat, nodes.Compare, nodes.CondExpr, nodes.List, nodes.Dict, nodes.Tuple)  # fmt: skip


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


def runtime_error_place(env: jinja2.Environment, source: str, line: int, error: Exception, variables: dict
                        ) -> tuple[int, int] | None:
    """The (column, end) of the node on `line` that raised `error` when `source` was rendered with
    `variables` (None when it cannot be told)."""
    try:
        overlay = env.overlay()
        ast = overlay.parse(source)
        # Columns first, on the AST as parsed; instrumenting wraps the same node objects.
        columns = Anchors(env, source, line, ast)
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


_LOADING = (nodes.Extends, nodes.Include, nodes.Import, nodes.FromImport)


def _pick(error: Exception, watched: list[nodes.Node], stack: list[int], left: list[tuple[int, bool]], columns: Anchors
          ) -> tuple[int, int] | None:
    """The failing node's column: the raise_exception call being made; the read that produced the
    undefined value an UndefinedError names; else the innermost node being evaluated."""
    if type(error) is jinja2.TemplateError:
        for k in reversed(stack):
            node = watched[k]
            if isinstance(node, nodes.Call) and isinstance(node.node, nodes.Name) and node.node.name == "raise_exception":
                return columns.of(node)
    if isinstance(error, jinja2.UndefinedError):
        read = undefined_read(str(error))
        needle = (read[1] or read[0]) if read else None
        for k, undefined in reversed(left):
            if undefined and needle is not None and _reads(watched[k], needle):
                return columns.of(watched[k])
    for k in reversed(stack):
        found = columns.of(watched[k])
        if found is not None:
            return found
    # Nothing watched was being evaluated: a statement that loads another template failed (the
    # sandbox has no loader).
    loading = [node for node in columns.nodes if isinstance(node, _LOADING)]
    return columns.of(loading[0]) if loading else None


def _reads(node: nodes.Node, name: str) -> bool:
    if isinstance(node, nodes.Getattr):
        return node.attr == name
    if isinstance(node, nodes.Getitem):
        return isinstance(node.arg, nodes.Const) and node.arg.value == name
    return isinstance(node, nodes.Name) and node.name == name
