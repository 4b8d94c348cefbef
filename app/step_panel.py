"""Step-through (for teaching): after a run, a slider replays the stream chunk by chunk and shows
the parser's state at that point: the segments, the text held back, the events so far (this
chunk's highlighted) and the message so far. Each position is re-traced by the engine from the
run's recorded chunks, so what it shows is exactly what the parser did."""

from __future__ import annotations

import gradio as gr

from engine.text import shorten
from engine.trace import Trace

from .highlight import esc, field_classes, legend_html, message_json, newline_marks, output_html, prefix_html
from .provenance_view import held_back
from .live_views import EventsView, view_html
from .state import Session

EMPTY = '<div class="step-empty">Run something, then move the slider to replay it chunk by chunk.</div>'


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
    events = EventsView("step", classes)
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
    stream = output_html(output, segments, classes, trace.diagnostics, prefix_html(run.prompt, trace.prefix_segments(), classes),
                         held_back(trace.template, session.regex.active))

    if finished:
        head = f"<b>End of output</b> (after all {total} chunks): the parser closes what is still open."
    elif k == 0:
        head = "<b>Before the first chunk</b>: only what the prompt opened."
    else:
        chunk = chunks[k - 1]
        ids = run.chunk_ids(k - 1)
        id_text = (f' · token id{"s" if len(ids) > 1 else ""} <code class="token-ids">{" ".join(map(str, ids))}</code>'
                   if ids else "")
        head = (
            f'<b>Chunk {k} of {total}</b>: <code class="chunk">{esc(chunk)}</code>{id_text}'
            f" · {run.tokens[k - 1]:,} tokens · {run.seconds[k - 1]:.2f} s"
        )
    pending_html = (
        f'<pre class="pending-box">{esc(output[pending.start : pending.end])}</pre>'
        f'<div class="sub">held back: it may still become a delimiter of {esc(pending.field or "a region")}</div>'
        if pending is not None
        else '<div class="sub">nothing held back</div>'
    )
    rows = view_html(events.value())
    segment_rows = "".join(
        f'<tr><td>{s.start}</td><td>{s.end}</td><td>{esc(s.kind)}</td><td><span class="chip {classes.get(s.field or "", "")}">'
        f'{esc(s.field or "")}</span></td><td class="ev-text">{newline_marks(shorten(output[s.start:s.end], 120))}</td></tr>'
        for s in segments
    )
    return f"""
<div class="step-view" data-position="{k}">
  <div class="step-head">{head}</div>
  {legend_html(classes)}
  <div class="step-grid">
    <div class="step-stream"><div class="stream-text">{stream}</div></div>
    <div class="step-side">
      <div class="step-label">Pending text</div>{pending_html}
      <div class="step-label">Message so far</div><pre class="message-box">{esc(message_json(trace.message))}</pre>
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
