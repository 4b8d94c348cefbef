"""Which macros can be marked inside: those whose output only ever reaches the prompt as written.

A macro's output is marked inside (each line of the macro its own piece) only when every use of
the macro is a call whose value is written straight into the prompt: `{{ render(m) }}`, or an
operand of a `+`/`~` chain or inline if written so (`{{ '<a>' + render(m) }}`), or the call of a
`{% call %}` block; and each such call is itself in output that is marked (the template's top
level, a `{% generation %}` block, or another such macro). Any other use (`render(m)|trim`,
`{% set c = render(m) %}`, `render(m).endswith(…)`, a macro passed as a value) lets the template's
code read the output, and a marker there would change what it reads: that macro is shown whole.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from jinja2 import nodes

# Where a use of a macro sits: in output at the template's top level, in a macro's body (by name),
# or where the output is captured and read (a `{% set %}`, `{% filter %}` or `{% call %}` body).
ROOT, CAPTURED = "", None


def is_generation(node: nodes.Node) -> bool:
    """Whether `node` is transformers' `{% generation %}` block (a call block whose output is handed
    on unchanged, only measured)."""
    call = getattr(node, "call", None)
    target = getattr(call, "node", None)
    return isinstance(node, nodes.CallBlock) and isinstance(target, nodes.ExtensionAttribute) and target.name == "_generation_support"


def written_operands(node: nodes.Expr) -> Iterator[nodes.Expr]:
    """The parts of an output expression that are written as they are: the operands of a `+`/`~`
    chain and the branches of an inline if (recursively), else the expression itself. The
    instrumentation marks exactly these."""
    if isinstance(node, nodes.Add):
        yield from written_operands(node.left)
        yield from written_operands(node.right)
    elif isinstance(node, nodes.Concat):
        for operand in node.nodes:
            yield from written_operands(operand)
    elif isinstance(node, nodes.CondExpr):
        yield from written_operands(node.expr1)
        if node.expr2 is not None:
            yield from written_operands(node.expr2)
    else:
        yield node


def transparent_macros(ast: nodes.Template) -> tuple[set[str], list[str]]:
    """The macros that can be marked inside, and those that cannot (in the order they are defined)."""
    defined = [m.name for m in ast.find_all(nodes.Macro)]
    names = {name for name in defined if defined.count(name) == 1}
    uses: dict[str, list[tuple[bool, str | None]]] = defaultdict(list)  # (written as is, where)
    _Uses(names, uses).body(ast.body, ROOT)
    marked = set(names)
    changed = True
    while changed:  # a macro called only from a macro shown whole is shown whole too
        changed = False
        for name in sorted(marked):
            if any(not written or not (where == ROOT or where in marked) for written, where in uses[name]):
                marked.discard(name)
                changed = True
    whole = [name for name in dict.fromkeys(defined) if name not in marked]
    return marked, whole


class _Uses:
    """Records every use of a macro: whether its value is written as is, and where."""

    def __init__(self, names: set[str], uses: dict[str, list[tuple[bool, str | None]]]):
        self.names = names
        self.uses = uses

    def body(self, statements: list[nodes.Node], where: str | None) -> None:
        for node in statements:
            self.statement(node, where)

    def statement(self, node: nodes.Node, where: str | None) -> None:
        if isinstance(node, nodes.Output):
            for child in node.nodes:
                if isinstance(child, nodes.TemplateData):
                    continue
                for operand in written_operands(child):
                    self.written(operand, where)
                self.read_parts(child)
            return
        if isinstance(node, nodes.Macro):
            self.expressions(node.defaults, where)
            self.body(node.body, node.name if node.name in self.names else CAPTURED)
            return
        if isinstance(node, nodes.CallBlock):
            self.written(node.call, where)
            self.expressions(node.defaults, where)
            self.body(node.body, where if is_generation(node) else CAPTURED)
            return
        if isinstance(node, (nodes.FilterBlock, nodes.AssignBlock)):
            self.expressions([c for c in node.iter_child_nodes() if isinstance(c, nodes.Expr)], where)
            self.body(node.body, CAPTURED)
            return
        for child in node.iter_child_nodes():
            if isinstance(child, nodes.Stmt):
                self.statement(child, where)
            elif isinstance(child, nodes.Expr):
                self.read(child)

    def written(self, operand: nodes.Expr, where: str | None) -> None:
        """An operand written as is: a call of a macro there is a use written as is; anything
        else in it is read."""
        if isinstance(operand, nodes.Call) and isinstance(operand.node, nodes.Name) and operand.node.name in self.names:
            self.uses[operand.node.name].append((True, where))
            for child in operand.iter_child_nodes():
                if child is not operand.node:
                    self.read(child)
        else:
            self.read(operand)

    def read_parts(self, child: nodes.Expr) -> None:
        """What an output expression reads besides its written operands (an inline if's test)."""
        if isinstance(child, nodes.CondExpr):
            self.read(child.test)
            self.read_parts(child.expr1)
            if child.expr2 is not None:
                self.read_parts(child.expr2)
        elif isinstance(child, nodes.Add):
            self.read_parts(child.left)
            self.read_parts(child.right)
        elif isinstance(child, nodes.Concat):
            for operand in child.nodes:
                self.read_parts(operand)

    def read(self, expression: nodes.Node) -> None:
        for name in [expression, *expression.find_all(nodes.Name)]:
            if isinstance(name, nodes.Name) and name.name in self.names and name.ctx == "load":
                self.uses[name.name].append((False, None))

    def expressions(self, values: list[nodes.Node], where: str | None) -> None:
        for value in values:
            self.read(value)
