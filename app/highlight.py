"""HTML for highlighted text: the prompt, the streaming output, its events, and diagnostics.

Pure formatting: the segments, events and diagnostics come from the engine; this module only turns
them into escaped HTML (model and template text is untrusted: every piece goes through `esc`).
Streaming views are incremental: HTML for text that can no longer change is built once and only
appended to, so the work per update is proportional to the new text, not to the whole output.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import regex

from engine import limits
from engine.budget import summarised
from engine.diagnostics import Diagnostic
from engine.text import GENERIC_SPECIAL_TOKEN, shorten
from engine.trace import Segment

# Fields that mean the same thing in every format get the same colour everywhere (even when a
# format lacks one, its colour stays its own); other fields take the remaining colours in the
# order the response template declares them.
KNOWN_FIELDS = {"content": 0, "reasoning_content": 1, "tool_calls": 2}
PALETTE_SIZE = 8

WS_MARKS = {" ": "·", "\t": "→", "\n": "↵"}
_WS = regex.compile(r" +|[\t\n]")  # a run of spaces is one marker span (not one per space)
# A prompt longer than this is shown as its beginning and its end (the HTML of a 4-million-character
# prompt with visible whitespace was 128 MB per keystroke).
MAX_PROMPT_VIEW_CHARS = 200_000


def esc(text: str) -> str:
    return html.escape(text, quote=True)


def field_classes(field_names: Iterable[str]) -> dict[str, str]:
    """CSS class (`f0`…`f7`) for each field, stable for well-known field names."""
    names = list(field_names)
    classes = {name: f"f{KNOWN_FIELDS[name]}" for name in names if name in KNOWN_FIELDS}
    present = {KNOWN_FIELDS[name] for name in classes}
    others = [i for i in range(PALETTE_SIZE) if i not in KNOWN_FIELDS.values()]
    # Past the spare colours, borrow those of well-known fields this format does not have; then repeat.
    order = others + [i for i in KNOWN_FIELDS.values() if i not in present]
    for index, name in enumerate(n for n in names if n not in classes):
        classes[name] = f"f{order[index % len(order)]}"
    return classes


def visible_ws(text: str) -> str:
    """Escaped text with spaces, tabs and newlines drawn as ·, → and ↵ (the characters stay)."""
    def mark(m: regex.Match) -> str:
        ch = m.group()
        return f'<span class="ws">{WS_MARKS[ch[0]] * len(ch)}</span>' + ("\n" if ch == "\n" else "\t" if ch == "\t" else "")

    return _WS.sub(mark, esc(text))


def newline_marks(text: str) -> str:
    """Escaped text with newlines shown as ↵ (used inside delimiters, where a newline is part of
    the delimiter and easy to miss)."""
    return esc(text).replace("\n", '<span class="ws">↵</span>\n')


def legend_html(classes: dict[str, str]) -> str:
    items = [f'<span class="chip {cls}">{esc(name)}</span>' for name, cls in classes.items()]
    items += [
        '<span class="chip delim">delimiter</span>',
        '<span class="chip discarded">dropped</span>',
        '<span class="chip pending">held back</span>',
        '<span class="chip from-prompt">opened in the prompt</span>',
    ]
    return '<div class="legend">' + "".join(items) + "</div>"


# ----- diagnostics -----------------------------------------------------------------------------


# What one diagnostic shows of its text: its message and hint shortened, its snippet (the template's
# line: one line can be a whole 200,000-character template) as a window around its place.
MAX_DIAGNOSTIC_TEXT = 1_000
SNIPPET_WINDOW = 120
# A list of diagnostics as the page shows it, in bytes: past it, "… and N more".
DIAGNOSTICS_BYTES = limits.MAX_ANSWER_BYTES // 20


def diagnostics_html(diagnostics: Sequence[Diagnostic], ok_text: str = "") -> str:
    """A diagnostics list for under an editor: severity, line:column, message, snippet with a caret, hint.
    Bounded whatever the diagnostics hold (`DIAGNOSTICS_BYTES`): each text shortened, a long line
    shown around its place."""
    if not diagnostics:
        return f'<div class="diags ok">✓ {esc(ok_text)}</div>' if ok_text else '<div class="diags ok"></div>'
    rows = []
    size = 0
    shown = summarised(list(diagnostics))
    for index, d in enumerate(shown):
        where = ""
        if d.line is not None:
            where = f"line {d.line}" + (f", col {d.column}" if d.column is not None else "")
        parts = [f'<span class="sev">{esc(d.severity)}</span>']
        if where:
            parts.append(f'<span class="where">{esc(where)}</span>')
        parts.append(f'<span class="msg">{esc(shorten(d.message, MAX_DIAGNOSTIC_TEXT))}</span>')
        body = " ".join(parts)
        if d.snippet is not None:
            # The caret in a span of its own: a long line scrolls sideways to it (page.js).
            snippet, caret = _snippet_window(d)
            marked = f'\n{" " * (len(caret) - len(caret.lstrip()))}<span class="caret">{caret.lstrip()}</span>' if caret else ""
            body += f'<pre class="snippet">{esc(snippet)}{marked}</pre>'
        if d.hint:
            body += f'<div class="hint">{esc(shorten(d.hint, MAX_DIAGNOSTIC_TEXT))}</div>'
        # The editor marks the line, and the token's columns when the diagnostic names them (page.js).
        place = f'data-line="{d.line or ""}"' + (f' data-column="{d.column}"' if d.column else "") + (
            f' data-end-column="{d.end_column}"' if d.end_column else "")
        row = f'<div class="diag {esc(d.severity)}" {place}>{body}</div>'
        size += len(row)
        if size > DIAGNOSTICS_BYTES and rows:
            rows.append(f'<div class="diag info">… and {len(shown) - index:,} more (shortened: the page shows '
                        f"{DIAGNOSTICS_BYTES // 1000:,} kB of diagnostics).</div>")
            break
        rows.append(row)
    return '<div class="diags">' + "".join(rows) + "</div>"


def _snippet_window(d: Diagnostic) -> tuple[str, str]:
    """The snippet and its caret, as a window of the line around the diagnostic's place when the line
    is long ("…" where it is cut)."""
    snippet, caret = d.snippet or "", d.caret or ""
    if len(snippet) <= 2 * SNIPPET_WINDOW + MAX_DIAGNOSTIC_TEXT // 10:
        return snippet, caret
    column = (d.column or 1) - 1
    start = max(0, column - SNIPPET_WINDOW)
    width = max(1, len(caret.strip())) if caret else 1
    end = min(len(snippet), column + min(width, SNIPPET_WINDOW) + SNIPPET_WINDOW)
    lead = "…" if start > 0 else ""
    shown = lead + snippet[start:end] + ("…" if end < len(snippet) else "")
    if not caret:
        return shown, ""
    return shown, " " * (len(lead) + column - start) + "^" * min(width, end - column)


# ----- descriptions ------------------------------------------------------------------------------

# What a description may use: `code`, **bold**, and links to http(s) addresses, [text](url) or bare.
_URL = r"""https?://[^\s()<>"']+"""
_DESCRIPTION = regex.compile(rf"`([^`\n]+)`|\*\*([^*\n]+)\*\*|\[([^\]\n]+)\]\(({_URL})\)|({_URL})")


def inline_html(text: str) -> str:
    """One line of the engine's prose (a draft's report, a note) as HTML: escaped, with `code` and
    **bold** rendered and links shown (what `description_html` allows, without paragraphs)."""
    out, cut = [], 0
    for m in _DESCRIPTION.finditer(text):
        out.append(esc(text[cut : m.start()]))
        code, bold, label, target, bare = m.groups()
        if code is not None:
            out.append(f"<code>{esc(code)}</code>")
        elif bold is not None:
            out.append(f"<b>{esc(bold)}</b>")
        else:
            url = target or bare
            shown = f"{esc(label)} ({esc(url)})" if label else esc(url)
            out.append(f'<a href="{esc(url)}" target="_blank" rel="noopener noreferrer nofollow">{shown}</a>')
        cut = m.end()
    return "".join(out) + esc(text[cut:])


def description_html(text: str) -> str:
    """A case's description (from a preset, or from a share link: anyone's text) as HTML: escaped,
    with `code`, **bold** and links. Nothing else a link could dress the page with (forms, inputs,
    styles, frames, images from other hosts): it is text. A link shows where it goes, and opens apart."""
    paragraphs = [f"<p>{inline_html(paragraph)}</p>" for paragraph in regex.split(r"\n\s*\n", text.strip())]
    return f'<div class="case-description-text">{"".join(paragraphs)}</div>' if text.strip() else ""


# ----- the prompt --------------------------------------------------------------------------------


def special_token_pattern(tokens: Iterable[str]) -> regex.Pattern:
    """A pattern for the given literal tokens (longest first) and generic `<|...|>` tokens."""
    literal = sorted({t for t in tokens if t and t.strip()}, key=len, reverse=True)
    alternatives = [regex.escape(t) for t in literal] + [GENERIC_SPECIAL_TOKEN]
    return regex.compile("|".join(alternatives))


def prompt_html(
    prompt: str,
    *,
    special_tokens: Iterable[str] = (),
    generation_start: int | None = None,
    anchor_end: int | None = None,
    prefix_segments: Sequence[Segment] = (),
    classes: dict[str, str] | None = None,
    show_whitespace: bool = False,
    pieces: Sequence[tuple[int, int, str, str]] = (),
    data: str = "",
    budget: int | None = None,
) -> str:
    """The rendered prompt with special tokens boxed, the generation prompt tinted, a marker where
    the response template starts parsing (after `start_anchor`), and the regions the prompt already
    opened (a prefilled `<think>`) coloured as the parser sees them. `pieces` tile the prompt, each
    with the classes and attributes its text carries (`(start, end, classes, attributes)`: its
    provenance, `provenance_view`); `data`: attributes of the whole text. A prompt over
    `MAX_PROMPT_VIEW_CHARS` shows its first and last halves of that, with a note between (and no
    provenance: the pieces' offsets are the whole prompt's). Its HTML is at most `budget` bytes
    (`limits.PROMPT_VIEW_BYTES`; `data` not counted: the worker bounded it): a prompt whose view
    would be larger (a newline per character with visible whitespace) is cut there, with a note."""
    budget = limits.PROMPT_VIEW_BYTES if budget is None else budget
    if len(prompt) > MAX_PROMPT_VIEW_CHARS:
        return _elided(prompt, special_tokens, generation_start, anchor_end, prefix_segments, classes, show_whitespace,
                       budget)
    classes = classes or {}
    layers: list[tuple[int, int, str]] = []
    for m in special_token_pattern(special_tokens).finditer(prompt):
        if m.end() > m.start():
            layers.append((m.start(), m.end(), "tok"))
    if generation_start is not None and generation_start < len(prompt):
        layers.append((generation_start, len(prompt), "gen"))
    for seg in prefix_segments:
        cls = _segment_class(seg, classes) + " from-prompt"
        layers.append((seg.start, seg.end, cls))
    markers: dict[int, str] = {}
    if generation_start is not None and generation_start <= len(prompt):
        markers[generation_start] = '<span class="mark gen-mark" title="The generation prompt starts here">generation prompt ▸</span>'
    if anchor_end is not None:
        markers[anchor_end] = markers.get(anchor_end, "") + (
            '<span class="mark anchor-mark" title="start_anchor: the response template starts parsing here">▾ parsing starts</span>'
        )
    body = _layered(prompt, layers, markers, show_whitespace, pieces, budget)
    return f'<div class="prompt-text{" show-ws" if show_whitespace else ""}"{data}>{body}</div>'


def _elided(prompt: str, special_tokens: Iterable[str], generation_start: int | None, anchor_end: int | None,
            prefix_segments: Sequence[Segment], classes: dict[str, str] | None, show_whitespace: bool,
            budget: int) -> str:
    half = MAX_PROMPT_VIEW_CHARS // 2
    cut = len(prompt) - half
    tail = prompt_html(
        prompt[cut:], special_tokens=special_tokens, classes=classes, show_whitespace=show_whitespace,
        generation_start=generation_start - cut if generation_start is not None and generation_start >= cut else None,
        anchor_end=anchor_end - cut if anchor_end is not None and anchor_end >= cut else None,
        prefix_segments=[s._replace(start=s.start - cut, end=s.end - cut) for s in prefix_segments if s.start >= cut],
        budget=budget // 2,
    )
    head = prompt_html(prompt[:half], special_tokens=special_tokens, show_whitespace=show_whitespace, budget=budget // 2)
    note = (f'<div class="stale-banner">The prompt is {len(prompt):,} characters: its first and last {half:,} are '
            f"shown; {cut - half:,} in between are not.</div>")
    return note + head + '<div class="elided">…</div>' + tail


def _layered(text: str, layers: list[tuple[int, int, str]], markers: dict[int, str], show_ws: bool,
             pieces: Sequence[tuple[int, int, str, str]] = (), budget: int | None = None) -> str:
    """Escaped `text` where each piece carries the classes of every layer covering it (and the
    attributes of the tile of `pieces` it is in). One pass over the cuts, with the layers that start
    and end at each (a prompt of 40,000 special tokens once took a minute: every layer was tested at
    every cut). Stops past `budget` bytes, with a note."""
    points = {0, len(text), *markers}
    starting: dict[int, list[int]] = {}
    ending: dict[int, list[int]] = {}
    for index, (start, end, _) in enumerate(layers):
        points.update((start, end))
        starting.setdefault(start, []).append(index)
        ending.setdefault(end, []).append(index)
    for start, *_ in pieces:
        points.add(start)
    cuts = sorted(p for p in points if 0 <= p <= len(text))
    out = []
    size = 0
    tile = 0
    covering: set[int] = set()  # the layers covering the stretch after the current cut
    for a, b in zip(cuts, cuts[1:] + [None]):
        covering.update(starting.get(a, ()))
        covering.difference_update(ending.get(a, ()))  # (after: an empty layer covers nothing)
        if a in markers:
            out.append(markers[a])
        if b is None or b <= a:
            continue
        active = [layers[i][2] for i in sorted(covering)]
        attrs = ""
        if pieces:
            while tile + 1 < len(pieces) and pieces[tile][1] <= a:
                tile += 1
            active.append(pieces[tile][2])
            attrs = pieces[tile][3]
        cls = " ".join(c for c in active if c)
        cls = f' class="{cls}"' if cls else ""
        # A long stretch in slices, so the budget is checked as the view grows (not after a stretch of
        # 200,000 newlines became 5 MB of visible whitespace).
        for at in range(a, b, _SLICE):
            end = min(at + _SLICE, b)
            piece = text[at:end]
            rendered = visible_ws(piece) if show_ws else (newline_marks(piece) if "tok" in active else esc(piece))
            shown = f"<span{cls}{attrs}>{rendered}</span>" if cls or attrs else rendered
            size += len(shown)
            if budget is not None and size > budget:
                out.append(f'<div class="stale-banner view-cut">The prompt is shown up to character {at:,} of '
                           f"{len(text):,}: its view is over the {budget // 1000:,} kB an answer may carry (a newline or "
                           "a special token every few characters).</div>")
                return "".join(out)
            out.append(shown)
    return "".join(out)


_SLICE = 2048  # characters of one stretch of the prompt rendered at a time


# ----- the streaming output --------------------------------------------------------------------


def _segment_class(seg: Segment, classes: dict[str, str]) -> str:
    colour = classes.get(seg.field or "", "")
    if seg.kind == "body":
        return f"seg body {colour}"
    if seg.kind in ("open", "close"):
        return f"seg delim {seg.kind} {colour}"
    if seg.kind == "discarded":
        return "seg discarded"
    return f"seg pending {colour}"


def segment_html(text: str, seg: Segment, classes: dict[str, str], title: str | None = None) -> str:
    """One piece of output text in its segment's style (`text` is the piece, not the whole output)."""
    cls = _segment_class(seg, classes)
    inner = newline_marks(text) if seg.kind in ("open", "close") else esc(text)
    if seg.kind == "body" and title is None:
        # Body text streams in many small pieces: no tooltip on each (the legend names the colours).
        return f'<span class="{cls}">{inner}</span>'
    name = seg.field or ("no region" if seg.kind == "discarded" else "")
    tip = title or (f"{seg.kind}: {name}" if name else seg.kind)
    return f'<span class="{cls}" title="{esc(tip)}">{inner}</span>'


def prefix_html(prompt: str, prefix_segments: Sequence[Segment], classes: dict[str, str]) -> str:
    """The part of the prompt the parser read (a prefilled `<think>`), shown before the output."""
    pieces = [
        segment_html(prompt[s.start : s.end], s, classes, f"from the prompt: {s.kind} {s.field or ''}")
        for s in prefix_segments
        if s.end > s.start
    ]
    if not pieces:
        return ""
    return '<span class="from-prompt" title="Opened by the prompt, before the model wrote anything">' + "".join(pieces) + "</span>"


def output_html(
    text: str,
    segments: Sequence[Segment],
    classes: dict[str, str],
    errors: Sequence[Diagnostic] = (),
    prefix: str = "",
    pending_title: Callable[[str, str | None], str] | None = None,
) -> str:
    """The whole output at once (step-through and runs that ended in an error): every segment in
    its style, and each error shown on the span where it happened; held-back text titled with what
    it may still become (`pending_title`)."""
    out = [prefix]
    pinned = [d for d in errors if d.span is not None]
    badges_left = list(pinned)
    # The character where a parse stopped is marked on its own (`error-char`), inside its region.
    stops = {d.offset: d for d in pinned if d.offset is not None}
    for index, seg in enumerate(segments):
        if seg.end <= seg.start:
            continue
        hit = [d for d in pinned if _overlaps(d.span, seg)]  # type: ignore[arg-type]
        title = pending_title(text[seg.start : seg.end], seg.field) if pending_title and seg.kind == "pending" else None
        inside = sorted(o for o in stops if seg.start <= o < seg.end)
        if inside:
            cuts = sorted({seg.start, seg.end, *inside, *(o + 1 for o in inside)})
            piece = "".join(
                f'<span class="error-char" title="{esc(stops[a].message)}">{segment_html(text[a:b], seg, classes, title)}</span>'
                if a in stops else segment_html(text[a:b], seg, classes, title) for a, b in zip(cuts, cuts[1:]))
        else:
            piece = segment_html(text[seg.start : seg.end], seg, classes, title)
        if hit:
            piece = f'<span class="error-span" title="{esc(hit[0].message)}">{piece}</span>'
        out.append(piece)
        # The badge goes right after the last segment of the region that failed.
        later = segments[index + 1 :]
        for d in [d for d in hit if d in badges_left and not any(_overlaps(d.span, s) for s in later)]:  # type: ignore[arg-type]
            out.append(_badge(d))
            badges_left.remove(d)
    out += [_badge(d) for d in badges_left]
    return "".join(out)


def _overlaps(span: tuple[int, int], seg: Segment) -> bool:
    start, end = span
    return start < seg.end and seg.start < max(end, start + 1) and seg.end > seg.start


def _badge(d: Diagnostic) -> str:
    first = d.message.splitlines()[0] if d.message else ""
    return f'<span class="error-badge" title="{esc(d.message)}">⚠ {esc(shorten(first, 110))}</span>'


def value_text(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def message_json(message: dict | None) -> str:
    return json.dumps(message, indent=2, ensure_ascii=False) if message is not None else ""
