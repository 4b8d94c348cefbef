"""A chat template instrumented to say where each piece of its output comes from.

The template is parsed by transformers' own environment (`compile_template(...).environment`:
sandboxed, trim_blocks, lstrip_blocks, `{% generation %}`, loop controls) from its own tokens, with
one change: each token's line number is replaced by its index in the token list, so every node of
the AST knows the exact token (line, column) it starts at. The AST is then rewritten so that each
output writes markers (`markers.py`) around what it writes, and compiled in an overlay of that
environment (same class, filters, globals, extensions): the template's own code runs unchanged
between the markers.

Output that the template's own code reads is never marked, since the code would see (and trip
over) a marker: a macro whose output is filtered or set aside (`render(x)|trim`, `{% set c =
render(x) %}`) is one piece wherever it is called (`macros.py` decides which macros are safe),
and so are `{% set %}` blocks, `{% filter %}` and `{% call %}` blocks. `{% generation %}` blocks
hand their output on unchanged, so they are marked inside. In `captured=False` mode no macro and no
block is marked inside: the coarse view, used when the finer one does not give back the prompt.

A name set from a message (`{% set system_message = messages[0]['content'] %}`) carries its
message in a hidden variable set beside it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, NamedTuple

import jinja2
from jinja2 import nodes
from jinja2.lexer import TokenStream
from jinja2.parser import Parser

from ..jinja_analysis import Token, lex, normalise_newlines
from ..transformers_compat import compile_template
from .macros import is_generation, transparent_macros
from .markers import (AT_NAME, CTX_NAME, END, FILTERS, GLOBALS, HIDDEN_PREFIX, MARK_NAME, MARK_TEXT_NAME,
                      OPEN, OPEN_NAME, POP, SOURCE_NAME, STOP)

# At most this many places are looked at to find the message a piece reads (cost per output).
MAX_CANDIDATES = 4


class Origin(NamedTuple):
    """Where one marked piece is written in the template: its kind (`text`: template text between
    tags; `literal`: a string literal in `{{ }}`; `expression`: an expression's value; `block`: what a
    `{% call %}`, `{% filter %}` or `{% generation %}` block wrote, when its insides are not
    marked), the 1-based line and column of its first character and the end of its last (exclusive),
    the template offset of template text (to place each of its characters), the expression's source,
    and the macro it is written in (with the line of `{% macro %}`)."""

    kind: str
    line: int | None
    column: int | None
    end_line: int | None
    end_column: int | None
    offset: int | None = None
    source: str | None = None
    macro: str | None = None
    macro_line: int | None = None
    parent: int | None = None  # an operand's piece: the piece of the whole `{{ }}` it is part of


@dataclass
class Instrumented:
    """The compiled instrumented template, what each piece id means, and the macros shown whole
    (their output is read by the template's code)."""

    template: jinja2.Template
    origins: list[Origin]
    whole: list[str] = field(default_factory=list)


@lru_cache(maxsize=8)
def instrument(source: str, captured: bool = True) -> Instrumented:
    """`source` compiled with markers (see the module docstring); raises what compiling raises.
    Cached: a case switch or a toggle explains the same template again."""
    base = compile_template(source).environment
    tokens = lex(source)
    ast = _parse(base, tokens)
    macros, whole = transparent_macros(ast) if captured else (set(), [])
    rewriter = _Rewriter(tokens, normalise_newlines(source), macros, captured)
    rewriter.rewrite(ast)
    # Jinja's optimizer only folds constant expressions (the same values, computed while compiling):
    # without it, compiling, which every edit pays, is a sixth cheaper.
    env = base.overlay(optimized=False)
    env.globals = {**base.globals, **GLOBALS}
    env.filters = {**base.filters, **FILTERS}
    # New nodes need what parsed ones have (their line is only used in tracebacks of this render).
    ast.set_environment(env)
    ast.set_lineno(0)
    return Instrumented(env.from_string(ast), rewriter.origins, whole)


def _parse(env: jinja2.Environment, tokens: list[Token]) -> nodes.Template:
    """The template's AST as transformers' environment parses it, each node's `lineno` being the
    index of the token it starts at."""
    parser = Parser(env, "")
    stream: Any = TokenStream(env.lexer.wrap((i, t.kind, t.value) for i, t in enumerate(tokens)), None, None)
    for extension in env.iter_extensions():
        stream = extension.filter_stream(stream)
        if not isinstance(stream, TokenStream):
            stream = TokenStream(stream, None, None)
    parser.stream = stream
    return parser.parse()


def _call(name: str, args: list[nodes.Expr]) -> nodes.Call:
    return nodes.Call(nodes.Name(name, "load"), args, [], None, None)


def _joined(children: list[nodes.Expr]) -> list[nodes.Expr]:
    """Adjacent template text as one node (a marker, the text, the next marker): fewer nodes to compile."""
    out: list[nodes.Expr] = []
    for child in children:
        if isinstance(child, nodes.TemplateData) and out and isinstance(out[-1], nodes.TemplateData):
            out[-1] = nodes.TemplateData(out[-1].data + child.data)
        else:
            out.append(child)
    return out


def _data(text: str) -> nodes.Output:
    return nodes.Output([nodes.TemplateData(text)])


_OPENERS = {"(": ")", "[": "]", "{": "}"}


class _Rewriter:
    """Rewrites an AST parsed by `_parse` in place, recording an `Origin` for every piece id."""

    def __init__(self, tokens: list[Token], text: str, macros: set[str], captured: bool):
        self.tokens = tokens
        self.text = text
        self.macros = macros  # the macros marked inside
        self.captured = captured
        self.origins: list[Origin] = []
        self.tracked: set[str] = set()
        self.macro: tuple[str, int | None] | None = None
        self.loops: list[set[str]] = []  # the names each loop around the statement being rewritten sets

    # ----- statements -------------------------------------------------------------------------

    def rewrite(self, ast: nodes.Template) -> None:
        for assign in ast.find_all(nodes.Assign):
            if isinstance(assign.target, nodes.Name) and self._candidates(assign.node):
                self.tracked.add(assign.target.name)
        ast.body = self.block(ast.body, 0)

    def block(self, body: list[nodes.Node], depth: int) -> list[nodes.Node]:
        out: list[nodes.Node] = []
        for node in body:
            out.extend(self.statement(node, depth))
        return out

    def statement(self, node: nodes.Node, depth: int) -> list[nodes.Node]:
        if isinstance(node, nodes.Output):
            node.nodes = _joined([marked for child in node.nodes for marked in self.output(child)])
            return [node]
        if isinstance(node, nodes.For):
            targets = [n.name for n in [node.target, *node.target.find_all(nodes.Name)] if isinstance(n, nodes.Name)]
            self.loops.append(set(targets))
            node.body = [self._ctx(depth, False, [nodes.Name(n, "load") for n in targets]), *self.block(node.body, depth + 1)]
            self.loops.pop()
            node.else_ = self.block(node.else_, depth)
            return [node, _data(f"{POP}{depth}{STOP}")]
        if isinstance(node, nodes.If):
            return self._if(node, depth)
        if isinstance(node, nodes.Macro):
            return [self._inside(node, node.name) if node.name in self.macros else node]
        if isinstance(node, (nodes.CallBlock, nodes.FilterBlock)):
            if self.captured and is_generation(node):
                self._inside(node, None)
            return self._whole_block(node)
        if isinstance(node, nodes.AssignBlock):
            return [node]  # its output is a variable's value: the piece that writes the variable holds it
        if isinstance(node, nodes.Assign):
            return [node, *self._track(node)]
        for name in ("body", "else_"):  # With, Scope, Block, ScopedEvalContextModifier…
            if isinstance(getattr(node, name, None), list):
                setattr(node, name, self.block(getattr(node, name), depth))
        return [node]

    def _if(self, node: nodes.If, depth: int) -> list[nodes.Node]:
        marked = False
        for branch in [node, *node.elif_]:
            values = self._candidates(branch.test)
            branch.body = self.block(branch.body, depth + 1 if values else depth)
            if values:
                branch.body.insert(0, self._ctx(depth, True, values))
                marked = True
        node.else_ = self.block(node.else_, depth)
        return [node, _data(f"{POP}{depth}{STOP}")] if marked else [node]

    def _inside(self, node: nodes.Macro | nodes.CallBlock, macro: str | None) -> nodes.Node:
        """The body of a macro or a `{% generation %}` block, marked: its depths are counted afresh
        (its output is shown inside the piece that called it)."""
        outer, loops = self.macro, self.loops
        if macro is not None:
            self.macro = (macro, self._line(node.lineno))
        self.loops = []
        node.body = self.block(node.body, 0)
        self.macro, self.loops = outer, loops
        return node

    def _whole_block(self, node: nodes.Node) -> list[nodes.Node]:
        """A `{% call %}`, `{% filter %}` or `{% generation %}` block writes its output itself: one
        piece around it (the tag's line), holding the pieces its body wrote."""
        first, last = self._block_tag(node.lineno)
        source = self.text[self.tokens[first].start : self.tokens[last].end]
        piece = self._origin(Origin("block", *self._span(first, last), source=source))
        return [_data(f"{OPEN}{piece},{STOP}"), node, _data(END)]

    def _track(self, node: nodes.Assign) -> list[nodes.Node]:
        if not (isinstance(node.target, nodes.Name) and node.target.name in self.tracked):
            return []
        values = self._candidates(node.node)
        hidden = nodes.Name(HIDDEN_PREFIX + node.target.name, "store")
        return [nodes.Assign(hidden, _call(SOURCE_NAME, values))] if values else []

    def _ctx(self, depth: int, weak: bool, values: list[nodes.Expr]) -> nodes.Output:
        args: list[nodes.Expr] = [nodes.Const(depth), nodes.Const(weak), *values]
        return nodes.Output([_call(CTX_NAME, args)])

    # ----- output -----------------------------------------------------------------------------

    def output(self, child: nodes.Expr) -> list[nodes.Expr]:
        """One child of an `Output` (template text or a `{{ }}` expression) as marked children."""
        if isinstance(child, nodes.TemplateData):
            token = self.tokens[child.lineno]
            piece = self._origin(Origin("text", token.line, token.column, None, None, offset=token.start))
            return [nodes.TemplateData(f"{OPEN}{piece},{STOP}"), child, nodes.TemplateData(END)]
        first, last = self._tag_inside(_first_token(child))
        piece = self._origin(self._expression_origin(child, first, last))
        if isinstance(child, (nodes.Add, nodes.Concat, nodes.CondExpr)):
            # Its operands are pieces of their own, each with its own message; this one only
            # holds what none of them wrote (`1 + 2`: numbers are not marked).
            return [self._open(piece, []), self._split(child, last, piece), nodes.TemplateData(END)]
        return [self._open(piece, self._candidates(child, piece=True)), child, nodes.TemplateData(END)]

    def _split(self, node: nodes.Expr, last: int, parent: int, text: bool = False) -> nodes.Expr:
        """Each operand of a `+` / `~` chain (or branch of an inline if) marked as its own piece:
        `'<|im_start|>' + message.role + '\\n'` is three pieces, each with its own columns. `last`:
        the last token the operand may span (the next operator is after it)."""
        if isinstance(node, nodes.Add):
            node.left = self._split(node.left, self._before(node.right, ("+",)), parent)
            node.right = self._split(node.right, last, parent)
            return node
        if isinstance(node, nodes.Concat):
            ends = [self._before(n, ("~",)) for n in node.nodes[1:]] + [last]
            node.nodes = [self._split(n, end, parent, text=True) for n, end in zip(node.nodes, ends)]
            return node
        if isinstance(node, nodes.CondExpr):
            node.expr1 = self._split(node.expr1, self._before(node.test, ("if",)), parent, text)
            if node.expr2 is not None:
                node.expr2 = self._split(node.expr2, last, parent, text)
            return node
        origin = self._expression_origin(node, _first_token(node), last)
        piece = self._origin(origin._replace(parent=parent))
        values = self._candidates(node, piece=True)
        if isinstance(node, nodes.Const) and isinstance(node.value, str) and not values:
            return nodes.Const(f"{OPEN}{piece},{STOP}{node.value}{END}")  # folded when compiled: free
        return nodes.Filter(node, MARK_TEXT_NAME if text else MARK_NAME, [nodes.Const(piece), *values], [], None, None)

    def _before(self, node: nodes.Expr, operators: tuple[str, ...]) -> int:
        """The last token before the operator that precedes `node` (`a + b`: `a`'s last token)."""
        index = _first_token(node) - 1
        while index > 0 and not (self.tokens[index].value in operators and self.tokens[index].kind in ("operator", "name")):
            index -= 1
        return index - 1

    def _open(self, piece: int, values: list[nodes.Expr]) -> nodes.Expr:
        if not values:
            return nodes.TemplateData(f"{OPEN}{piece},{STOP}")
        return _call(OPEN_NAME, [nodes.Const(piece), *values])

    def _candidates(self, node: nodes.Node, piece: bool = False) -> list[nodes.Expr]:
        """Where a piece may read a message, cheapest first and safe to evaluate anywhere: names
        (and the message a tracked name was set from), and `name[index]` looked up by the `at` helper.
        For a `piece` that reads only the variables of the loop around it (`message.role`), none:
        the loop already says which message it handles (and looking costs a call per piece)."""
        found: list[nodes.Expr] = []
        seen: set[str] = set()
        for sub in [node, *node.find_all((nodes.Name, nodes.Getitem))]:
            if isinstance(sub, nodes.Name) and sub.ctx == "load" and not sub.name.startswith("_pgx"):
                key, value = sub.name, [nodes.Name(sub.name, "load")]
                if sub.name in self.tracked:
                    value.append(nodes.Name(HIDDEN_PREFIX + sub.name, "load"))
            elif isinstance(sub, nodes.Getitem) and isinstance(sub.node, nodes.Name) and (index := _index(sub.arg)):
                key = f"{sub.node.name}[{index[0]}]"
                value = [nodes.Filter(nodes.Name(sub.node.name, "load"), AT_NAME, [index[1]], [], None, None)]
            else:
                continue
            if key in seen:
                continue
            seen.add(key)
            found.extend(value)
            if len(found) >= MAX_CANDIDATES:
                break
        if piece and self.loops and seen <= self.loops[-1] and not seen & self.tracked:
            return []
        return found[:MAX_CANDIDATES]

    # ----- where things are written ------------------------------------------------------------

    def _origin(self, origin: Origin) -> int:
        if self.macro is not None:
            origin = origin._replace(macro=self.macro[0], macro_line=self.macro[1])
        self.origins.append(origin)
        return len(self.origins) - 1

    def _line(self, index: int) -> int | None:
        return self.tokens[index].line if 0 <= index < len(self.tokens) else None

    def _expression_origin(self, node: nodes.Expr, first: int, last: int) -> Origin:
        """An expression written by tokens `first`..`last` (whitespace and the brackets of an
        enclosing group left out)."""
        tokens = self.tokens
        while first < last and tokens[first].kind == "whitespace":
            first += 1
        while last > first and (tokens[last].kind == "whitespace" or self._unmatched_close(first, last)):
            last -= 1
        line, column, end_line, end_column = self._span(first, last)
        source = self.text[tokens[first].start : tokens[last].end]
        kind = "literal" if isinstance(node, nodes.Const) and isinstance(node.value, str) else "expression"
        return Origin(kind, line, column, end_line, end_column, source=source)

    def _unmatched_close(self, first: int, last: int) -> bool:
        """Whether token `last` closes a bracket opened before `first` (`(a + b)`: the `)` after `b`)."""
        if _bracket(self.tokens[last]) >= 0:
            return False
        return sum(_bracket(t) for t in self.tokens[first : last + 1]) < 0

    def _tag_inside(self, index: int) -> tuple[int, int]:
        """The first and last token inside the `{{ … }}` that holds token `index` (whitespace left out)."""
        first = index
        while first > 0 and self.tokens[first - 1].kind != "variable_begin":
            first -= 1
        last = index
        while last + 1 < len(self.tokens) and self.tokens[last + 1].kind != "variable_end":
            last += 1
        while first < last and self.tokens[first].kind == "whitespace":
            first += 1
        while last > first and self.tokens[last].kind == "whitespace":
            last -= 1
        return first, last

    def _span(self, first: int, last: int) -> tuple[int | None, int | None, int | None, int | None]:
        """(line, column, end line, end column) of tokens `first`..`last`."""
        tokens = self.tokens
        if not (0 <= first < len(tokens) and 0 <= last < len(tokens)):
            return None, None, None, None
        end = tokens[last]
        end_line = end.line + end.value.count("\n")
        end_column = (len(end.value) - end.value.rfind("\n")) if "\n" in end.value else end.column + len(end.value)
        return tokens[first].line, tokens[first].column, end_line, end_column

    def _block_tag(self, index: int) -> tuple[int, int]:
        """The first and last token of the `{% … %}` that holds token `index`."""
        first = max(0, min(index, len(self.tokens) - 1))
        while first > 0 and self.tokens[first].kind != "block_begin":
            first -= 1
        last = first
        while last + 1 < len(self.tokens) and self.tokens[last].kind != "block_end":
            last += 1
        return first, last


def _first_token(node: nodes.Node) -> int:
    """The index of the first token of `node` (its nodes' lines are token indices, see `_parse`)."""
    return min(n.lineno for n in [node, *node.find_all(nodes.Node)] if isinstance(getattr(n, "lineno", None), int))


def _bracket(token: Token) -> int:
    if token.kind != "operator":
        return 0
    return 1 if token.value in _OPENERS else -1 if token.value in _OPENERS.values() else 0


def _index(node: nodes.Expr) -> tuple[str, nodes.Expr] | None:
    """An index a message can be taken by (`0`, `-1`, `i`): how it reads, and a fresh node for it."""
    if isinstance(node, nodes.Const) and type(node.value) is int:
        return str(node.value), nodes.Const(node.value)
    if isinstance(node, nodes.Neg) and isinstance(node.node, nodes.Const) and type(node.node.value) is int:
        return f"-{node.node.value}", nodes.Const(-node.node.value)
    if isinstance(node, nodes.Name) and node.ctx == "load":
        return node.name, nodes.Name(node.name, "load")
    return None
