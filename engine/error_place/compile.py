"""Errors raised while jinja2 compiles a template that parsed: its code generator's assertions
(`TemplateAssertionError`: an unknown filter or test, a block defined twice, `loop` assigned, a
`caller` parameter without a default), errors while it folds constants (`{{ (10**5000)|string }}`),
and Python's own `SyntaxError` on the code it generated (`break` or `continue` outside a loop, which
the loopcontrols extension transformers enables lets through the parser; a macro parameter or a
keyword argument given twice; blocks nested deeper than Python allows).

Jinja gives a line at best (none for Python's errors). The place of the node is found by generating
the code again from the parsed template with a generator that records which node it is visiting and
which nodes wrote each line of Python."""

from __future__ import annotations

import io
import os
import re
from types import TracebackType
from typing import Any

import jinja2
from jinja2 import nodes

from .anchors import Place, node_place

_JINJA_DIR = os.path.dirname(jinja2.__file__) + os.sep


def compile_error_place(env: jinja2.Environment, source: str, error: BaseException) -> Place | None:
    """Where the node is that made compiling `source` fail with `error` (a line only when the node
    cannot be told); None when `source` does not parse (a syntax error: see `syntax_error_place`)."""
    try:
        ast = env.parse(source)
    except Exception:  # noqa: BLE001 - not a compile-time error
        return None
    generator = _recording(env)
    try:
        generator.visit(ast)
        code = generator.stream.getvalue()
    except Exception as again:  # noqa: BLE001 - the same failure, with the generator's state kept
        node = _generator_node(again, generator.visiting)
    else:
        try:
            compile(code, "<template>", "exec")
        except SyntaxError as again:
            node = _python_node(again, generator.lines.get(again.lineno or 0, []))
        except Exception:  # noqa: BLE001 - e.g. a RecursionError: no node to name
            return Place(getattr(error, "lineno", None))
        else:  # it compiles now: no place to name
            return Place(getattr(error, "lineno", None))
    if node is None:
        return Place(getattr(error, "lineno", None))
    # A node with no token of its own (a folded constant) is placed on the nearest one around it.
    for candidate in (_refined(node, error), *reversed(generator.visiting)):
        place = node_place(env, source, ast, candidate)
        if place.column is not None:
            return place
    return Place(getattr(node, "lineno", None))


def _recording(env: jinja2.Environment) -> Any:
    """The environment's code generator, recording the nodes being visited and the nodes whose code
    each line of Python holds."""
    base = env.code_generator_class

    class Recording(base):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.visiting: list[nodes.Node] = []
            self.lines: dict[int, list[nodes.Node]] = {}

        def visit(self, node: nodes.Node, *args: Any, **kwargs: Any) -> Any:
            self.visiting.append(node)
            result = super().visit(node, *args, **kwargs)
            self.visiting.pop()  # not on a failure: the stack then says where it happened
            return result

        def write(self, x: str) -> None:
            super().write(x)
            if self.visiting:
                self.lines.setdefault(self.code_lineno, []).append(self.visiting[-1])

    return Recording(env, None, None, io.StringIO(), False, env.optimized)


# Locals that name the offending node in jinja2's compiler frames, most specific first
# (`block` when a block is defined twice, `name` when `loop` is assigned).
_NODE_LOCALS = ("block", "name", "node", "self")


def _generator_node(error: BaseException, visiting: list[nodes.Node]) -> nodes.Node | None:
    """The node the code generator was working on when it raised: the innermost of jinja2's frames
    holding a node on the error's line, else the node being visited."""
    line = getattr(error, "lineno", None)
    found = None
    tb: TracebackType | None = error.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code.co_filename.startswith(_JINJA_DIR):
            for name in _NODE_LOCALS:
                value = frame.f_locals.get(name)
                if isinstance(value, nodes.Node) and not isinstance(value, nodes.Template) \
                        and (line is None or getattr(value, "lineno", None) == line):
                    found = value
                    break
        tb = tb.tb_next
    if found is not None:
        return found
    return next((node for node in reversed(visiting) if not isinstance(node, nodes.Template)), None)


def _python_node(error: SyntaxError, written: list[nodes.Node]) -> nodes.Node | None:
    """The node whose generated Python `error` is about, among the nodes that wrote its line."""
    message = error.msg or ""
    wanted: tuple[type, ...] | None = None
    if "'break'" in message:
        wanted = (nodes.Break,)
    elif "'continue'" in message:
        wanted = (nodes.Continue,)
    elif "duplicate argument" in message:
        wanted = (nodes.Macro, nodes.CallBlock)
    elif "keyword argument repeated" in message:
        key = message.rsplit(":", 1)[-1].strip()
        calls = (nodes.Call, nodes.Filter, nodes.Test)
        for node in written:
            for call in [node, *node.find_all(calls)]:
                repeated = [k for k in getattr(call, "kwargs", None) or [] if isinstance(call, calls) and k.key == key]
                if len(repeated) > 1:
                    return repeated[1]
    for node in written:
        if wanted is None or isinstance(node, wanted):
            return node
    return written[0] if written else None


def _refined(node: nodes.Node, error: BaseException) -> nodes.Node:
    """Within the node, the part the message names: the parameter given twice, `caller`."""
    message = str(error)
    if isinstance(node, (nodes.Macro, nodes.CallBlock)):
        twice = re.search(r"duplicate argument 'l_\d+_(\w+)'", message)
        if twice:
            same = [arg for arg in node.args if arg.name == twice.group(1)]
            if len(same) > 1:
                return same[1]
        if '"caller"' in message:
            return next((arg for arg in node.args if arg.name == "caller"), node)
    return node
