"""Text a draft's delimiters leave over, which the implicit field would take (DeepSeek's
`<｜tool▁calls▁begin｜>` before the first call, `<｜tool▁calls▁end｜>` after the last).

Each probe turn is traced with the draft; text the implicit field takes that is not its own
sentinel is attached to the delimiter next to it: what every occurrence has becomes part of the
delimiter; markup only some occurrences have becomes a close of the implicit field, which drops it."""

from __future__ import annotations

from dataclasses import dataclass

from ..trace import Segment, Trace
from .delimiters import Delimiter
from .text import MARKUP, boundary_prefix, boundary_suffix
from .probes import MARKS, SENTINELS, Turn


@dataclass
class _Piece:
    text: str
    before: Segment | None  # the segment on its left (None: where parsing starts)
    after: Segment | None  # the segment on its right (None: the end of the output)


def absorb_leftovers(built, turns: list[Turn]) -> None:  # noqa: ANN001 - a Built (import cycle)
    """Attach leftover text to the opens and closes next to it, then reassemble the spec. Text that
    cannot be attached is noted on the implicit field."""
    implicit = built.implicit
    sentinel = SENTINELS.get(implicit)
    before_open: dict[str, list[str]] = {}
    after_close: dict[str, list[str]] = {}
    stranded: list[str] = []
    for turn in turns:
        segments = _segments(built.spec, turn)
        pieces = _pieces(turn, segments, implicit, sentinel)
        claimed: dict[tuple[str, int], str] = {}
        for piece in pieces:
            right, left = piece.after, piece.before
            text = piece.text
            if not _small(text):
                stranded.append(text.strip())  # prose (a turn the template writes after the reply), not a delimiter
                continue
            if left is not None and left.kind == "close" and left.field != implicit:
                # Closing tags right after a close belong to it (Qwen3-Coder's </tool_call> after </function>).
                cut = _closing_tags(text) if right is not None and right.kind == "open" else len(text)
                if text[:cut].strip():
                    claimed["close", left.end] = text[:cut].rstrip()
                text = text[cut:]
            if not text.strip():
                continue
            if right is not None and right.kind == "open" and right.field != implicit:
                claimed["open", right.start] = text.lstrip()
            else:
                stranded.append(text.strip())
        for segment in segments:
            if segment.kind == "open" and segment.field != implicit:
                before_open.setdefault(segment.field, []).append(claimed.get(("open", segment.start), ""))
            elif segment.kind == "close" and segment.field != implicit:
                after_close.setdefault(segment.field, []).append(claimed.get(("close", segment.end), ""))
    changed = False
    extra_ends: list[str] = []
    for name, texts in before_open.items():
        opened = built.opens.get(name)
        if any(texts) and opened is not None and opened.raw is None:
            common = boundary_suffix(texts)
            built.opens[name] = Delimiter(common + opened.text, classes=opened.classes)
            extra_ends += [t[: len(t) - len(common)] for t in texts]
            changed = True
    for name, texts in after_close.items():
        closed = built.closes.get(name)
        if any(texts) and closed is not None and closed.raw is None and not closed.alternatives:
            common = boundary_prefix(texts)
            built.closes[name] = Delimiter(closed.text + common)
            extra_ends += [t[len(common) :] for t in texts]
            changed = True
    # Markup only some occurrences have (<｜tool▁calls▁begin｜> before the first call): the implicit
    # field closes at it, which drops it. (An optional part of a delimiter would not stream: the parser
    # commits a close before an optional tail split across chunks has arrived.)
    ends = [t.strip() for t in extra_ends if t.strip()]
    for text in dict.fromkeys(ends):
        if _markup_only(text):
            closed = built.closes.get(implicit)
            if closed is None:
                built.closes[implicit] = Delimiter(text)
            elif closed.raw is None and text != closed.text and text not in closed.alternatives:
                closed.alternatives.append(text)
        else:
            stranded.append(text)
    if changed:
        built.notes[implicit].append("text the template writes around other fields is read as part of their delimiters")
        built.assemble()
    for text in dict.fromkeys(t for t in stranded if t):
        built.notes[implicit].append(f"the template writes {text!r} where no delimiter can take it, so it lands in {implicit}")


def _closing_tags(text: str) -> int:
    """How much of the start of `text` is closing tags (`</…>`) and whitespace."""
    at = len(text) - len(text.lstrip())
    while (match := MARKUP.match(text, at)) is not None and match.group().startswith("</"):
        at = match.end() + len(text[match.end() :]) - len(text[match.end() :].lstrip())
    return at


def _small(text: str) -> bool:
    """Markup with at most one word outside it: what a delimiter may be made of."""
    return len(MARKUP.sub(" ", text).split()) <= 1


def _markup_only(text: str) -> bool:
    return not MARKUP.sub("", text).strip()


def _segments(spec: dict, turn: Turn) -> list[Segment]:
    """The draft's segments over the turn's text (the prompt's part after the anchor, then the output)."""
    trace = Trace(spec, prompt=turn.prompt, tools=turn.probe.context.tools)
    trace.feed(turn.output)
    trace.finalize()
    shift = len(turn.prompt) - len(turn.tail)
    out = [Segment(s.start - shift, s.end - shift, s.kind, s.field) for s in trace.prefix_segments() if s.end > shift]
    out += [Segment(s.start + turn.offset, s.end + turn.offset, s.kind, s.field) for s in trace.segments()]
    return out


def _pieces(turn: Turn, segments: list[Segment], implicit: str, sentinel: str | None) -> list[_Piece]:
    """Non-blank text the implicit field takes besides its own sentinel, with its neighbours."""
    pieces: list[_Piece] = []
    runs: list[list[int]] = []  # [start, end, index of the segment before, index after]
    for i, segment in enumerate(segments):
        if segment.kind == "body" and segment.field == implicit:
            if runs and runs[-1][1] == segment.start:
                runs[-1][1] = segment.end
                runs[-1][3] = i + 1
            else:
                runs.append([segment.start, segment.end, i - 1, i + 1])
    for start, end, left, right in runs:
        text = turn.text[start:end]
        before = segments[left] if left >= 0 else None
        after = segments[right] if right < len(segments) else None
        if any(other in text for name, other in MARKS.items() if name != implicit):
            continue  # a field the draft leaves out (reported there)
        at = text.find(sentinel) if sentinel else -1
        parts = [(text, before, after)] if at < 0 else [(text[:at], before, None), (text[at + len(sentinel):], None, after)]  # type: ignore[arg-type]
        pieces += [_Piece(t, b, a) for t, b, a in parts if t.strip()]
    return pieces
