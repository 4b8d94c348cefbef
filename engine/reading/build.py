"""Assemble a response template from the delimiters read off the probe turns: each field's open and
close, the content parser and transform of tool calls, the implicit field and the start anchor.
Every field the turns do not show is left out, with why."""

from __future__ import annotations

from dataclasses import dataclass, field

import regex

from .calls import CallShape, call_parser, call_shape, notes_for
from .delimiters import ID, NAME, Delimiter, Occurrence, choose_open, common_close, end_of_turn, occurrences, start_anchor
from .text import boundary_prefix, escape, shortest_close
from .leftovers import absorb_leftovers
from .probes import FIELDS, Turn

# The order keys are written in (the presets' order: delimiters, repetition, then parsing).
_KEY_ORDER = ["open", "open_pattern", "close", "close_pattern", "repeats", "join", "content", "content_args",
              "transform_each", "transform"]  # fmt: skip


@dataclass
class Built:
    """The drafted spec (None when no field could be drafted), and per field how it was read or why
    it was left out."""

    spec: dict | None
    notes: dict[str, list[str]] = field(default_factory=dict)
    left_out: dict[str, str] = field(default_factory=dict)
    implicit: str | None = None
    opens: dict[str, Delimiter | None] = field(default_factory=dict)
    closes: dict[str, Delimiter | None] = field(default_factory=dict)
    calls: CallShape | None = None
    anchors: list[str] = field(default_factory=list)
    # The template writes text after the implicit field's close (Gemma's "<end_of_turn>\n" when the
    # eos token is another one): the field repeats, so that text cannot replace the field's own.
    trailing: str | None = None

    def assemble(self) -> None:
        """Write `spec` from the delimiters."""
        fields: dict[str, dict] = {}
        for name in FIELDS:
            if name not in self.opens or name in self.left_out:
                continue
            spec: dict = {}
            if (opened := self.opens[name]) is not None:
                spec.update(opened.spec("open"))
            if (closed := self.closes.get(name)) is not None:
                spec.update(closed.spec("close"))
            if name == "tool_calls":
                assert self.calls is not None
                spec.update(call_parser(self.calls))
            else:
                spec["content"] = "text"
            if name == self.implicit and (sum(1 for n in self.opens if n not in self.left_out) > 1 or self.trailing):
                # Text around other regions may come in several stretches (the newline between two
                # calls, the newline after the close): join them, or a later stretch would replace
                # the text before it.
                spec.update({"repeats": True, "join": ""})
            fields[name] = {k: spec[k] for k in sorted(spec, key=_KEY_ORDER.index)}
        if not fields:
            self.spec = None
            return
        anchor: dict = {}
        if self.anchors:
            anchor = {"start_anchor": self.anchors[0] if len(self.anchors) == 1 else list(self.anchors)}
        self.spec = {"version": 1, "defaults": {"role": "assistant"}, **anchor, "fields": fields}


def build(turns: list[Turn], missing: dict[str, str], stop_tokens: list[str]) -> Built:
    """The draft from the primary turns. `missing` holds why each field the turns never show is absent."""
    built = Built(None, {name: [] for name in FIELDS})
    found = occurrences(turns)
    for name in FIELDS:
        if name not in found:
            built.left_out[name] = missing.get(name, "not written")
    if "tool_calls" in found:
        built.calls = call_shape(found["tool_calls"], built.notes["tool_calls"], built.left_out)
        built.notes["tool_calls"] += notes_for(built.calls) if built.calls else []
    # The shortest close (up to the first markup token): text after it that the implicit field would
    # take is attached later (engine.reading.leftovers).
    commons = {name: shortest_close(c) if (c := common_close(found[name])) else None for name in found}
    for name in found:
        if name in built.left_out:
            continue
        needs = "" if name != "tool_calls" else (NAME if built.calls.name_outside else "") + (ID if built.calls.id_outside else "")  # type: ignore[union-attr]
        built.opens[name] = choose_open(name, found[name], commons, turns, needs)
        if needs and built.opens[name] is None:
            built.left_out[name] = "the call's name is written before its body, but no text around it marks where a call starts"
    _implicit(built)
    for name in built.opens:
        if name not in built.left_out:
            built.closes[name] = _close(name, found[name], commons[name], built, stop_tokens)
    if built.implicit is not None and built.implicit not in built.left_out:
        after = _after_close(found[built.implicit], built.closes.get(built.implicit))
        if after:
            built.trailing = after[1]
            built.notes[built.implicit].append(
                f"the template writes {after[1]!r} after {after[0]!r}, which the stop tokens do not cut off, so the "
                "field repeats (joined): text after the close cannot replace what came before it")
    active = [o for n, o in built.opens.items() if o is not None and n not in built.left_out]
    built.anchors = start_anchor(turns, active)
    if not built.anchors and active:
        built.notes["content"].append("no text marks where the model's turn starts in the prompt")
    built.assemble()
    if built.spec is not None and built.implicit is not None:
        absorb_leftovers(built, turns)
    return built


def _implicit(built: Built) -> None:
    """At most one field may have no open: it takes the text no other region claims."""
    openless = [n for n in FIELDS if n in built.opens and built.opens[n] is None and n not in built.left_out]
    calls = built.calls
    if "tool_calls" in openless and calls is not None and calls.first_key and len(openless) > 1:
        # The calls are written with nothing before them (Llama 3.1's bare JSON): open where the JSON
        # starts, without consuming it.
        bracket = r"\[\s*\{" if calls.listed else r"\{"
        built.opens["tool_calls"] = Delimiter("", raw=f"(?={bracket}\\s*\"{escape(calls.first_key)}\"\\s*:)")
        built.notes["tool_calls"].append(
            f"nothing marks where a call starts, so the field opens where a JSON object starting with "
            f"\"{calls.first_key}\" begins (a lookahead, which some other regex engines lack)"
        )
        openless.remove("tool_calls")
    if not openless:
        return
    keep = "content" if "content" in openless else openless[0]
    built.implicit = keep
    for name in openless:
        if name != keep:
            built.left_out[name] = f"nothing marks where it starts (like {keep}, it has no opening text), so the two cannot be told apart"


def _close(name: str, found: list[Occurrence], common: str | None, built: Built, stop_tokens: list[str]) -> Delimiter | None:
    """The field's close: what always follows its body, up to the next field's open (and, when no
    field takes leftover text, only its first markup token). Calls written back to back with nothing
    between them close where the next call opens. The implicit field also closes at every stop token
    an output ends with."""
    closed: Delimiter | None = None
    if common:
        for other, opened in built.opens.items():
            if opened is not None and other not in built.left_out:
                match = regex.search(opened.regex(named=False), common)
                if match is not None and match.end() > match.start():
                    common = common[: match.start()].rstrip()
        closed = Delimiter(common) if common else None
    elif name == "tool_calls" and any(o.next_field == "tool_calls" for o in found):
        closed = _between_calls(found, built)
    if name == built.implicit:
        ends = [t for t in end_of_turn(found, stop_tokens) if closed is None or t != closed.text]
        if closed is None and ends:
            closed = Delimiter(ends[0], alternatives=ends[1:])
        elif closed is not None and closed.raw is None and ends:
            closed.alternatives = ends
    return closed


def _after_close(found: list[Occurrence], closed: Delimiter | None) -> tuple[str, str] | None:
    """The implicit field's close and what an output holds after it, when it ends with text after it
    (a turn separator the template writes and the stop tokens do not cut off)."""
    if closed is None or closed.raw is not None:
        return None
    for occurrence in found:
        if occurrence.next_field is not None:
            continue
        rest = occurrence.after.lstrip()
        for close in (closed.text, *closed.alternatives):
            if close and rest.startswith(close) and rest[len(close) :]:
                return close, rest[len(close) :]
    return None


def _between_calls(found: list[Occurrence], built: Built) -> Delimiter | None:
    """A close for calls that follow each other with no text of their own between them: a lookahead
    for the next call's open, or what ends the last call."""
    opened = built.opens.get("tool_calls")
    if opened is None:
        return None
    ends = [o.after.strip() for o in found if o.next_field != "tool_calls"]
    end = boundary_prefix(ends) if ends else ""
    if opened.raw is not None:
        # Nothing marks where a call starts and nothing separates two calls ("}{"): a close where
        # the next one opens would fire where each call opens, so only the last call can end.
        built.notes["tool_calls"].append(
            "calls are written back to back with nothing marking where one ends and the next starts, "
            "which a response template cannot split: only a message's last call parses back"
        )
        return Delimiter(end) if end else None
    built.notes["tool_calls"].append("nothing separates one call from the next, so a call closes where the next one opens")
    return Delimiter("", raw=f"(?={opened.regex(named=False)})" + (f"|{escape(end)}" if end else ""))
