"""Where every character of a prompt came from: the template line (and columns) that wrote it, what
kind of output it is, and the message the template was handling.

`explain_prompt` renders the template instrumented (`instrument.py`) with the very variables
transformers' `render_jinja_template` passed it, reads the markers, and keeps the explanation only
if the text between them is the prompt transformers rendered, byte for byte. When the fine
explanation (inside macros too) differs, the coarser one (a macro call as one piece) is tried; when
that differs too, there is no explanation, and `Explanation.note` says why.
"""

from __future__ import annotations

import re
import signal
import threading
import time
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import Any

from .. import limits
from .instrument import Origin, instrument
from .markers import ANY_MARKER, CTX, END, OPEN, POP, STOP, reset_messages, use_messages

_MARKERS = re.compile(f"{OPEN}(\\d+),(\\d*){STOP}|{END}|{CTX}(\\d+),(\\d*)(w?){STOP}|{POP}(\\d+){STOP}")
_ANY_MARKER = re.compile(ANY_MARKER)


@lru_cache(maxsize=16)
def has_markers(source: str) -> bool:
    """Whether a template holds a marker character (then it is not explained). Cached: the same
    template is explained on every edit of the case, and the largest take a few milliseconds to scan."""
    return _ANY_MARKER.search(source) is not None


@dataclass(frozen=True)
class Site:
    """A place in the template: where a macro was called, or a block that holds a piece."""

    line: int | None
    column: int | None
    source: str | None

    def to_dict(self) -> dict:
        return {"line": self.line, "column": self.column, "source": self.source}


@dataclass(frozen=True)
class Piece:
    """`prompt[start:end]`, written by the template at `line`:`column` (to `end_line`:`end_column`,
    exclusive). `kind`: `text` (template text between tags; a piece never spans a template line),
    `literal` (a string literal in `{{ }}`), `expression` (an expression's value; `source` is its
    text) or `block` (a `{% call %}`/`{% filter %}`/`{% generation %}` block's output, not broken
    down). `message`: the index of the message the template was handling (None: none). `template`:
    the named template. Inside a macro: `macro` and the line of its `{% macro %}`, and `calls`, the
    call sites (and blocks) it was reached through, outermost first."""

    start: int
    end: int
    kind: str
    line: int | None
    column: int | None
    end_line: int | None
    end_column: int | None
    message: int | None
    source: str | None = None
    template: str | None = None
    macro: str | None = None
    macro_line: int | None = None
    calls: tuple[Site, ...] = ()

    def to_dict(self) -> dict:
        data: dict[str, Any] = {
            "start": self.start, "end": self.end, "line": self.line, "column": self.column,
            "end_line": self.end_line, "end_column": self.end_column, "message": self.message, "kind": self.kind,
        }  # fmt: skip
        if self.source is not None:
            data["source"] = self.source
        if self.template is not None:
            data["template"] = self.template
        if self.macro is not None:
            data["macro"] = {"name": self.macro, "line": self.macro_line}
        if self.calls:
            data["calls"] = [site.to_dict() for site in self.calls]
        return data


# A piece as `_read` finds it: (start, end, origin id, message, its call chain (-1: none), the line
# within the origin's template text). `Explanation.pieces` turns them into `Piece`s.
Row = tuple[int, int, int, int | None, int, int]
# A call chain: (the chain it extends, -1: none; the origin id of the call site it adds). The call
# sites a piece was reached through, outermost first, are its chain's sites up to the root. Chains
# are sent once and pieces refer to them by index: a macro that recurses 100 levels and then writes
# 100,000 pieces has 100 chains, not 100,000 lists of up to 100 call sites.
Chain = tuple[int, int]


@dataclass
class Explanation:
    """The pieces that tile the prompt (`rows` None: not explained, `note` says why); `note` also
    says when part of it is coarse (macros shown whole)."""

    rows: list[Row] | None
    origins: list[Origin] = field(default_factory=list)
    template_name: str | None = None
    note: str | None = None
    coarse: bool = False
    chains: list[Chain] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.rows is not None

    def __getstate__(self) -> dict:
        # What a worker sends: the rows, chains and origins, never the pieces built from them.
        return {k: v for k, v in self.__dict__.items() if k not in ("pieces", "_calls")}

    @cached_property
    def pieces(self) -> list[Piece] | None:
        if self.rows is None:
            return None
        return [self.piece(row) for row in self.rows]

    def site(self, origin: int) -> Site:
        o = self.origins[origin]
        return Site(o.line, o.column, o.source)

    def calls(self, chain: int) -> tuple[Site, ...]:
        """The call sites of `chain`, outermost first (one tuple per chain, shared by its pieces)."""
        cache = self.__dict__.setdefault("_calls", {-1: ()})
        found = cache.get(chain)
        if found is None:
            path = []
            while chain not in cache:  # up to a chain already known (iterative: chains may be deep)
                path.append(chain)
                chain = self.chains[chain][0]
            found = cache[chain]
            for link in reversed(path):
                found = cache[link] = (*found, self.site(self.chains[link][1]))
        return found

    def place(self, row: Row) -> tuple[int | None, int | None, int | None, int | None]:
        """Where a row's text is written: line, column, end line, end column (exclusive)."""
        start, end, origin, _, _, k = row
        o = self.origins[origin]
        line, column, end_line, end_column = o.line, o.column, o.end_line, o.end_column
        if o.kind == "text" and line is not None:
            # Template text is one row per template line: its line, and the columns it covers (a
            # newline it ends with is the line's last column).
            line, column = line + k, (column if k == 0 else 1)
            end_line, end_column = line, column + end - start
        return line, column, end_line, end_column

    def piece(self, row: Row) -> Piece:
        start, end, origin, message, chain, _ = row
        o = self.origins[origin]
        return Piece(start, end, o.kind, *self.place(row), message, o.source, self.template_name, o.macro, o.macro_line,
                     self.calls(chain))


class _Unexplained(Exception):
    """The instrumented render does not give back the prompt (the reason is the message)."""


class _OverLimit(BaseException):
    """The explanation went over a limit (time, pieces): stop, whatever code it is in. A
    BaseException, as KeyboardInterrupt is: Jinja's compiler catches every Exception while it folds
    constants, and would go on."""


def explain_prompt(
    source: str,
    variables: dict,
    prompt: str,
    *,
    template_name: str | None = None,
    continued: bool = False,
    seconds: float | None = None,
    max_pieces: int | None = None,
) -> Explanation:
    """Explain `prompt`, which transformers rendered from `source` with `variables` (the variables
    `render_jinja_template` passed the template). `continued`: the render continued the final
    message, so transformers cut the prompt short of what the template wrote; the pieces are cut
    there too. `seconds` bounds the work (None: no bound); `max_pieces`, the pieces it finds (the
    page's limit: it stops as soon as there are more; default `limits.MAX_EXPLAINED_PIECES`)."""
    if _ANY_MARKER.search(prompt) or has_markers(source):
        return Explanation(None, note="The template or the prompt holds a Unicode noncharacter (U+FDD0–U+FDD4), "
                                      "which the explanation uses as its markers.")
    deadline = None if seconds is None else time.monotonic() + seconds
    limit = limits.MAX_EXPLAINED_PIECES if max_pieces is None else max_pieces
    try:
        return _explain(source, variables, prompt, template_name, continued, seconds, deadline, limit)
    except _OverLimit as e:  # caught outside the timer, which is stopped by then
        if e.args[0] == _TOO_MANY and max_pieces is not None:
            return Explanation(None, note=f"where each character came from is not shown: more than {limit:,} pieces, "
                                          f"the most the page shows (python -m engine render --explain lists them)")
        message = f"the prompt has more than {limit:,} pieces, the limit" if e.args[0] == _TOO_MANY else e.args[0]
        return Explanation(None, note=f"No explanation: {message}.")


_TOO_MANY = "too many pieces"  # (an _OverLimit's message: more pieces than the limit)


def _explain(source: str, variables: dict, prompt: str, template_name: str | None, continued: bool,
             seconds: float | None, deadline: float | None, limit: int) -> Explanation:
    """`explain_prompt`'s work under its timer (raises _OverLimit past a limit)."""
    why = ""
    with _alarm(seconds) as alarm:
        for captured in (True, False):
            try:
                instrumented = instrument(source, captured)
                marked = _render(instrumented.template, variables, prompt, deadline, limit)
                rows, chains = _read(marked, instrumented.origins, prompt, continued, limit)
            except _OverLimit:
                alarm.armed = False  # it landed: no more rings
                raise
            except _Unexplained as e:
                why = str(e)
                continue
            except Exception as e:  # noqa: BLE001 - an instrumented render that fails is a difference
                why = f"the instrumented render failed ({type(e).__name__})"
                continue
            if not captured:
                note = "Macros and blocks are shown whole (each call is one piece): marked inside, the render differed."
            elif instrumented.whole:
                names = ", ".join(instrumented.whole)
                note = f"Shown whole (each call is one piece), since the template's code reads their output: macro {names}."
            else:
                note = None
            rows, chains, origins = _used(rows, chains, instrumented.origins)
            return Explanation(rows, origins, template_name, note, coarse=not captured, chains=chains)
    return Explanation(None, note=f"No explanation: {why}.")


class _alarm:
    """Stops the work inside after `seconds` (None: never) by raising `_OverLimit` from a timer
    signal: compiling a very large template takes seconds and checks no clock. Only in a process's
    main thread (a render worker); elsewhere the clock read between output chunks is the bound.

    The timer rings again every `REPEAT` seconds until its exception lands where the work can see
    it: one raised while a garbage-collection callback runs (hypothesis installs one; so may any
    library) is only printed by Python, and the compile would go on."""

    REPEAT = 0.05

    def __init__(self, seconds: float | None):
        self.seconds = seconds
        self.armed = False  # whether a ring stops the work
        self.installed = False
        self.previous: Any = None  # the handler this one replaced

    def _ring(self, *_: Any) -> None:
        if self.armed:
            raise _OverLimit(f"explaining took longer than its time limit ({self.seconds:.3g} s)")

    def __enter__(self) -> _alarm:
        if self.seconds is None or threading.current_thread() is not threading.main_thread():
            return self
        self.previous = signal.signal(signal.SIGALRM, self._ring)
        self.armed = self.installed = True
        signal.setitimer(signal.ITIMER_REAL, max(self.seconds, 1e-3), self.REPEAT)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.installed:
            self.armed = False  # first: a signal already on its way does nothing now
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self.previous if self.previous is not None else signal.SIG_DFL)
            self.installed = False


def _render(template: Any, variables: dict, prompt: str, deadline: float | None, limit: int) -> str:
    """The instrumented template's output, bounded in size (by `limit` pieces' markers) and time."""
    bound = len(prompt) + 64 * limit
    token = use_messages(variables.get("messages"))
    out: list[str] = []
    size = 0
    try:
        for chunk in template.generate(**variables):
            out.append(chunk)
            size += len(chunk)
            if size > bound:
                raise _OverLimit(_TOO_MANY)
            if deadline is not None and time.monotonic() > deadline:
                raise _OverLimit("explaining took longer than its time limit")  # off the main thread
    finally:
        reset_messages(token)
    return "".join(out)


# A frame is a piece being written (or the template's top level): [origin id, its own message,
# the message it inherits, {depth: (message, weak)} of the loops and ifs it is in, the message its
# text belongs to (derived from the three before), its call chain (an index into `chains`, -1: none)].
_PIECE, _OWN, _INHERITED, _CONTEXT, _MESSAGE, _CALLS = range(6)


def _message(frame: list) -> int | None:
    """The message a frame's text belongs to: its own, else what the loops and ifs around it handle
    (an `if` that tests a message by index only counts when nothing else says), else its caller's."""
    if frame[_OWN] is not None:
        return frame[_OWN]
    found = frame[_INHERITED]
    context = frame[_CONTEXT]
    for depth in sorted(context) if len(context) > 1 else context:
        index, weak = context[depth]
        if index is not None and not (weak and found is not None):
            found = index
    return found


def _read(marked: str, origins: list[Origin], prompt: str, continued: bool,
          limit: int | None = None) -> tuple[list[Row], list[Chain]]:
    """The pieces the markers in `marked` describe, checked to tile exactly `prompt` (a prefix of
    what the template wrote, when `continued`), and the call chains they refer to; it stops as soon
    as there are more than `limit` pieces (default `limits.MAX_EXPLAINED_PIECES`)."""
    limit = limits.MAX_EXPLAINED_PIECES if limit is None else limit
    rows: list[Row] = []
    chains: list[Chain] = []
    known: dict[Chain, int] = {}  # each chain once: the pieces of one call share it
    frames: list[list] = [[-1, None, None, {}, None, -1]]
    text_origin = [o.kind == "text" and o.line is not None for o in origins]
    written, cut = 0, len(prompt)
    parts = _MARKERS.split(marked)  # text, then the 6 groups of a marker, then text, …
    for i in range(0, len(parts), 7):
        text = parts[i]
        if text and written < cut:
            frame = frames[-1]
            if frame[_PIECE] < 0:
                raise _Unexplained("text outside any piece")
            if len(text) > cut - written:
                text = text[: cut - written]
            if not prompt.startswith(text, written):
                raise _Unexplained("the instrumented render differs from transformers'")
            if text_origin[frame[_PIECE]] and "\n" in text[:-1]:
                rows.extend(_lines(written, text, frame))
            else:
                rows.append((written, written + len(text), frame[_PIECE], frame[_MESSAGE], frame[_CALLS], 0))
            written += len(text)
            if len(rows) > limit:  # (a fast stop: counting on would only find more)
                raise _OverLimit(_TOO_MANY)
        elif text and frames[-1][_PIECE] < 0:
            raise _Unexplained("text outside any piece")
        if i + 1 >= len(parts):
            break
        piece, own, depth, index, weak, popped = parts[i + 1 : i + 7]
        if piece is not None:  # OPEN
            parent = frames[-1]
            piece = int(piece)
            calls = parent[_CALLS]
            if parent[_PIECE] >= 0 and origins[piece].parent != parent[_PIECE]:
                link = (calls, parent[_PIECE])
                calls = known.get(link, -2)
                if calls == -2:
                    calls = known[link] = len(chains)
                    chains.append(link)
            frame = [piece, int(own) if own else None, parent[_MESSAGE], {}, None, calls]
            frame[_MESSAGE] = _message(frame)
            frames.append(frame)
        elif depth is None and popped is None:  # END
            if len(frames) == 1:
                raise _Unexplained("a piece ends that never started")
            frames.pop()
        else:  # CTX or POP
            frame = frames[-1]
            context = frame[_CONTEXT]
            level = int(depth if depth is not None else popped)
            for stale in [d for d in context if d >= level]:
                del context[stale]
            if depth is not None:
                context[level] = (int(index) if index else None, weak == "w")
            frame[_MESSAGE] = _message(frame)
    if written < cut or (written > cut and not continued) or (len(frames) > 1 and not continued):
        raise _Unexplained("the instrumented render differs from transformers'")
    return rows, chains


def _used(rows: list[Row], chains: list[Chain], origins: list[Origin]) -> tuple[list[Row], list[Chain], list[Origin]]:
    """The rows with only the chains and origins they use (renumbered): a render worker sends the
    explanation back, and a large template has far more places than one prompt uses."""
    kept_chains = [False] * len(chains)
    for row in rows:  # each chain a row uses, and the chains it extends (once each)
        chain = row[4]
        while chain >= 0 and not kept_chains[chain]:
            kept_chains[chain] = True
            chain = chains[chain][0]
    chain_ids = {-1: -1}
    for old, keep in enumerate(kept_chains):  # in order: a chain comes after the one it extends
        if keep:
            chain_ids[old] = len(chain_ids) - 1
    used: dict[int, int] = {}
    for row in rows:
        used.setdefault(row[2], len(used))
    for old in chain_ids:
        if old >= 0:
            used.setdefault(chains[old][1], len(used))
    renumbered = [(s, e, used[o], m, chain_ids[c], k) for s, e, o, m, c, k in rows]
    new_chains = [(chain_ids[chains[old][0]], used[chains[old][1]]) for old in chain_ids if old >= 0]
    kept = [None] * len(used)
    for old, new in used.items():
        kept[new] = origins[old]._replace(parent=None)  # (its numbering is gone; only `_read` used it)
    return renumbered, new_chains, kept  # type: ignore[return-value]


def _lines(start: int, text: str, frame: list) -> list[Row]:
    """Template text cut after each newline: one row per template line."""
    out = []
    cursor = k = 0
    while cursor < len(text):
        newline = text.find("\n", cursor)
        stop = len(text) if newline < 0 else newline + 1
        out.append((start + cursor, start + stop, frame[_PIECE], frame[_MESSAGE], frame[_CALLS], k))
        cursor, k = stop, k + 1
    return out
