"""Read each field's delimiters off the rendered probe turns.

A field's close is what always follows its body (the common prefix of the text after it), cut to its
first markup token; its open is what always precedes it once the previous field's close is taken away
(the common suffix), the shortest tail that starts at a markup token (or a word), lies in the model's
output at least once, and occurs nowhere else. Text the generation prompt ends with that opens a
field (a prefilled `<think>`) is an open, not part of the start anchor."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import regex

from .locate import Span
from .probes import CALL_NAMES, Turn

# Special tokens and tags: <|im_end|>, <think>, </tool_call>, <｜tool▁sep｜>, [TOOL_CALLS], [/INST].
MARKUP = regex.compile(r"<[^<>\s]{1,80}>|\[/?[A-Z][A-Z_]{1,40}\]")
# Stands for a call's name in the text before its body, while opens are compared.
NAME = "\x00"


@dataclass
class Delimiter:
    """An open or a close: literal text, possibly with the call's name in it (NAME), and optional text
    before (opens) or after (closes) that only some occurrences have."""

    text: str
    optional: list[str] = field(default_factory=list)
    raw: str | None = None  # a regex of its own (a lookahead where nothing marks the start)

    @property
    def literal(self) -> bool:
        return NAME not in self.text and not self.optional and self.raw is None

    def pattern(self, name_class: str = r"[^\s<]+", opening: bool = True) -> str:
        if self.raw is not None:
            return self.raw
        body = escape(self.text).replace(NAME, f"(?P<name>{name_class})")
        if not self.optional:
            return body
        choices = "|".join(escape(o) for o in sorted(self.optional, key=len, reverse=True))
        return f"(?:{choices})?{body}" if opening else f"{body}(?:{choices})?"


@dataclass
class Occurrence:
    """A field's body in one turn, with the text between it and its neighbours."""

    turn: Turn
    span: Span
    before: str  # from the previous boundary (start of the turn text, or the previous field's body end)
    before_start: int
    after: str  # up to the next field's body (or the end of the output)


def occurrences(turns: list[Turn]) -> dict[str, list[Occurrence]]:
    """Every field body of every turn, by field."""
    out: dict[str, list[Occurrence]] = {}
    for turn in turns:
        spans = turn.spans
        for i, span in enumerate(spans):
            start = spans[i - 1].end if i else 0
            end = spans[i + 1].start if i + 1 < len(spans) else len(turn.text)
            before = turn.text[start : span.start]
            if span.name_at is not None and span.name_at >= start:
                name = CALL_NAMES[span.calls[0]]
                cut = span.name_at - start
                before = before[:cut] + NAME + before[cut + len(name) :]
            out.setdefault(span.field, []).append(Occurrence(turn, span, before, start, turn.text[span.end : end]))
    return out


def escape(text: str) -> str:
    """`text` as a regex: only the characters regexes treat specially are escaped (spaces stay
    readable), and newlines and tabs are written as \\n and \\t."""
    return regex.sub(r"[.^$*+?{}\[\]\\|()]", lambda m: "\\" + m.group(), text).replace("\n", "\\n").replace("\t", "\\t")


# ----- closes ------------------------------------------------------------------------------------


def choose_close(found: list[Occurrence]) -> str | None:
    """The close: the shortest start of the common text after every body that ends at a markup
    token (or all of it when it has none); None when nothing always follows."""
    common = os.path.commonprefix([o.after for o in found]).strip()
    if not common:
        return None
    first = MARKUP.search(common)
    return common[: first.end()] if first else common


# ----- opens -------------------------------------------------------------------------------------


def remainders(found: list[Occurrence], closes: dict[str, str | None]) -> list[tuple[Occurrence, int]]:
    """For each occurrence, where the text before it starts once the previous field's close (and the
    whitespace around it) is taken away."""
    out = []
    for occurrence in found:
        text = occurrence.before
        skip = len(text) - len(text.lstrip())
        previous = _previous_field(occurrence)
        close = closes.get(previous) if previous else None
        if close and text[skip:].startswith(close):
            skip += len(close)
        out.append((occurrence, skip))
    return out


def _previous_field(occurrence: Occurrence) -> str | None:
    spans = occurrence.turn.spans
    index = spans.index(occurrence.span)
    return spans[index - 1].field if index else None


def choose_open(name: str, found: list[Occurrence], closes: dict[str, str | None], turns: list[Turn],
                named: bool) -> Delimiter | None:  # fmt: skip
    """The shortest eligible tail of the common text before every body (see the module docstring);
    `named` when the call's name is written before the body (the open must hold it)."""
    parts = remainders(found, closes)
    texts = [o.before[skip:] for o, skip in parts]
    common = _common_suffix(texts).rstrip()
    if not common.strip():
        return None
    starts = _starts(common)
    for start in starts:
        candidate = common[start:]
        if named and NAME not in candidate:
            continue
        if _eligible(name, candidate, found, closes, turns):
            return Delimiter(candidate)
    return None


def _starts(text: str) -> list[int]:
    """Where an open may start, shortest first: at a markup token, then after whitespace or at the start."""
    markup = sorted({m.start() for m in MARKUP.finditer(text)}, reverse=True)
    words = sorted({m.end() for m in regex.finditer(r"\s+", text)} | {len(text) - len(text.lstrip())}, reverse=True)
    return markup + [w for w in words if w not in markup and w < len(text)]


def _eligible(name: str, candidate: str, found: list[Occurrence], closes: dict[str, str | None],
              turns: list[Turn]) -> bool:  # fmt: skip
    """The candidate lies in the output at least once, never straddles the prompt and the output, and
    matches nowhere but before this field's bodies (or an empty region of it)."""
    in_output = False
    for occurrence in found:
        trailing = len(occurrence.before) - len(occurrence.before.rstrip())
        end = occurrence.span.start - trailing
        start = end - len(candidate.replace(NAME, CALL_NAMES[occurrence.span.calls[0]] if occurrence.span.calls else ""))
        offset = occurrence.turn.offset
        if start < offset < end:
            return False
        in_output = in_output or start >= offset
    if not in_output:
        return False
    pattern = regex.compile(Delimiter(candidate).pattern(r"[\w.\-]+"))
    close = closes.get(name)
    for turn in turns:
        bodies = {s.start for s in turn.spans if s.field == name}
        for match in pattern.finditer(turn.text, turn.header_start):
            rest = turn.text[match.end() :]
            body_at = match.end() + len(rest) - len(rest.lstrip())
            if body_at in bodies:
                continue
            if close and rest.lstrip().startswith(close):
                continue  # an empty region: a prefilled <think></think>
            return False
    return True


def _common_suffix(texts: list[str]) -> str:
    return os.path.commonprefix([t[::-1] for t in texts])[::-1]


# ----- the start anchor --------------------------------------------------------------------------


def start_anchor(turns: list[Turn], opens: list[Delimiter]) -> list[str]:
    """Where the model's turn begins in the prompt, per context: the generation prompt up to the
    first field it prefills (or, when the template adds none, the prompt's tail after the last
    message). Candidates that end with another one are dropped: the shorter ends at the same place."""
    patterns = [regex.compile(o.pattern(r"[\w.\-]+")) for o in opens]
    candidates: list[str] = []
    for turn in turns:
        text = turn.text
        end = len(turn.tail)
        if turn.header:
            start = turn.header_start
        else:
            # No generation prompt: the prompt's last markup token (what closes the last message,
            # like [/INST]); text before it may be that message's own (a JSON tool result).
            tokens = list(MARKUP.finditer(text, 0, end))
            start = tokens[-1].start() if tokens else len(turn.tail) - len(turn.tail.lstrip())
        for pattern in patterns:
            match = pattern.search(text, start, end)
            if match is not None:
                end = min(end, match.start())
        anchor = text[start:end]
        if anchor.strip() and anchor not in candidates:
            candidates.append(anchor)
    return [c for c in candidates if not any(o != c and c.endswith(o) for o in candidates)]
