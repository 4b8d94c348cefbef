"""The markers an instrumented chat template writes around each piece of its output, and the
functions it calls to write them (see `instrument.py`).

Markers are Unicode noncharacters (U+FDD0–U+FDD4, "never for interchange"): a template or a prompt
that holds one is not explained. What they say:
- `OPEN id,message STOP` … `END`: a piece (template text, a string literal, or an expression's value)
  and the message its own expression reads (empty: none); a piece may hold pieces (a macro call);
- `CTX depth,message[w] STOP`: from here the template handles `message` (the start of a loop
  iteration; `w`: an `if` testing a message by index, which only counts outside such a loop);
- `POP depth STOP`: the loop or `if` at `depth` ended.

A message is recognised by identity: a dict the template reads that *is* one of the messages it was
given (`messages[0]`, a loop variable over `messages` or `messages[1:]`, a macro argument), or a
hidden variable's `Src` (the message a name was set from).
"""

from __future__ import annotations

from contextvars import ContextVar, Token
from typing import Any

from markupsafe import Markup

OPEN, END, CTX, POP, STOP = "\ufdd0", "\ufdd1", "\ufdd2", "\ufdd3", "\ufdd4"
ANY_MARKER = "[\ufdd0-\ufdd4]"

# The names the instrumented template calls them by (globals and filters), which no real template uses.
OPEN_NAME, CTX_NAME, SOURCE_NAME = "_pgx_open", "_pgx_ctx", "_pgx_source"
MARK_NAME, MARK_TEXT_NAME, AT_NAME = "_pgx_mark", "_pgx_mark_text", "_pgx_at"
HIDDEN_PREFIX = "_pgx_src_"


class Src:
    """A hidden variable's value: the index of the message a name was set from."""

    __slots__ = ("index",)

    def __init__(self, index: int):
        self.index = index


# The messages of the render in progress, by identity: {id(message): index}, and the list itself.
_MESSAGES: ContextVar[tuple[dict[int, int], list]] = ContextVar("provenance_messages", default=({}, []))


def use_messages(messages: Any) -> Token:
    """Recognise these message dicts (exactly the objects the template receives) in the helpers,
    until `reset_messages(token)`."""
    listed = list(messages) if isinstance(messages, list) else []
    return _MESSAGES.set(({id(m): i for i, m in enumerate(listed) if isinstance(m, dict)}, listed))


def reset_messages(token: Token) -> None:
    _MESSAGES.reset(token)


def _which(*values: Any) -> int | None:
    by_id, listed = _MESSAGES.get()
    for value in values:
        if type(value) is Src:
            return value.index
        if type(value) is dict:
            index = by_id.get(id(value))
            if index is not None and listed[index] is value:
                return index
    return None


def _at(base: Any, key: Any) -> Any:
    # `messages[i]` looked up here rather than by Jinja: an undefined base or key must not raise
    # where the template itself would not have evaluated it.
    if type(base) is list and type(key) is int and -len(base) <= key < len(base):
        return base[key]
    return None


def _source(*values: Any) -> Src | None:
    index = _which(*values)
    return None if index is None else Src(index)


def _open(piece: int, *values: Any) -> str:
    index = _which(*values)
    return f"{OPEN}{piece},{'' if index is None else index}{STOP}"


def _ctx(depth: int, weak: bool, *values: Any) -> str:
    index = _which(*values)
    if index is None and weak:
        return ""
    return f"{CTX}{depth},{'' if index is None else index}{'w' if weak else ''}{STOP}"


def _mark(value: Any, piece: int, *values: Any) -> Any:
    # An operand of `+`: marked only when it is text (a number stays a number, so `+` still adds).
    if type(value) is str:
        return _open(piece, *values) + value + END
    if isinstance(value, Markup):
        return Markup(_open(piece, *values)) + value + Markup(END)
    return value


def _mark_text(value: Any, piece: int, *values: Any) -> str:
    # An operand of `~`, which turns every operand into text anyway.
    return _open(piece, *values) + str(value) + END


# What the instrumented template is given: the globals and the filters, by the names it calls them.
GLOBALS = {OPEN_NAME: _open, CTX_NAME: _ctx, SOURCE_NAME: _source}
FILTERS = {MARK_NAME: _mark, MARK_TEXT_NAME: _mark_text, AT_NAME: _at}
