"""The live views of a run: the streaming output and the parser's events, built incrementally.

HTML for text that can no longer change is built once and only appended to (in pages of bounded
size), so the work per update is proportional to the new text, not to the whole output; the page's
script (`widgets.incremental_html`) appends what a value gained since the last update."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence

from engine.trace import Segment

from engine.text import shorten

from .highlight import esc, newline_marks, segment_html, value_text


class PagedHtml:
    """Append-only HTML kept in pages of bounded size. Only the last page grows, so an update
    copies at most one page (not the whole output), and Gradio's diff of the value (it sends
    streaming outputs as diffs) touches only the last page: the work per update stays
    proportional to the new text however long the output gets."""

    PAGE = 65_536

    def __init__(self, first: str = ""):
        self.pages: list[str] = [first]

    def append(self, html_text: str) -> None:
        if not html_text:
            return
        if len(self.pages[-1]) >= self.PAGE:
            self.pages.append(html_text)
        else:
            self.pages[-1] = self.pages[-1] + html_text

    def text(self) -> str:
        return "".join(self.pages)


def view_value(run: str, pages: list[str], tail: str = "", count: int = 0) -> list:
    """What a stream or events view is sent: `[run, pages, tail, count]` (`widgets.incremental_html`).
    A list, not a dict: when a run ends, its last update leaves these views out (Gradio would
    otherwise send their whole values once more), and Gradio turns a view it leaves out into an
    update by diffing against the last value, which for a dict edits that value in place in the
    page (the script then saw it empty) but for a list replaces it, which the page ignores."""
    return [run, pages, tail, count]


def view_parts(value: list) -> dict:
    """A view value by name: {"run", "pages", "tail", "count"}."""
    return dict(zip(("run", "pages", "tail", "count"), value))


def view_html(value: list) -> str:
    """The whole HTML a stream or events view value shows (for tests and step-through)."""
    parts = view_parts(value)
    return "".join(parts["pages"]) + parts["tail"]


class StreamView:
    """Incremental HTML of a streaming output. `update` renders only text it has not rendered yet
    (segments only ever grow at the end; pending text is re-rendered as the tail), so the work per
    update is proportional to the new text. The value is `view_value(run, pages, tail)`: the page's
    script appends what the pages gained since the last update and replaces the tail; a new run id
    starts over."""

    def __init__(self, run_id: str, classes: dict[str, str], prefix: str = "",
                 pending_title: Callable[[str, str | None], str] | None = None):
        self.run_id = run_id
        self.classes = classes
        self.pending_title = pending_title  # what held-back text may still become (`provenance_view.held_back`)
        self.html = PagedHtml(prefix)
        self._index = 0  # the first segment that may still grow
        self._done = 0  # output characters already rendered
        self.tail = ""

    def update(self, text: str, segments: Sequence[Segment]) -> list:
        """The view of `text` (the whole output so far, e.g. `Trace.output`) as `segments` tile it."""
        fresh: list[str] = []
        tail = ""
        for index in range(self._index, len(segments)):
            seg = segments[index]
            if seg.kind == "pending":
                held = text[seg.start : seg.end]
                title = self.pending_title(held, seg.field) if self.pending_title is not None else None
                tail = segment_html(held, seg, self.classes, title)
                break
            start = max(seg.start, self._done)
            if seg.end > start:
                fresh.append(segment_html(text[start : seg.end], seg, self.classes))
                self._done = seg.end
            self._index = index
        self.html.append("".join(fresh))
        self.tail = tail
        return self.value()

    def replace(self, html_text: str, segments: Sequence[Segment]) -> list:
        """Show a complete rendering of `segments` instead (e.g. with errors marked); a new run id
        makes the page's script start over rather than append. Later updates append after it."""
        self.run_id += "+"
        self.html = PagedHtml(html_text)
        self.tail = ""
        committed = [i for i, seg in enumerate(segments) if seg.kind != "pending"]
        self._index = committed[-1] if committed else 0
        self._done = segments[committed[-1]].end if committed else 0
        return self.value()

    def value(self) -> list:
        return view_value(self.run_id, list(self.html.pages), self.tail)


def stream_value(run_id: str, html_text: str) -> list:
    """A stream view value showing fixed HTML (a message, or a full rendering)."""
    return view_value(run_id, [html_text])


class EventsView:
    """The parser's events as table rows, incrementally. Consecutive `region_chunk` events of one
    region share a row (the text joined, the number of chunks counted): one row per chunk would
    make a long output unreadable and slow. Rows that are complete are rendered once. At most
    `MAX_ROWS` rows are drawn (the first ones; with `keep_last`, the last ones), then a row counts the
    rest: an output of 30,000 short regions is 90,000 rows, which the page would draw one by one."""

    HEAD = 48  # characters of a long chunk row shown from its start and its end
    MAX_ROWS = 1_000

    def __init__(self, run_id: str, classes: dict[str, str], keep_last: bool = False):
        self.run_id = run_id
        self.classes = classes
        self.count = 0
        self.html = PagedHtml()
        self._open: dict | None = None  # the chunk row still growing
        self.rows = 0  # rows drawn
        self.left_out = 0  # rows not drawn
        self.keep_last = keep_last
        self._last: deque[str] = deque(maxlen=self.MAX_ROWS)

    def _append(self, row: str) -> None:
        if self.keep_last:
            self.left_out += len(self._last) == self.MAX_ROWS
            self._last.append(row)
        elif self.rows < self.MAX_ROWS:
            self.rows += 1
            self.html.append(row)
        else:
            self.left_out += 1

    def add(self, events: Iterable[dict], source: str = "output") -> None:
        """Add events; `source` "prompt" marks the prompt's prefilled regions, "latest" the events
        of the chunk step-through is showing."""
        for event in events:
            self.count += 1
            if event["type"] == "region_chunk":
                row = self._open
                if row is not None and row["field"] == event["field"] and row["dirty"] == event.get("dirty", False) and row["source"] == source:
                    row["n"] += 1
                    row["length"] += len(event["text"])
                    if len(row["head"]) < self.HEAD:
                        row["head"] = (row["head"] + event["text"])[: self.HEAD]
                    row["end"] = (row["end"] + event["text"])[-self.HEAD :]
                    continue
                self._freeze()
                text = event["text"]
                self._open = {"field": event["field"], "dirty": event.get("dirty", False), "n": 1,
                              "length": len(text), "head": text[: self.HEAD], "end": text[-self.HEAD :],
                              "source": source}  # fmt: skip
                continue
            self._freeze()
            if event["type"] == "region_open":
                self._append(self._row("region_open", event["field"], "", None, source))
            else:
                self._append(self._row("region_close", event["field"], shorten(value_text(event.get("value")), 200), None, source))

    def _freeze(self) -> None:
        if self._open is not None:
            self._append(self._chunk_row(self._open))
            self._open = None

    def _chunk_row(self, row: dict) -> str:
        length, head, end = row["length"], row["head"], row["end"]
        if length <= self.HEAD:
            text = head
        elif length <= 2 * self.HEAD:
            text = head + end[-(length - self.HEAD) :]
        else:
            text = head + " … " + end
        label = "region_chunk" + (f" ×{row['n']}" if row["n"] > 1 else "")
        return self._row(label, row["field"], text, row["dirty"], row["source"])

    def _row(self, kind: str, name: str | None, text: str, dirty: bool | None, source: str) -> str:
        cls = self.classes.get(name or "", "")
        where = {"prompt": ' class="from-prompt-row"', "latest": ' class="latest-row"'}.get(source, "")
        dirty_cell = "" if dirty is None else ("yes" if dirty else "no")
        return (
            f"<tr{where}><td>{esc(kind)}</td><td><span class=\"chip {cls}\">{esc(name or '')}</span></td>"
            f"<td class=\"ev-text\">{newline_marks(text)}</td><td>{dirty_cell}</td></tr>"
        )

    def last_within(self, budget: int) -> str:
        """(`keep_last`) The last rows, the growing one included, within `budget` bytes, after a row
        that counts the rows left out."""
        rows = [*self._last, *([self._chunk_row(self._open)] if self._open is not None else [])]
        kept, size = [], 0
        for row in reversed(rows):
            size += len(row)
            if size > budget:
                break
            kept.append(row)
        left = self.left_out + len(rows) - len(kept)
        more = f'<tr class="more-row"><td colspan="4">… {left:,} rows before these, not drawn</td></tr>' if left else ""
        return more + "".join(reversed(kept))

    def value(self) -> list:
        tail = self._chunk_row(self._open) if self._open is not None and (self.keep_last or self.rows < self.MAX_ROWS) else ""
        more = (f'<tr class="more-row"><td colspan="4">… {self.left_out:,} more rows '
                f"{'before these' if self.keep_last else 'after these'}, not drawn (the table shows {self.MAX_ROWS:,}; "
                "the output and the message show everything)</td></tr>") if self.left_out else ""
        if self.keep_last:
            return view_value(self.run_id, [more + "".join(self._last)], tail, self.count)
        return view_value(self.run_id, list(self.html.pages), tail + more, self.count)
