"""Trace: feed model output to transformers' `ResponseParser` and say exactly where every character went.

The parser tells us *what* happened (its events: a region opened, a chunk of text joined it, it closed
with a value); the trace adds *where*: segments `(start, end, kind, field)` that tile the raw output,
so the playground can colour each region, frame its delimiters, strike through text the parser
dropped, and dim text it is still holding back.

How the spans are derived. The parser's events arrive in the order it consumed the text, so we walk
them with a cursor over the same text the parser holds (the prompt after the start anchor, then the
output): a `region_chunk` is the next `len(text)` characters; a `region_open` of an explicit field is
that field's open delimiter, found with the compiled spec's own pattern from the cursor (any text
before it was dropped, or was silent closes of the implicit region); a `region_close` is the close
delimiter at the cursor (or none, at the end of the text). Two things leave no event: text dropped
when no region is open, and a close of the implicit region when it had no text. Both can only sit
between the cursor and the parser's consumed position, which is the one private value we read
(`transformers_compat.consumed_position`), after each feed. Every step is checked against the text; a mismatch stops the
trace with an error instead of highlighting the wrong characters.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from transformers.utils.chat_parsing import ResponseParser
from transformers.utils.chat_parsing.response_templates import ResponseTemplate, load_response_template

from . import limits
from .diagnostics import Diagnostic, line_col, line_text
from .parse_failure import parse_failure
from .regex_bounds import NO_BUDGET, RegexBudget, RegexTimeout, runs_author_regexes
from .transformers_compat import TransformersChanged, consumed_position

SegmentKind = Literal["body", "open", "close", "discarded", "pending"]


class Segment(NamedTuple):
    """A stretch `[start, end)` of raw text and what the parser made of it. `field` is the region's
    field (for `pending`, the region the text joins unless it turns out to be a delimiter)."""

    start: int
    end: int
    kind: SegmentKind
    field: str | None

    def to_dict(self) -> dict:
        return {"start": self.start, "end": self.end, "kind": self.kind, "field": self.field}


class TraceOutOfSync(RuntimeError):
    """The parser consumed text in a way the trace cannot account for: a bug, or a transformers change."""


@dataclass(slots=True)
class TraceStep:
    """The state after one feed: the parser's events from this feed (unchanged), the pending
    (held-back) text, the message so far, and the segments, materialised on demand so that a
    step costs O(1) however long the output grows."""

    events: list[dict]
    message: dict
    pending: Segment | None
    _trace: Trace = field(repr=False)
    _count: int = field(repr=False)
    _last: tuple | None = field(repr=False)

    def segments(self) -> list[Segment]:
        """Segments over the output fed so far (pending text included), in output coordinates."""
        return self._trace._materialise(self._count, self._last, self.pending)

    @property
    def wrote_region(self) -> bool:
        """Whether text reached a region in this step (a region opened or grew): what "time to
        first region" measures."""
        return any(e["type"] in ("region_open", "region_chunk") for e in self.events)

    @property
    def message_changed(self) -> bool:
        """Whether a region closed in this step, so the message so far has a new value."""
        return any(e["type"] == "region_close" for e in self.events)


@dataclass
class TraceResult:
    """A whole traced output, in the shape the command line prints with --json."""

    message: dict
    events: list[dict]
    prefix_events: list[dict]
    segments: list[Segment]
    prefix_segments: list[Segment]
    diagnostics: list[Diagnostic]

    def to_dict(self) -> dict:
        return {
            "message": self.message,
            "events": self.events,
            "prefix_events": self.prefix_events,
            "segments": [s.to_dict() for s in self.segments],
            "prefix_segments": [s.to_dict() for s in self.prefix_segments],
            "diagnostics": [d.to_dict() for d in self.diagnostics],
        }


class Trace:
    """Streams model output through transformers' `ResponseParser` and keeps exact spans.

    Usage:
        trace = Trace(template, prompt=prompt, tools=tools)
        trace.initial_events, trace.prefix_segments()   # what the prompt already opened
        for chunk in chunks:
            step = trace.feed(chunk)                      # events, message so far, segments
        step = trace.finalize()                           # trace.message is the final message
    Never raises on bad output: a region that fails to parse becomes an error diagnostic pinned to
    its span, and the trace ends with the message so far.
    """

    def __init__(self, template: dict | ResponseTemplate, prompt: str = "", tools: list | None = None,
                 regex_seconds: float | None = None, response_text: str | None = None):
        self.template: ResponseTemplate = load_response_template(template)
        # The response template's JSON, when known: a region that fails names the line of its field.
        self.response_text = response_text
        self.prompt = prompt
        self.tools = tools
        self.diagnostics: list[Diagnostic] = []
        self.events: list[dict] = []
        self.finished = False
        self._fields = self.template.fields
        self._implicit = self.template.implicit
        self._implicit_close = self._fields[self._implicit].close_re if self._implicit else None
        # Every author regex this trace runs (the parser's and its own) shares one time budget
        # (literal delimiters cannot backtrack: then there is nothing to time, and no cost per chunk).
        self._budget = RegexBudget(regex_seconds)
        self._needs_budget = runs_author_regexes(self.template)
        # Entered around every parser call (the prompt, each chunk, the end): one context object for
        # them all, never nested (a trace is fed one chunk at a time).
        self._bounded = self._budget.active() if self._needs_budget else NO_BUDGET
        self._parsed_prompt = ""
        self._offset = 0
        self.anchor_end = len(prompt)
        self.anchor_found = False  # whether the start anchor occurs in the prompt
        self.initial_events: list[dict] = []
        self._text = ""
        self._chunks: list[str] = []
        self._size = 0  # output characters fed
        self._cap = limits.MAX_OUTPUT_CHARS
        self.truncated = 0  # output characters refused over limits.MAX_OUTPUT_CHARS
        self.regex_timeout: RegexTimeout | None = None  # set when an author regex ran out of time
        self._segments: list[tuple] = []  # (start, end, kind, field, region_id) in buffer coordinates
        self._cursor = 0
        self._current = self._implicit  # the region text joins now (None: the null sink, text dropped)
        self._opened = False
        self._region_id = 0
        self._region_start = 0
        self._pending: tuple[int, int] | None = None
        self._ended = False
        # Closed regions' values as the parser accumulates them; `message` is the same with empty values
        # pruned, as the parser's finalize() does, so the message so far looks like the final one.
        self._values: dict = copy.deepcopy(self.template.defaults)
        self.message: dict = dict(self._values)
        with self._bounded:
            try:
                self._start(prompt, tools)
            except RegexTimeout as e:
                self._regex_stopped(e)

    def _start(self, prompt: str, tools: list | None) -> None:
        # The parser's buffer is the prompt after its last start anchor, then the output.
        self._parsed_prompt = self.template.truncate_past_last_anchor(prompt) if prompt else ""
        self._offset = len(self._parsed_prompt)
        self.anchor_end = len(prompt) - self._offset  # where parsing starts in the prompt
        self._text = self._parsed_prompt
        self.anchor_found = bool(prompt) and self.template.start_anchor_re.search(prompt) is not None
        if prompt and not self.anchor_found:
            self.diagnostics.append(
                Diagnostic(
                    "warning",
                    "The start anchor does not occur in the prompt, so the parser reads the whole prompt "
                    "as part of the assistant message.",
                    "response_template",
                    hint="Set start_anchor to the text the chat template writes right before the assistant's turn.",
                )
            )
        try:
            self._parser = ResponseParser(self.template, prefix=prompt, tools=tools)
        except RegexTimeout:
            raise
        except Exception as e:  # noqa: BLE001 - a prompt region that fails to parse
            self._error(f"The prompt's prefilled region could not be parsed: {e}", None, 0, self._offset)
            return
        self.initial_events = self._parser.initial_events
        self._after(self.initial_events, eos=False, record=False)

    # ----- public API -------------------------------------------------------------------------

    def feed(self, chunk: str) -> TraceStep:
        """Feed the next piece of model output; returns the parser's events for it and the new state.
        Output beyond `limits.MAX_OUTPUT_CHARS` is refused (counted in `truncated`): the trace ends
        there with an error."""
        if self.finished:
            raise RuntimeError("Trace already finalized")
        if not chunk:
            return self._step([])
        if self._size + len(chunk) > self._cap:
            return self._refuse(chunk)
        self._size += len(chunk)
        self._chunks.append(chunk)
        if self._ended:
            self._append(chunk)
            self._add(len(self._text) - len(chunk), len(self._text), "discarded", None)
            return self._step([])
        # As `_append`, inline: this runs for every chunk of every run (one character, at worst).
        text, self._text = self._text, ""
        before = len(text)
        text += chunk
        self._text = text
        if self._needs_budget:
            with self._bounded:
                return self._feed_parser(chunk, before)
        return self._feed_parser(chunk, before)

    def _feed_parser(self, chunk: str, before: int) -> TraceStep:
        try:
            try:
                events = self._parser.feed(chunk)
            except RegexTimeout:
                raise
            except Exception as e:  # noqa: BLE001 - a region that fails to parse on close
                return self._step(self._recover_feed(e, before, chunk))
            if not (len(events) == 1 and self._grew_body(events[0])):
                self._after(events, eos=False)
        except RegexTimeout as e:
            self._regex_stopped(e)
            return self._step([])
        return self._step(events)

    def finalize(self) -> TraceStep:
        """End of output: close open regions and produce the final message (as `parse_response`)."""
        if self.finished:
            raise RuntimeError("Trace already finalized")
        self.finished = True
        if self._ended:
            self._pending = None
            return self._step([])
        with self._bounded:
            try:
                try:
                    message, events = self._parser.finalize()
                except RegexTimeout:
                    raise
                except Exception as e:  # noqa: BLE001
                    return self._step(self._recover_finalize(e))
                self._after(events, eos=True)
            except RegexTimeout as e:
                self._regex_stopped(e)
                return self._step([])
        self.message = message
        return self._step(events)

    @property
    def full(self) -> bool:
        """Whether output was refused for being over `limits.MAX_OUTPUT_CHARS` (a runner should stop)."""
        return self.truncated > 0

    def segments(self) -> list[Segment]:
        """Segments tiling the output fed so far (pending text at the end)."""
        last = self._segments[-1] if self._segments else None
        return self._materialise(len(self._segments), last, self._pending_segment())

    def prefix_segments(self) -> list[Segment]:
        """Segments over the part of the prompt the parser read (after the start anchor), positioned
        in the prompt: a `<think>` the generation prompt opened, say."""
        shift = self.anchor_end
        out = []
        for start, end, kind, name, _ in self._segments:
            if start >= self._offset:
                break
            out.append(Segment(start + shift, min(end, self._offset) + shift, kind, name))
        if self._pending and self._pending[0] < self._offset:
            out.append(Segment(self._pending[0] + shift, self._offset + shift, "pending", self._current))
        return out

    @property
    def output(self) -> str:
        return self._text[self._offset :]

    def result(self) -> TraceResult:
        return TraceResult(
            self.message,
            list(self.events),
            list(self.initial_events),
            self.segments(),
            self.prefix_segments(),
            list(self.diagnostics),
        )

    # ----- the walk -----------------------------------------------------------------------------

    def _after(self, events: list[dict], eos: bool, record: bool = True) -> None:
        """Walk one feed's events, then account for what they do not show."""
        try:
            self._walk(events, eos)
            self._sync(eos)
        except (TraceOutOfSync, TransformersChanged) as e:
            self._error(f"Highlighting stopped: {e}", self._current, self._cursor, self._cursor)
        if record:
            self.events.extend(events)

    def _grew_body(self, event: dict) -> bool:
        """The common step, taken without the general walk: one chunk that extends the body segment
        at the cursor, all the parser committed (nothing held back). False (nothing changed) for
        anything else, which `_after` handles."""
        if event["type"] != "region_chunk":
            return False
        segments, cursor, chunk = self._segments, self._cursor, event["text"]
        last = segments[-1] if segments else None
        end = cursor + len(chunk)
        if (last is None or last[1] != cursor or last[2] != "body" or last[3] != event["field"] or last[4] != self._region_id
                or end != len(self._text) or consumed_position(self._parser) != end or not self._text.startswith(chunk, cursor)):  # fmt: skip
            return False
        segments[-1] = (last[0], end, "body", last[3], last[4])
        self._cursor = end
        self._pending = None
        self.events.append(event)
        return True

    def _walk(self, events: list[dict], eos: bool) -> None:
        text = self._text
        for i, event in enumerate(events):
            kind, name = event["type"], event["field"]
            if kind == "region_chunk":
                chunk = event["text"]
                if not text.startswith(chunk, self._cursor):
                    raise TraceOutOfSync(f"chunk {chunk!r} is not at position {self._cursor}")
                self._add(self._cursor, self._cursor + len(chunk), "body", name)
                self._cursor += len(chunk)
            elif kind == "region_open":
                spec = self._fields[name]
                if spec.open_re is None:  # the implicit region opens lazily, on its first character
                    self._silent_closes(None, eos)
                    self._region_start = self._cursor
                else:
                    match = self._locate_open(spec, eos)
                    self._add(match.start(), match.end(), "open", name)
                    self._cursor = match.end()
                    self._region_start = match.start()
                self._current, self._opened = name, True
                self._region_id += 1
            elif kind == "region_close":
                following = events[i + 1] if i + 1 < len(events) else None
                if not (name == self._implicit and self._closed_by_open(following, eos)):
                    self._close_delimiter(self._fields[name], eos)
                self._record_value(name, event["value"])
                self._current, self._opened = self._implicit, False

    def _locate_open(self, spec: Any, eos: bool) -> Any:
        """The open delimiter the parser just committed, and what came before it: dropped text (no
        region open) or closes of the (empty) implicit region, which leave no event."""
        while True:
            match = spec.open_re.search(self._text, self._cursor, partial=not eos)
            if match is None or match.partial:
                raise TraceOutOfSync(f"open delimiter of '{spec.name}' not found after {self._cursor}")
            if self._current is None:
                if match.start() > self._cursor:
                    self._add(self._cursor, match.start(), "discarded", None)
                return match
            silent = self._implicit_close_at(eos)
            # The parser commits the earliest delimiter, the longest on a tie, an open before a close.
            if silent is not None and (match.start() > self._cursor or silent.end() - silent.start() > match.end() - match.start()):
                self._add(silent.start(), silent.end(), "close", self._implicit)
                self._cursor = silent.end()
                continue
            if match.start() != self._cursor:
                raise TraceOutOfSync(f"unclaimed text before the open delimiter of '{spec.name}'")
            return match

    def _closed_by_open(self, following: dict | None, eos: bool) -> bool:
        """Whether a close of the implicit region was caused by an explicit open (no delimiter of its
        own) rather than by its close delimiter."""
        if following is None or following["type"] != "region_open":
            return False
        spec = self._fields[following["field"]]
        if spec.open_re is None:
            return False
        match = spec.open_re.search(self._text, self._cursor, partial=not eos)
        if match is None or match.partial or match.start() != self._cursor:
            return False
        close = self._implicit_close_at(eos)
        return close is None or close.end() - close.start() <= match.end() - match.start()

    def _close_delimiter(self, spec: Any, eos: bool) -> None:
        if spec.close_re is None:
            return
        match = spec.close_re.match(self._text, self._cursor, partial=not eos)
        if match is None or match.partial:
            if eos:
                return  # closed by the end of the output, without a delimiter
            raise TraceOutOfSync(f"close delimiter of '{spec.name}' not found at {self._cursor}")
        if match.end() > match.start():
            self._add(match.start(), match.end(), "close", spec.name)
        self._cursor = match.end()

    def _implicit_close_at(self, eos: bool) -> Any:
        if self._implicit_close is None:
            return None
        match = self._implicit_close.match(self._text, self._cursor, partial=not eos)
        if match is None or match.partial or match.end() == match.start():
            return None
        return match

    def _silent_closes(self, until: int | None, eos: bool) -> None:
        """Closes of the implicit region while it has no text emit no event; tile them from the cursor."""
        while until is None or self._cursor < until:
            match = self._implicit_close_at(eos)
            if match is None or (until is not None and match.end() > until):
                break
            self._add(match.start(), match.end(), "close", self._implicit)
            self._cursor = match.end()

    def _sync(self, eos: bool) -> None:
        """Account for what the parser consumed without events, and mark the rest pending."""
        consumed = len(self._text) if eos else consumed_position(self._parser)
        if self._cursor < consumed:
            if self._current is None:
                self._add(self._cursor, consumed, "discarded", None)
                self._cursor = consumed
            elif self._current == self._implicit and not self._opened:
                self._silent_closes(consumed, eos)
        if self._cursor != consumed:
            raise TraceOutOfSync(f"the parser consumed up to {consumed}, the trace accounts for {self._cursor}")
        self._pending = (consumed, len(self._text)) if consumed < len(self._text) else None

    def _add(self, start: int, end: int, kind: str, name: str | None) -> None:
        """Append a segment, extending the previous one when it is the same region's body (or more
        dropped text), so segments do not depend on how the output was chunked."""
        segments = self._segments
        if segments:
            last = segments[-1]
            if last[1] == start and last[2] == kind and kind in ("body", "discarded") and last[4] == self._region_id and last[3] == name:
                segments[-1] = (last[0], end, kind, name, self._region_id)
                return
        segments.append((start, end, kind, name, self._region_id))

    def _record_value(self, name: str, value: Any) -> None:
        """Fold a closed region's value into the message so far, as the parser does (join, repeats)."""
        spec = self._fields[name]
        values = self._values
        if spec.join is not None and isinstance(value, str):
            previous = values.get(name)
            values[name] = value if previous is None else previous + spec.join + value
        elif spec.repeats:
            values[name] = [*values.get(name, []), value]
        else:
            values[name] = value
        defaults = self.template.defaults
        self.message = {k: v for k, v in values.items() if k in defaults or not _is_empty(v)}

    def _append(self, chunk: str) -> None:
        # Drop our reference first so CPython can grow the string in place (keeps 1-char feeds linear).
        text, self._text = self._text, ""
        text += chunk
        self._text = text

    # ----- failures -----------------------------------------------------------------------------

    def _refuse(self, chunk: str) -> TraceStep:
        """Output over the size limit: feed what fits, then end the trace with an error."""
        room = max(self._cap - self._size, 0)
        if room and not self.truncated:
            self.feed(chunk[:room])
        first = not self.truncated
        self.truncated += len(chunk) - room
        if first:
            self._error(f"The output is over {self._cap:,} characters, the playground's limit; "
                        "the rest is not parsed.", None, len(self._text), len(self._text),
                        hint="Real replies are far shorter; paste a shorter output (or raise PLAYGROUND_MAX_OUTPUT_CHARS "
                        "when running the playground yourself).")
        return self._step([])

    def _regex_stopped(self, error: RegexTimeout) -> None:
        """An author regex ran out of time: say which one, and end the trace where it stopped."""
        self.regex_timeout = error
        self._error(f"{self._regex_name(error.pattern)} took longer than {error.seconds:g} s to match, so parsing "
                    "stopped here.", None, self._cursor, len(self._text), source="response_template",
                    hint="A pattern with nested quantifiers, such as (a+)+ or (a|a)*, can take exponential time "
                    "on some text: rewrite it without them, or use a literal open/close.")

    def _regex_name(self, pattern: str) -> str:
        """Which key of the response template holds `pattern` (as transformers names fields)."""
        if self.template.start_anchor_literals is None and self.template.start_anchor_re.pattern == pattern:
            return f"start_anchor_pattern {pattern!r}"
        for name, spec in self._fields.items():
            for key, compiled, literals in (("open_pattern", spec.open_re, spec.open_literals),
                                            ("close_pattern", spec.close_re, spec.close_literals)):
                if compiled is not None and literals is None and compiled.pattern == pattern:
                    return f"Field '{name}': {key} {pattern!r}"
            args = spec.content_args if isinstance(spec.content_args, dict) else {}
            if pattern in _tag_patterns(args):
                return f"Field '{name}': tag_pattern {pattern!r}"
        return f"The regex {pattern!r}"

    def _recover_feed(self, error: Exception, before: int, chunk: str) -> list[dict]:
        """A region failed to parse while this chunk was fed, and the parser lost that feed's events.
        Replay on a fresh parser, this chunk one character at a time, to get the events up to the
        failing character; then pin the error on the region open there."""
        try:
            parser = ResponseParser(self.template, prefix=self.prompt, tools=self.tools)
            for previous in self._chunks[:-1]:
                parser.feed(previous)
        except RegexTimeout:
            raise
        except Exception:  # noqa: BLE001 - cannot happen unless parsing is not deterministic
            self._error(f"Region could not be parsed: {error}", self._current, self._region_start, len(self._text))
            return []
        self._parser = parser
        full, self._text = self._text, self._text[:before]
        events: list[dict] = []
        for character in chunk:
            self._append(character)
            try:
                step = parser.feed(character)
            except RegexTimeout:
                self._text = full  # the segments still cover everything fed (see `_regex_stopped`)
                raise
            except Exception as e:  # noqa: BLE001
                self._text = full
                self._fail_region(e)
                return events
            self._after(step, eos=False)
            events.extend(step)
            if self._ended:
                break
        # The replay did not fail: the failure depended on chunking, which parsing must not.
        self._error(f"Region could not be parsed: {error}", self._current, self._region_start, len(self._text))
        return events

    def _recover_finalize(self, error: Exception) -> list[dict]:
        """finalize() raised. If making every field optional lets it finish, the only problem was a
        required field missing: report that with the full events. Otherwise a region failed to parse
        at the end of the output: pin the error on it."""
        relaxed = dataclasses.replace(
            self.template,
            fields={n: dataclasses.replace(f, optional=True) for n, f in self._fields.items()},
        )
        try:
            parser = ResponseParser(relaxed, prefix=self.prompt, tools=self.tools)
            for chunk in self._chunks:
                parser.feed(chunk)
            message, events = parser.finalize()
        except RegexTimeout:
            raise
        except Exception:  # noqa: BLE001
            self._fail_region(error)
            return []
        self._after(events, eos=True)
        self.message = message
        missing = [n for n, f in self._fields.items() if not f.optional and n not in message]
        self.diagnostics.append(
            Diagnostic(
                "error",
                f"Required field(s) missing from the output: {', '.join(missing)}.",
                "output",
                hint="These fields have \"optional\": false, and no region for them appeared.",
                span=(len(self.output), len(self.output)),
            )
        )
        return events

    def _fail_region(self, error: Exception) -> None:
        """Pin a parse failure on the region that was open (body, close delimiter) and end the trace:
        said with the exact character where it stopped and why (engine.parse_failure)."""
        end = max(self._cursor, min(consumed_position(self._parser), len(self._text)))
        name = self._current
        failure = parse_failure(error, name, self._fields.get(name) if name else None, self._text, self._region_start,
                                end, self._offset, self.response_text)
        if name is not None and end > self._cursor:
            spec = self._fields[name]
            match = spec.close_re.search(self._text, self._cursor) if spec.close_re is not None else None
            body_end = match.start() if match is not None and match.end() == end else end
            if body_end > self._cursor:
                self._add(self._cursor, body_end, "body", name)
            if body_end < end:
                self._add(body_end, end, "close", name)
            self._cursor = end
        self._error(failure.message, name, self._region_start, end, hint=failure.hint, at=failure.offset)

    def _error(self, message: str, name: str | None, start: int, end: int, *, source: str = "output",
               hint: str | None = None, at: int | None = None) -> None:
        """Record an error pinned to `[start, end)` (buffer coordinates; `at`: the character where it
        stopped) and end the trace: the rest of the text is shown as dropped, the message stays what
        it was."""
        self._ended = True
        out_start, out_end = max(start - self._offset, 0), max(end - self._offset, 0)
        place: dict = {}
        if at is not None and at >= self._offset:
            output = self._text[self._offset :]
            line, column = line_col(output, at - self._offset)
            place = {"offset": at - self._offset, "line": line, "column": column, "snippet": line_text(output, line)}
        self.diagnostics.append(
            Diagnostic(
                "error",
                message,
                source,  # type: ignore[arg-type]
                hint=hint or (f"The region '{name}' is highlighted where it failed." if name else None),
                span=(out_start, out_end),
                **place,
            )
        )
        if self._cursor < len(self._text):
            self._add(self._cursor, len(self._text), "discarded", None)
            self._cursor = len(self._text)
        self._pending = None

    # ----- snapshots ----------------------------------------------------------------------------

    def _pending_segment(self) -> Segment | None:
        if self._pending is None or self._pending[1] <= self._offset:
            return None
        start = max(self._pending[0], self._offset) - self._offset
        return Segment(start, self._pending[1] - self._offset, "pending", self._current)

    def _step(self, events: list[dict]) -> TraceStep:
        last = self._segments[-1] if self._segments else None
        return TraceStep(events, self.message, self._pending_segment(), self, len(self._segments), last)

    def _materialise(self, count: int, last: tuple | None, pending: Segment | None) -> list[Segment]:
        """Output-coordinate segments as they were when the list had `count` entries ending in `last`
        (earlier entries never change; only the last one grows)."""
        offset = self._offset
        out = []
        for index in range(count):
            start, end, kind, name, _ = last if index == count - 1 else self._segments[index]
            if end <= offset:
                continue
            out.append(Segment(max(start, offset) - offset, end - offset, kind, name))  # type: ignore[arg-type]
        if pending is not None:
            out.append(pending)
        return out


def _tag_patterns(args: dict) -> set[str]:
    """The xml-inline tag patterns in a field's content args, nested value parsers included."""
    found = set()
    while isinstance(args, dict):
        if isinstance(args.get("tag_pattern"), str):
            found.add(args["tag_pattern"])
        parser = args.get("value_parser")
        args = parser.get("args") if isinstance(parser, dict) else None
    return found


def _is_empty(value: Any) -> bool:
    return value is None or (isinstance(value, (list, dict, str)) and not value)


def trace_text(
    template: dict | ResponseTemplate,
    output: str,
    prompt: str = "",
    tools: list | None = None,
    chunks: list[str] | None = None,
    regex_seconds: float | None = None,
    response_text: str | None = None,
) -> TraceResult:
    """Trace a whole output (fed as `chunks`, or in one piece) and return the final result
    (`response_text`: the response template's JSON, to name its lines in messages)."""
    trace = Trace(template, prompt=prompt, tools=tools, regex_seconds=regex_seconds, response_text=response_text)
    for chunk in chunks if chunks is not None else [output]:
        trace.feed(chunk)
    trace.finalize()
    return trace.result()
