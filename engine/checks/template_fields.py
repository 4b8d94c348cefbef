"""Which message fields a chat template reads, from its AST: the fields the template renders back
when a parsed message is in the conversation, and which of them it reads from assistant messages.

Names holding messages are tracked through loops over `messages`, `messages[i]`, `set` aliases and
macro parameters; `{% if message.role == "user" %}`-style branches say which roles a read can see."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from jinja2 import nodes

from ..jinja_analysis import TokenIndex, lex, parse
from ..transformers_compat import REASONING_FIELDS, template_variables

# Filters that keep a list of messages a list of messages, and those that pick one message out of it.
_LIST_FILTERS = frozenset({"reverse", "list", "selectattr", "rejectattr", "sort", "unique"})
_PICK_FILTERS = frozenset({"first", "last", "random"})
# Using a message this way reads every key it has (so no field can be called "never read").
_WHOLE_FILTERS = frozenset({"tojson", "items", "dictsort", "string", "pprint", "list"})
_WHOLE_METHODS = frozenset({"items", "keys", "values"})
# Filters that leave a role a role (`message.role|lower == "assistant"`).
_ROLE_FILTERS = frozenset({"lower", "trim", "string"})


@dataclass(frozen=True)
class Read:
    """A place where the template reads a message field. `assistant` is False when the read sits in
    a branch that only runs for other roles (`{% if message.role == "user" %}`)."""

    field: str
    line: int
    column: int | None
    assistant: bool
    # Read only to decide something (`{% if message.prefix %}`, `is defined`): a request flag, not a
    # value the template writes into the prompt.
    flag: bool = False
    # In a branch known to run for assistant messages only (`{% if message.role == "assistant" %}`).
    assistant_only: bool = False


# A role constraint on a branch: roles it is limited to (None: any) and roles it excludes.
_Roles = tuple[frozenset | None, frozenset]
_ANY: _Roles = (None, frozenset())


def _meet(a: _Roles, b: _Roles) -> _Roles:
    include = a[0] if b[0] is None else b[0] if a[0] is None else a[0] & b[0]
    return include, a[1] | b[1]


def _join(a: _Roles, b: _Roles) -> _Roles:
    include = None if a[0] is None or b[0] is None else a[0] | b[0]
    return include, a[1] & b[1]


def _allows_assistant(roles: _Roles) -> bool:
    return (roles[0] is None or "assistant" in roles[0]) and "assistant" not in roles[1]


@dataclass
class TemplateFields:
    """The message fields a chat template reads. `message_reads` is precise (reads on values known to
    be messages: loop variables over `messages`, `messages[i]`, macro parameters passed a message);
    `anywhere` is every attribute/key name read on anything, a safe over-approximation for saying a
    field is *never* read. `whole` is set when the template reads a message wholesale (`message|tojson`,
    `message.items()`), after which no field can be called unread."""

    message_reads: dict[str, list[Read]] = field(default_factory=dict)
    anywhere: set[str] = field(default_factory=set)
    whole: Read | None = None
    variables: frozenset[str] = frozenset()

    def reads(self, name: str) -> bool:
        """Whether the template may read message field `name` (conservative: True when unsure).
        transformers copies reasoning under all its names before rendering, so reading any of them
        reads all of them."""
        if self.whole is not None:
            return True
        names = REASONING_FIELDS if name in REASONING_FIELDS else (name,)
        return any(n in self.anywhere for n in names)

    def assistant_reads(self, values_only: bool = False) -> dict[str, Read]:
        """Fields read where the message may be the assistant's, with the first place each is read.
        `values_only` keeps the fields a model's turn can carry: written out (not only tested, like the
        request flag `prefix`) in a branch known to be the assistant's (not `messages[0].current_date`)."""
        out: dict[str, Read] = {}
        for name, reads in self.message_reads.items():
            for read in reads:
                if read.assistant and not (values_only and (read.flag or not read.assistant_only)):
                    out.setdefault(name, read)
                    break
        return out


def analyse_fields(source: str) -> TemplateFields:
    """Which message fields `source` reads. Raises jinja2.TemplateSyntaxError if it does not parse."""
    ast = parse(source)
    walker = _FieldWalker(TokenIndex(lex(source)))
    walker.bind(ast)
    walker.visit(ast, _ANY)
    return TemplateFields(
        message_reads=dict(walker.reads),
        anywhere=walker.anywhere,
        whole=walker.whole,
        variables=template_variables(source),
    )


class _FieldWalker:
    """Tracks which names hold messages or lists of messages, then records the fields read on them."""

    def __init__(self, index: TokenIndex):
        self.index = index
        self.lists: set[str] = {"messages"}
        self.messages: set[str] = set()
        self.role_names: set[str] = set()
        self.reads: dict[str, list[Read]] = defaultdict(list)
        self.anywhere: set[str] = set()
        self.whole: Read | None = None
        self.testing = 0  # > 0 while visiting a condition

    def visit_test(self, node: nodes.Node, roles: _Roles) -> None:
        self.testing += 1
        try:
            self.visit(node, roles)
        finally:
            self.testing -= 1

    # ----- what a value is -------------------------------------------------------------------------

    def kind(self, node: nodes.Node) -> str | None:
        """"list" for a list of messages, "message" for one message, None for anything else."""
        if isinstance(node, nodes.Name):
            return "list" if node.name in self.lists else "message" if node.name in self.messages else None
        if isinstance(node, nodes.Getitem) and self.kind(node.node) == "list":
            return "list" if isinstance(node.arg, nodes.Slice) else "message"
        if isinstance(node, nodes.Filter) and node.node is not None and self.kind(node.node) == "list":
            return "message" if node.name in _PICK_FILTERS else "list" if node.name in _LIST_FILTERS else None
        if isinstance(node, nodes.CondExpr):
            kinds = {self.kind(node.expr1), self.kind(node.expr2) if node.expr2 is not None else None}
            kinds.discard(None)
            return kinds.pop() if len(kinds) == 1 else None
        return None

    def is_role(self, node: nodes.Node) -> bool:
        if isinstance(node, nodes.Name):
            return node.name in self.role_names
        if isinstance(node, nodes.Getattr):
            return node.attr == "role" and self.kind(node.node) == "message"
        if isinstance(node, nodes.Getitem):
            return isinstance(node.arg, nodes.Const) and node.arg.value == "role" and self.kind(node.node) == "message"
        if isinstance(node, nodes.Filter) and node.node is not None:
            return node.name in _ROLE_FILTERS and self.is_role(node.node)
        return False

    def bind(self, ast: nodes.Template) -> None:
        """Find every name bound to a message / list of messages / role, until nothing changes
        (a `set` may alias a loop variable defined further down, a macro may be called with a message)."""
        macros = {m.name: [a.name for a in m.args] for m in ast.find_all(nodes.Macro)}
        for _ in range(10):
            before = (len(self.lists), len(self.messages), len(self.role_names))
            for loop in ast.find_all(nodes.For):
                if isinstance(loop.target, nodes.Name) and self.kind(loop.iter) == "list":
                    self.messages.add(loop.target.name)
            for assign in ast.find_all(nodes.Assign):
                if isinstance(assign.target, nodes.Name):
                    self._bind_name(assign.target.name, assign.node)
            for call in ast.find_all(nodes.Call):
                if isinstance(call.node, nodes.Name) and call.node.name in macros:
                    params = macros[call.node.name]
                    for name, arg in zip(params, call.args):
                        self._bind_name(name, arg)
                    for keyword in call.kwargs:
                        if keyword.key in params:
                            self._bind_name(keyword.key, keyword.value)
            if (len(self.lists), len(self.messages), len(self.role_names)) == before:
                break

    def _bind_name(self, name: str, value: nodes.Node) -> None:
        kind = self.kind(value)
        if kind == "list":
            self.lists.add(name)
        elif kind == "message":
            self.messages.add(name)
        elif self.is_role(value):
            self.role_names.add(name)

    # ----- role conditions -------------------------------------------------------------------------

    def condition(self, test: nodes.Node) -> tuple[_Roles, _Roles]:
        """The role constraints a test puts on its true branch and its false branch."""
        if isinstance(test, nodes.Not):
            true, false = self.condition(test.node)
            return false, true
        if isinstance(test, nodes.And):
            left, right = self.condition(test.left), self.condition(test.right)
            return _meet(left[0], right[0]), _join(left[1], right[1])
        if isinstance(test, nodes.Or):
            left, right = self.condition(test.left), self.condition(test.right)
            return _join(left[0], right[0]), _meet(left[1], right[1])
        if isinstance(test, nodes.Compare) and len(test.ops) == 1:
            op, other = test.ops[0].op, test.ops[0].expr
            subject = test.expr
            if not self.is_role(subject) and self.is_role(other) and op in ("eq", "ne"):
                subject, other = other, subject
            if self.is_role(subject):
                roles = _constants(other)
                if roles is not None:
                    if op in ("eq", "in"):
                        return (roles, frozenset()), (None, roles)
                    if op in ("ne", "notin"):
                        return (None, roles), (roles, frozenset())
        return _ANY, _ANY

    # ----- the walk --------------------------------------------------------------------------------

    def visit(self, node: nodes.Node, roles: _Roles) -> None:
        if isinstance(node, nodes.If):
            self.visit_test(node.test, roles)
            true, otherwise = self.condition(node.test)
            for child in node.body:
                self.visit(child, _meet(roles, true))
            remaining = _meet(roles, otherwise)
            for branch in node.elif_:
                self.visit_test(branch.test, remaining)
                b_true, b_false = self.condition(branch.test)
                for child in branch.body:
                    self.visit(child, _meet(remaining, b_true))
                remaining = _meet(remaining, b_false)
            for child in node.else_:
                self.visit(child, remaining)
            return
        if isinstance(node, nodes.CondExpr):
            self.visit_test(node.test, roles)
            true, otherwise = self.condition(node.test)
            self.visit(node.expr1, _meet(roles, true))
            if node.expr2 is not None:
                self.visit(node.expr2, _meet(roles, otherwise))
            return
        if isinstance(node, nodes.For):
            self.visit(node.iter, roles)
            if self.kind(node.iter) == "message":
                self._whole(node.iter, roles)
            body_roles = roles
            if node.test is not None:
                self.visit_test(node.test, roles)
                body_roles = _meet(roles, self.condition(node.test)[0])
            for child in [*node.body, *node.else_]:
                self.visit(child, body_roles)
            return
        if isinstance(node, nodes.Output):
            for child in node.nodes:
                if self.kind(child) == "message":
                    self._whole(child, roles)
        if isinstance(node, nodes.Test):
            self.visit_test(node.node, roles)  # `x is defined`: x is tested, not used
            for child in [*node.args, *node.kwargs]:
                self.visit(child, roles)
            return
        self._record(node, roles)
        for child in node.iter_child_nodes():
            self.visit(child, roles)

    def _record(self, node: nodes.Node, roles: _Roles) -> None:
        if isinstance(node, nodes.Getattr):
            if node.attr in _WHOLE_METHODS or node.attr == "get":
                return  # a method: handled where it is called
            self.anywhere.add(node.attr)
            if self.kind(node.node) == "message":
                self._read(node.attr, node.lineno, self.index.column(node.lineno, "name", node.attr, after="."), roles)
        elif isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Const) and isinstance(node.arg.value, str):
            self.anywhere.add(node.arg.value)
            if self.kind(node.node) == "message":
                self._read(node.arg.value, node.lineno, self.index.string_column(node.lineno, node.arg.value), roles)
        elif isinstance(node, nodes.Compare):
            # 'reasoning_content' in message
            left = node.expr
            for operand in node.ops:
                if operand.op in ("in", "notin") and isinstance(left, nodes.Const) and isinstance(left.value, str):
                    self.anywhere.add(left.value)
                    if self.kind(operand.expr) == "message":
                        self._read(left.value, node.lineno, self.index.string_column(node.lineno, left.value), roles)
                left = operand.expr
        elif isinstance(node, nodes.Call) and isinstance(node.node, nodes.Getattr):
            method, target = node.node.attr, node.node.node
            if method == "get" and node.args and isinstance(node.args[0], nodes.Const) and isinstance(node.args[0].value, str):
                key = node.args[0].value
                self.anywhere.add(key)
                if self.kind(target) == "message":
                    self._read(key, node.lineno, self.index.string_column(node.lineno, key), roles)
            elif method in _WHOLE_METHODS and self.kind(target) == "message":
                self._whole(node, roles)
        elif isinstance(node, nodes.Filter) and node.node is not None and node.name in _WHOLE_FILTERS:
            if self.kind(node.node) == "message":
                self._whole(node, roles)

    def _read(self, name: str, line: int, column: int | None, roles: _Roles) -> None:
        only = roles[0] is not None and _allows_assistant(roles)
        self.reads[name].append(Read(name, line, column, _allows_assistant(roles), flag=self.testing > 0, assistant_only=only))

    def _whole(self, node: nodes.Node, roles: _Roles) -> None:
        if self.whole is None:
            self.whole = Read("*", node.lineno, None, _allows_assistant(roles))


def _constants(node: nodes.Node) -> frozenset | None:
    """The string constant(s) a role is compared with: "assistant", or ["user", "system"]."""
    if isinstance(node, nodes.Const) and isinstance(node.value, str):
        return frozenset({node.value})
    if isinstance(node, (nodes.List, nodes.Tuple)) and all(
        isinstance(item, nodes.Const) and isinstance(item.value, str) for item in node.items
    ):
        return frozenset(item.value for item in node.items)
    return None
