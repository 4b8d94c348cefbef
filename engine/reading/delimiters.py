"""Read each field's delimiters off the rendered probe turns.

A field's close is what always follows its body (the common start of the text after it); its open
is what always precedes it once the previous field's close is taken away (the common end): the
shortest tail that starts at a markup token (or a word), is the model's to write (it lies in the
output at least once, or marks an empty region the template writes), and occurs nowhere else. Text
the generation prompt ends with that opens a field (a prefilled `<think>`) is an open, not part of
the start anchor."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import regex

from .locate import Span
from .text import MARKUP, common_suffix, escape, open_starts
from .probes import CALL_IDS, CALL_NAMES, Turn

# Stand for a call's name and id in the text before its body while opens are compared; in the
# response template they become the named groups `name` and `id`.
NAME, ID = "\x00", "\x01"
PLACEHOLDERS = {NAME: "name", ID: "id"}
# Stands for a number that differs from call to call (Kimi's functions.NAME:0, functions.NAME:1).
DIGITS = "\x02"


@dataclass
class Delimiter:
    """An open or a close: literal text (possibly holding a call's NAME and ID), other texts that
    count as well (the end-of-turn tokens that close the implicit field), or a regex of its own (a
    lookahead)."""

    text: str
    alternatives: list[str] = field(default_factory=list)
    raw: str | None = None
    classes: dict[str, str] = field(default_factory=dict)  # placeholder -> character class of its group

    @property
    def literal(self) -> bool:
        return self.raw is None and not any(p in self.text for p in (*PLACEHOLDERS, DIGITS))

    def regex(self, named: bool = True) -> str:
        """The regex; `named=False` leaves the name and id groups unnamed (for a lookahead in a close,
        whose captures would otherwise replace the open's)."""
        if self.raw is not None:
            return self.raw
        body = escape(self.text)
        for mark, group in PLACEHOLDERS.items():
            if mark in body:
                start = f"(?P<{group}>" if named else "(?:"
                body = body.replace(mark, f"{start}{self.classes.get(mark) or _class_after(self.text, mark)})", 1)
        body = body.replace(DIGITS, r"\d+")
        return "|".join([body, *(escape(a) for a in self.alternatives)])

    def spec(self, key: str) -> dict:
        """The response template keys for it: `open` / `close` (a literal or a list of them), or
        `open_pattern` / `close_pattern`."""
        if self.literal:
            return {key: [self.text, *self.alternatives] if self.alternatives else self.text}
        return {f"{key}_pattern": self.regex()}


def _class_after(text: str, mark: str) -> str:
    """The characters a name or id may have: anything up to the character that follows it."""
    at = text.index(mark) + 1
    after = text[at : at + 1]
    return r"[^\s" + escape(after) + "]+" if after and not after.isspace() else r"[^\s<]+"


@dataclass
class Occurrence:
    """A field's body in one turn, with the text between it and its neighbours (calls' names and ids
    written outside the body replaced by placeholders)."""

    turn: Turn
    span: Span
    before: str  # from the previous body's end (or the start of the turn text)
    start: int  # where `before` starts in the turn's text
    after: str  # up to the next body (or the end of the output)
    next_field: str | None

    @property
    def previous_field(self) -> str | None:
        spans = self.turn.spans
        index = spans.index(self.span)
        return spans[index - 1].field if index else None


def occurrences(turns: list[Turn]) -> dict[str, list[Occurrence]]:
    """Every field body of every turn, by field."""
    out: dict[str, list[Occurrence]] = {}
    for turn in turns:
        spans = turn.spans
        for i, span in enumerate(spans):
            start = spans[i - 1].end if i else 0
            end = spans[i + 1].start if i + 1 < len(spans) else len(turn.text)
            before = turn.text[start : span.start]
            for at, mark, word in sorted(_marks(span), reverse=True):
                if at >= start:
                    before = before[: at - start] + mark + before[at - start + len(word) :]
            following = spans[i + 1].field if i + 1 < len(spans) else None
            out.setdefault(span.field, []).append(Occurrence(turn, span, before, start, turn.text[span.end : end], following))
    return out


def _marks(span: Span) -> list[tuple[int, str, str]]:
    marks = []
    if span.name_at is not None:
        marks.append((span.name_at, NAME, CALL_NAMES[span.calls[0]]))
    if span.id_at is not None:
        marks.append((span.id_at, ID, CALL_IDS[span.calls[0]]))
    return marks


# ----- closes ------------------------------------------------------------------------------------


def common_close(found: list[Occurrence]) -> str | None:
    """What always follows the field's body (trimmed), or None."""
    return os.path.commonprefix([o.after for o in found]).strip() or None


def end_of_turn(found: list[Occurrence], stop_tokens: list[str]) -> list[str]:
    """The stop tokens the outputs end with (what closes the implicit field besides its own close)."""
    seen = []
    for occurrence in found:
        output = occurrence.turn.output.rstrip()
        seen += [t for t in stop_tokens if t and output.endswith(t) and t not in seen]
    return seen


# ----- opens -------------------------------------------------------------------------------------


def remainder(occurrence: Occurrence, closes: dict[str, str | None]) -> str:
    """The text before a body once the previous field's close (and the whitespace around it) is gone."""
    text = occurrence.before.lstrip()
    close = closes.get(occurrence.previous_field) if occurrence.previous_field else None
    if close and text.startswith(close):
        text = text[len(close) :]
    return text


def choose_open(name: str, found: list[Occurrence], closes: dict[str, str | None], turns: list[Turn],
                needs: str = "") -> Delimiter | None:  # fmt: skip
    """The shortest eligible tail of the common text before every body (see the module docstring);
    `needs` are placeholders the open must hold (a call's name written before its body). Numbers
    that differ between calls are compared as any number."""
    texts = [remainder(o, closes) for o in found]
    common = common_suffix(texts).rstrip()
    if needs and not all(mark in common for mark in needs):
        common = common_suffix([regex.sub(r"\d+", DIGITS, t) for t in texts]).rstrip()
    if not common.strip():
        return None
    for start in open_starts(common):
        candidate = common[start:]
        if all(mark in candidate for mark in needs) and _eligible(name, candidate, found, closes, turns):
            return Delimiter(candidate)
    return None


def _eligible(name: str, candidate: str, found: list[Occurrence], closes: dict[str, str | None],
              turns: list[Turn]) -> bool:  # fmt: skip
    """The candidate never straddles the prompt and the output, is the model's to write (in the
    output at least once, marking an empty region, or prefilled only when the field follows), and
    matches nowhere but before this field's bodies or an empty region of it."""
    pattern = regex.compile(Delimiter(candidate, classes={NAME: r"[\w.\-]+", ID: r"\w+"}).regex())
    in_output = False
    for occurrence in found:
        text, offset = occurrence.turn.text, occurrence.turn.offset
        end = occurrence.span.start - (len(occurrence.before) - len(occurrence.before.rstrip()))
        match = next((m for m in pattern.finditer(text, occurrence.start, end) if m.end() == end), None)
        if match is None:
            return False
        start = match.start()
        if start < offset < end or (end <= offset and start <= anchor_start(occurrence.turn)):
            return False  # it straddles the prompt and the output, or it is the whole generation prompt
        in_output = in_output or start >= offset
    close = closes.get(name)
    empty_region = False
    for turn in turns:
        bodies = {s.start for s in turn.spans if s.field == name}
        for match in pattern.finditer(turn.text, turn.header_start):
            rest = turn.text[match.end() :]
            if match.end() + len(rest) - len(rest.lstrip()) in bodies:
                continue
            if close and rest.lstrip().startswith(close):
                empty_region = True  # an empty region the template writes (a prefilled <think></think>)
                continue
            return False
    # Or the generation prompt prefills it, and the history leaves it out when the field is absent
    # (MiniMax's "<think>\n"): text tied to this field.
    prefilled = any(t.prefilled and candidate in t.prefilled for t in turns)
    return in_output or empty_region or prefilled


# ----- the start anchor --------------------------------------------------------------------------


def start_anchor(turns: list[Turn], opens: list[Delimiter]) -> list[str]:
    """Where the model's turn begins in the prompt, per context: the generation prompt up to the
    first field it prefills (or, when the template adds none, the prompt's tail after the last
    message). Candidates that end with another one are dropped: the shorter ends at the same place."""
    patterns = [regex.compile(o.regex()) for o in opens]
    candidates: list[str] = []
    for turn in turns:
        text = turn.text
        start, end = anchor_start(turn), len(turn.tail)
        for pattern in patterns:
            match = pattern.search(text, start, end)
            if match is not None and match.end() > match.start():
                end = min(end, match.start())
        anchor = text[start:end]
        if anchor.strip() and anchor not in candidates:
            candidates.append(anchor)
    return [c for c in candidates if not any(o != c and c.endswith(o) for o in candidates)]


def anchor_start(turn: Turn) -> int:
    """Where the start anchor may begin in the turn's text: the generation prompt; without one, what
    follows the last message's closing token (Command R's <|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|> after
    <|END_OF_TURN_TOKEN|>), or that token itself when it is the only one ([/INST]). Text before it may
    be the message's own (a JSON tool result)."""
    if turn.header:
        return turn.header_start
    tokens = list(MARKUP.finditer(turn.text, 0, len(turn.tail)))
    return tokens[min(1, len(tokens) - 1)].start() if tokens else len(turn.tail) - len(turn.tail.lstrip())
