"""`chat_lint.history_calls`: the history writes tool calls unlike what the tool instructions tell
the model to write. The model writes what it is told (and what it was trained on); a parsed call
appended to the conversation is then rendered in another shape, so the next turn shows the model
calls it never wrote. A bug in the chat template's history rendering, shown with both texts side by
side and the template line that writes the history's call."""

from __future__ import annotations

import textwrap

from ..jinja_analysis import lex
from ..reading.match import history_disagreement
from ..reading.probes import ARGUMENTS, CALL_IDS, CALL_NAMES
from .context import CheckContext
from .results import CheckResult, Location
from .template_fields import analyse_fields

NAME = "chat_lint.history_calls"
_COLUMN = 46
# Text a template writes around a call that says nothing about where (a newline, a quote).
_MIN_PIECE = 4


def history_calls(ctx: CheckContext) -> list[CheckResult]:
    """A failure when the history's calls do not parse with the library format the instructions
    describe; nothing when they agree or the instructions describe no library format."""
    found = history_disagreement(ctx.chat_template, ctx.special_tokens, ctx.template_kwargs, ctx.stop_tokens)
    if found is None:
        return []
    line = history_line(ctx.chat_template, found.history)
    details = (
        f"The tool instructions tell the model to write calls in the `{found.format}` format, but the chat template "
        f"writes calls in history another way: {found.parsed[0]} of {found.parsed[1]} history turns with calls parse "
        "with what the model is told. A parsed call appended to the conversation renders unlike what the model "
        "wrote, so the model reads calls it never made. Make the history write calls as the instructions say "
        "(the draft follows the instructions).\n\n"
        + side_by_side(("What the model is told to write", found.told),
                       (f"What the history writes ({found.probe})", found.history))  # fmt: skip
    )
    return [CheckResult(NAME, "fail", details, Location("chat_template", line, None))]


def side_by_side(left: tuple[str, str], right: tuple[str, str], width: int = _COLUMN) -> str:
    """Two titled texts in two columns (each wrapped at `width`)."""

    def column(title: str, text: str) -> list[str]:
        lines = [title, "-" * min(width, len(title))]
        for raw in text.splitlines() or [""]:
            lines += textwrap.wrap(raw, width, replace_whitespace=False, drop_whitespace=False) or [""]
        return lines

    a, b = column(*left), column(*right)
    rows = max(len(a), len(b))
    a += [""] * (rows - len(a))
    b += [""] * (rows - len(b))
    return "\n".join(f"{x.ljust(width)} │ {y}".rstrip() for x, y in zip(a, b))


def history_line(source: str, history: str) -> int | None:
    """The line of the template text that writes the history's call: the line holding the longest
    piece of the call's literal text (what is not the call's name or arguments), after the first
    place the template reads `tool_calls` from an assistant message; that place when none is found."""
    try:
        reads = analyse_fields(source).message_reads.get("tool_calls", [])
        tokens = lex(source)
    except Exception:  # noqa: BLE001 - a template that does not parse has no line to show
        return None
    first = min((r.line for r in reads if r.assistant), default=1)
    pieces = sorted({p for p in _literal_pieces(history) if len(p.strip()) >= _MIN_PIECE}, key=len, reverse=True)
    for piece in pieces:
        for variant in (piece, piece.encode("unicode_escape").decode("ascii", "ignore")):
            for token in tokens:
                at = token.value.find(variant) if token.line >= first and token.kind in ("data", "string") else -1
                if at >= 0:
                    return token.line + token.value.count("\n", 0, at)
    return first if reads else None


def _literal_pieces(history: str) -> list[str]:
    """The call's text cut at the probe's name and argument values (what the template prints from the
    message), leaving the text the template writes itself."""
    cuts = [*CALL_NAMES, *CALL_IDS]
    for arguments in ARGUMENTS:
        cuts += [k for k in arguments] + [str(v) for v in arguments.values() if not isinstance(v, (dict, list))]
    pieces = [history]
    for cut in sorted(set(cuts), key=len, reverse=True):
        pieces = [part for piece in pieces for part in piece.split(cut)]
    return pieces
