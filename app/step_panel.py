"""Step-through (for teaching): after a run, a slider replays the stream chunk by chunk and shows
the parser's state at that point: the segments, the text held back, the events so far (this
chunk's highlighted) and the message so far. Each position is re-traced by the engine from the
run's recorded chunks, so what it shows is exactly what the parser did."""

from __future__ import annotations

import gradio as gr

from engine import limits
from engine.text import shorten
from engine.trace import Segment, Trace

from .highlight import esc, field_classes, legend_html, message_json, newline_marks, output_html, prefix_html
from .provenance_view import held_back
from .live_views import EventsView, view_html
from .state import Session

EMPTY = '<div class="step-empty">Run something, then move the slider to replay it chunk by chunk.</div>'


# What one step shows, in bytes of its view: its answer stays within limits.MAX_ANSWER_BYTES whatever
# the run was (an output of 500,000 characters in 30,000 regions was megabytes per slider move); and
# the longest text of the chunk, the held-back text and the message so far, each.
STEP_BYTES = {"output": limits.MAX_ANSWER_BYTES * 40 // 100, "events": limits.MAX_ANSWER_BYTES * 20 // 100,
              "segments": limits.MAX_ANSWER_BYTES * 15 // 100}
STEP_TEXT_CHARS = 10_000


def _window(segments: list[Segment], start: int) -> list[Segment]:
    """The segments from `start` on (the one it falls in cut there)."""
    if start <= 0:
        return segments
    kept = [s for s in segments if s.end > start]
    if kept and kept[0].start < start:
        kept[0] = kept[0]._replace(start=start)
    return kept


def _stream_within(session: Session, prompt: str, trace: Trace, segments: list[Segment], classes: dict[str, str],
                   budget: int) -> str:
    """The output up to the step, as its last characters whose view fits in `budget` bytes (its last
    8,000 characters, then half as many until it fits), after a note of how many are not shown."""
    output = trace.output
    title = held_back(trace.template, session.regex.active)
    chars = min(len(output) + 1, 8_000)
    while True:
        shown = _window(segments, len(output) - chars)
        cut = shown[0].start if shown and shown[0].start > 0 else 0
        lead = (f'<span class="step-cut">… {cut:,} characters before these</span>' if cut else
                prefix_html(prompt, trace.prefix_segments(), classes))
        html = output_html(output, shown, classes, trace.diagnostics, lead, title)
        if len(html) <= budget or chars <= 16:
            return html
        chars //= 2


def _segment_rows(output: str, segments: list[Segment], classes: dict[str, str], budget: int) -> str:
    """The last segments' rows within `budget` bytes, after a row counting the others."""
    rows, size = [], 0
    for s in reversed(segments):
        row = (f'<tr><td>{s.start}</td><td>{s.end}</td><td>{esc(s.kind)}</td><td><span class="chip '
               f'{classes.get(s.field or "", "")}">{esc(s.field or "")}</span></td><td class="ev-text">'
               f"{newline_marks(shorten(output[s.start:s.end], 120))}</td></tr>")
        size += len(row)
        if size > budget:
            break
        rows.append(row)
    left = len(segments) - len(rows)
    more = f'<tr class="more-row"><td colspan="5">… {left:,} segments before these</td></tr>' if left else ""
    return more + "".join(reversed(rows))


def ready_html(chunks: int) -> str:
    """What the view says once a run has ended. The replay is built when the slider moves, not at
    the end of every run: at its last position it is the whole output again (and its events and
    segments), which the output panel already shows, so it would double what a run sends the page."""
    return (f'<div class="step-empty">Move the slider to replay this run chunk by chunk ({chunks:,} chunks; '
            "the last position is after the end of the output).</div>")


def step_through(session: Session, step: float) -> dict[str, str]:
    """The slider moved: the step-through view at that position (within the visitor's regex allowance)."""
    session.touch()
    with session.regex.active():
        return {"step_view": step_view(session, step)}


def step_view(session: Session, position: float) -> str:
    """The state after `position` chunks of the last run (past the last chunk: after the end of
    the output, when the parser closes what is still open)."""
    run = session.last_run
    if run is None:
        return EMPTY
    chunks = run.chunks
    total = len(chunks)
    k = max(0, min(int(position or 0), total + 1))
    trace = Trace(run.response_spec, prompt=run.prompt, tools=run.tools, response_text=run.ran_with[1] if run.ran_with else None)
    classes = field_classes(trace.template.fields)
    events = EventsView("step", classes, keep_last=True)  # (the rows before this step, up to its bound)
    events.add(trace.initial_events, source="prompt")
    latest: list[dict] = []
    for index, chunk in enumerate(chunks[: min(k, total)]):
        step = trace.feed(chunk)
        if index == k - 1:
            latest = step.events
        else:
            events.add(step.events)
    finished = k > total
    if finished:
        latest = trace.finalize().events
    events.add(latest, source="latest")
    segments = trace.segments()
    pending = next((s for s in reversed(segments) if s.kind == "pending"), None)
    output = trace.output
    # What a step shows is bounded (limits.MAX_ANSWER_BYTES), whatever the run was: the output before
    # the step's end, the last rows of events and segments, the message so far, each within its share.
    stream = _stream_within(session, run.prompt, trace, segments, classes, STEP_BYTES["output"])

    if finished:
        head = f"<b>End of output</b> (after all {total} chunks): the parser closes what is still open."
    elif k == 0:
        head = "<b>Before the first chunk</b>: only what the prompt opened."
    else:
        chunk = chunks[k - 1]
        ids = run.chunk_ids(k - 1)
        id_text = (f' · token id{"s" if len(ids) > 1 else ""} <code class="token-ids">{" ".join(map(str, ids[:50]))}'
                   f'{" …" if len(ids) > 50 else ""}</code>' if ids else "")
        head = (
            f'<b>Chunk {k} of {total}</b>: <code class="chunk">{esc(shorten(chunk, STEP_TEXT_CHARS))}</code>{id_text}'
            f" · {run.tokens[k - 1]:,} tokens · {run.seconds[k - 1]:.2f} s"
        )
    pending_html = (
        f'<pre class="pending-box">{esc(shorten(output[pending.start : pending.end], STEP_TEXT_CHARS))}</pre>'
        f'<div class="sub">held back: it may still become a delimiter of {esc(pending.field or "a region")}</div>'
        if pending is not None
        else '<div class="sub">nothing held back</div>'
    )
    rows = events.last_within(STEP_BYTES["events"])
    segment_rows = _segment_rows(output, segments, classes, STEP_BYTES["segments"])
    return f"""
<div class="step-view" data-position="{k}">
  <div class="step-head">{head}</div>
  {legend_html(classes)}
  <div class="step-grid">
    <div class="step-stream"><div class="stream-text">{stream}</div></div>
    <div class="step-side">
      <div class="step-label">Pending text</div>{pending_html}
      <div class="step-label">Message so far</div><pre class="message-box">{esc(shorten(message_json(trace.message), STEP_TEXT_CHARS))}</pre>
    </div>
  </div>
  <div class="step-label">Events so far ({events.count}; this step's highlighted)</div>
  <div class="events-scroll"><table class="events"><thead><tr><th>event</th><th>field</th><th>text or value</th><th>dirty</th></tr></thead><tbody>{rows}</tbody></table></div>
  <div class="step-label">Segments ({len(segments)})</div>
  <div class="events-scroll"><table class="events segments"><thead><tr><th>start</th><th>end</th><th>kind</th><th>field</th><th>text</th></tr></thead><tbody>{segment_rows}</tbody></table></div>
</div>"""


def build_step_view(slider: gr.Slider) -> gr.HTML:
    """The step-through panel: a title, the slider (declared by the run panel, which sets its
    range after each run) and the view."""
    gr.HTML('<div class="panel-title">Step-through <span class="sub">the parser\'s state after each chunk of the last run</span></div>')
    slider.render()
    return gr.HTML(EMPTY, elem_id="step-view", apply_default_css=False)
