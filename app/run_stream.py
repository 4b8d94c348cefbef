"""A run, server side: build the engine runner for the settings, stream its chunks on a background
thread, feed them to the engine's `Trace`, and yield run-panel updates at most `UPDATES_PER_SECOND`
times a second, each built incrementally (`live_views`), so a 20,000-token output streams without
the browser falling behind. `stream_run` is the loop; the Run button's callback wraps it."""

from __future__ import annotations

import queue
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

import gradio as gr

from engine import limits
from engine.budget import check_workspace
from engine.diagnostics import Diagnostic
from engine.errors import log_failure
from engine.response_spec import load_response_spec
from engine.runners import Activity, LocalRunner, RunnerError, build_runner
from engine.tokens import special_tokens_text
from engine.trace import Trace
from engine.workspace import PASTED, RUNNERS, RunSettings, Workspace

from .highlight import diagnostics_html, esc, field_classes, legend_html, message_json, output_html, prefix_html
from .live_views import EventsView, StreamView
from .provenance_view import held_back
from .state import LastRun, Session, run_key
from .step_panel import EMPTY as STEP_EMPTY
from .step_panel import ready_html
from .workbench import RENDER_TIMEOUT

UPDATES_PER_SECOND = 15
# The run panel's settings controls, named as `RunSettings` fields.
SETTINGS = ("runner", "recording", "pasted", "tokens_per_second", "model", "max_new_tokens", "temperature", "top_p",
            "seed", "remote_url", "remote_model")  # fmt: skip
# What a run updates, by name.
OUTPUTS = ("stream", "legend", "stats", "run_diagnostics", "message", "events", "step", "step_view", "run", "stop", "run_note",
           "special_tokens")


def read_settings(**values: Any) -> RunSettings:
    """The run settings the controls hold (`SETTINGS` by name), cleaned of what a browser can send."""
    runner = values.get("runner")
    return RunSettings(
        runner=runner if runner in RUNNERS else "recorded",
        recording=values.get("recording") or "",
        pasted=values.get("pasted") or "",
        tokens_per_second=float(values.get("tokens_per_second") or 0),
        model=(values.get("model") or "").strip(),
        max_new_tokens=int(values.get("max_new_tokens") or 1),
        temperature=float(values.get("temperature") or 0),
        top_p=float(values.get("top_p") or 1),
        seed=int(values.get("seed") or 0),
        remote_url=(values.get("remote_url") or "").strip(),
        remote_model=(values.get("remote_model") or "").strip(),
    )


def store_settings(workspace: Workspace, settings: RunSettings) -> list[Diagnostic]:
    """Keep the run settings in the workspace; a paste over the output cap is not kept (a run
    refuses it, saying how long it is; the box still holds what was pasted), nor settings the
    workspace cannot hold (engine.budget.check_workspace: then the last that fitted stay, and why
    is returned; a run still uses what the controls hold)."""
    if len(settings.pasted) > limits.MAX_OUTPUT_CHARS:
        settings = replace(settings, pasted=workspace.run.pasted)
    before, workspace.run = workspace.run, settings
    if too_much := check_workspace(workspace, "runner"):
        workspace.run = before
    return too_much


@dataclass
class RunUpdate:
    """One update of the run panel; None leaves a view as it is."""

    stream: list | None = None
    legend: str | None = None
    stats: str | None = None
    diagnostics: str | None = None
    message: str | None = None
    events: list | None = None
    step: Any = None  # a gr.update for the step-through slider
    step_view: str | None = None
    running: bool | None = None
    special_tokens: str | None = None  # the field, when the model's tokenizer brought other special tokens

    @classmethod
    def shown(cls, updates: Iterable[RunUpdate]) -> RunUpdate:
        """The run panel after `updates`: each view as the last update that set it left it."""
        panel = cls()
        for update in updates:
            for name, value in vars(update).items():
                if value is not None:
                    setattr(panel, name, value)
        return panel

    def outputs(self) -> dict[str, Any]:
        """The update by output name (`OUTPUTS`); views it leaves alone are not in it."""
        values = {"stream": self.stream, "legend": self.legend, "stats": self.stats, "run_diagnostics": self.diagnostics,
                  "message": self.message, "events": self.events, "step": self.step, "step_view": self.step_view,
                  "special_tokens": self.special_tokens}  # fmt: skip
        out = {name: value for name, value in values.items() if value is not None}
        if self.stream is not None:
            out["run_note"] = ""  # a new run is no longer stale
        if self.running is not None:
            out["run"] = gr.update(interactive=not self.running)
            out["stop"] = gr.update(interactive=self.running)
        return out


def _stats_html(settings: RunSettings | None, tokens: int, seconds: float, first_region: float | None, chunks: int,
                events: int, state: str, activity: Activity | None = None) -> str:
    rate = f"{tokens / seconds:,.1f}" if seconds > 0 and tokens else "–"
    first = f"{first_region:.2f} s" if first_region is not None else "–"
    if settings is not None and settings.runner in ("recorded", "simulated") and settings.tokens_per_second <= 0:
        rate, first = "instant replay", "–"  # no pace: a rate would only measure this server
    cells = [
        ("status", state), ("tokens", f"{tokens:,}"), ("tokens/s", rate),
        ("first region", first), ("elapsed", f"{seconds:.2f} s"), ("chunks", f"{chunks:,}"), ("events", f"{events:,}"),
    ]  # fmt: skip
    if activity is not None:
        cells[0] = ("status", activity.describe())
    html = '<div class="stats">' + "".join(f'<div class="stat"><span>{esc(k)}</span><b>{esc(v)}</b></div>' for k, v in cells) + "</div>"
    if activity is not None and activity.fraction is not None:
        html += f'<progress class="download" max="1" value="{activity.fraction:.3f}"></progress>'
    return html


_DONE = object()


def _pump(runner: Any, prompt: str, tools: list | None, stop: threading.Event, out: queue.Queue) -> None:
    """Move the runner's chunks to `out` on a background thread (so the UI can coalesce updates
    on a timer instead of waiting on the model). The runner leaves as soon as Stop is set; what it
    queued is bounded by the output cap (every runner stops there)."""
    try:
        for chunk in runner.stream(prompt, tools=tools, stop=stop):
            if not _put(out, chunk, stop):
                break
    except RunnerError as e:
        _put(out, e.diagnostic, stop)
    except Exception as e:  # noqa: BLE001 - a runner bug must still end as a message, not a hang
        log_failure(f"The {type(runner).__name__} failed", e)
        _put(out, Diagnostic("error", f"The runner failed unexpectedly ({type(e).__name__}); the server log has details.", "runner"), stop)
    finally:
        _put(out, _DONE, stop)


def _put(out: queue.Queue, item: Any, stop: threading.Event) -> bool:
    """Queue `item`; False (dropped) once Stop is set."""
    if stop.is_set():
        return False
    out.put(item)
    return True


def _stream_value(view: StreamView, trace: Trace, classes: dict[str, str], prefix: str, errors_shown: int) -> list:
    """The stream view after new output: appended incrementally, or, once the trace has pinned a new
    error on a span, re-rendered whole with the error marked."""
    segments = trace.segments()
    if any(d.span for d in trace.diagnostics[errors_shown:]):
        return view.replace(output_html(trace.output, segments, classes, trace.diagnostics, prefix, view.pending_title),
                            segments)
    return view.update(trace.output, segments)


def stream_run(session: Session, settings: RunSettings, api_key: str | None = None, interval: float | None = None) -> Iterator[RunUpdate]:
    """Run the current case and yield panel updates as the output streams (at most one per
    `interval` seconds, default 1/UPDATES_PER_SECOND; 0 yields after every chunk)."""
    interval = 1 / UPDATES_PER_SECOND if interval is None else interval
    if not session.claim("run"):
        yield not_started([Diagnostic("error", "A run is already going in this tab: stop it, or wait for it to end.", "runner")])
        return
    try:
        for update in _stream_run(session, settings, api_key, interval):
            yield update
    finally:
        session.done("run")


def _stream_run(session: Session, settings: RunSettings, api_key: str | None, interval: float) -> Iterator[RunUpdate]:
    workspace = session.workspace
    store_settings(workspace, settings)
    run_id = uuid.uuid4().hex[:8]
    loaded = load_response_spec(workspace.response_template)
    if not workspace.response_template.strip():
        yield not_started([Diagnostic("error", "There is no response template yet to parse the output with.", "response_template",
                                      hint="“Draft from the chat template” (under the response template editor) reads one "
                                           "off the chat template.")])  # fmt: skip
        return
    if not loaded.ok:
        yield not_started([Diagnostic("error", "The response template has errors; fix them to run (its editor shows where).", "response_template")])
        return
    case = workspace.case
    # What the run belongs to, as it starts: the author may edit while it streams (the run is then stale).
    ran_with = run_key(workspace)
    rendered = workspace.render(case, timeout=RENDER_TIMEOUT, owner=session.owner)
    if rendered.prompt is None:
        yield not_started([Diagnostic("error", "The prompt does not render; fix the chat template or the case first.", "chat_template"), *rendered.diagnostics])
        return
    prompt = rendered.prompt
    try:
        runner = build_runner(workspace, settings, api_key=api_key, tokenizer=session.tokenizer, timeout=RENDER_TIMEOUT)
    except RunnerError as e:
        yield not_started([e.diagnostic])
        return
    regex = session.regex.active  # this visitor's regex allowance, around each parse step (not across yields)
    with regex():
        trace = Trace(loaded.spec, prompt=prompt, tools=case.tools, response_text=workspace.response_template)
    classes = field_classes(trace.template.fields)
    prefix = prefix_html(prompt, trace.prefix_segments(), classes)
    pending_title = held_back(trace.template, regex)
    view = StreamView(run_id, classes, prefix, pending_title)
    events = EventsView(run_id, classes)
    events.add(trace.initial_events, source="prompt")
    stop = threading.Event()
    session.stop = stop
    chunks: list[str] = []
    tokens: list[int] = []
    seconds: list[float] = []
    ids: list[tuple[int, ...]] = []
    first_region: float | None = None
    problems: list[Diagnostic] = []
    full = False
    message_dump = message_json(trace.message)
    yield RunUpdate(
        stream=view.value(), legend=legend_html(classes), message=message_dump, events=events.value(),
        stats=_stats_html(settings, 0, 0, None, 0, events.count, "starting…"), diagnostics=diagnostics_html([]),
        step=gr.update(visible=False), step_view=STEP_EMPTY, running=True,
    )  # fmt: skip
    out: queue.Queue = queue.Queue()
    pump = threading.Thread(target=_pump, args=(runner, prompt, case.tools, stop, out), daemon=True, name="playground-run")
    pump.start()
    last_update = time.monotonic()
    dirty = False
    errors_shown = 0
    shown_activity: Activity | None = None  # what the runner was last shown doing before its first token
    try:
        while not stop.is_set():  # Stop ends the run at once: chunks still queued are not parsed
            try:
                item = out.get(timeout=max(0.0, last_update + interval - time.monotonic()) if dirty else 0.25)
            except queue.Empty:
                item = None
            if item is _DONE:
                break
            if isinstance(item, Diagnostic):
                problems.append(item)
            elif item is not None:
                with regex():
                    step = trace.feed(item.text)
                chunks.append(item.text)
                tokens.append(item.tokens)
                seconds.append(item.seconds)
                ids.append(item.ids)
                if first_region is None and step.wrote_region:
                    first_region = item.seconds
                events.add(step.events)
                if step.message_changed:
                    message_dump = message_json(trace.message)
                dirty = True
                if trace.full:  # over the output size limit (the trace says so): stop the runner
                    stop.set()
                    full = True
            activity = runner.activity  # a local model: waiting in line, downloading, loading
            if activity != shown_activity and not chunks:
                shown_activity = activity
                yield RunUpdate(stats=_stats_html(settings, 0, 0, None, 0, events.count, "starting…", activity))
            if dirty and time.monotonic() - last_update >= interval:
                stream = _stream_value(view, trace, classes, prefix, errors_shown)
                errors_shown = len(trace.diagnostics)
                yield RunUpdate(
                    stream=stream, events=events.value(), message=message_dump,
                    stats=_stats_html(settings, tokens[-1] if tokens else 0, seconds[-1] if seconds else 0, first_region, len(chunks), events.count, "streaming"),
                )  # fmt: skip
                last_update = time.monotonic()
                dirty = False
        stopped = stop.is_set() and not full  # Stop was pressed (before the finally below sets it anyway)
    finally:
        # Also reached when the page cancels the generator: the runner must not outlive it.
        stop.set()
        if session.stop is stop:
            session.stop = None
    with regex():
        step = trace.finalize()
    events.add(step.events)
    problems += runner.diagnostics
    brought = None
    if isinstance(runner, LocalRunner) and runner.tokenizer is not None:
        # This visitor's model now splits their replays and shows their prompt's tokens (unless they
        # loaded another tokenizer themselves).
        session.model_tokenizer = (settings.model, runner.tokenizer)
        if session.tokenizer is None:  # its special tokens become the templates' for the next render
            before = dict(session.workspace.special_tokens)
            session.use_model_tokenizer()
            if session.workspace.special_tokens != before:
                brought = special_tokens_text(session.workspace.special_tokens)
    stream = _stream_value(view, trace, classes, prefix, errors_shown)
    expected_note = _expected_note(workspace, settings, trace.message, stopped)
    session.last_run = LastRun(prompt, case.tools, dict(loaded.spec or {}), chunks, tokens, seconds, ran_with,
                               ids=ids)
    session.touch()
    state = "stopped" if stopped else ("failed" if any(d.severity == "error" for d in problems) else "done")
    # A run that failed before writing anything has no message to show (not an empty assistant message).
    message = "" if not chunks and state == "failed" else message_json(trace.message)
    # The long views' last content, then the end on its own: when a run ends, Gradio sends the values
    # of the last update once more, whole rather than as a diff, so that update holds only short ones
    # (the views it leaves out stay as they are: see `live_views.view_value`).
    yield RunUpdate(stream=stream, events=events.value(), message=message)
    yield RunUpdate(
        stats=_stats_html(settings, tokens[-1] if tokens else 0, seconds[-1] if seconds else 0, first_region, len(chunks), events.count, state) + expected_note,
        diagnostics=diagnostics_html(problems + trace.diagnostics, "Parsed without problems."),
        step=gr.update(visible=bool(chunks), minimum=0, maximum=len(chunks) + 1, value=len(chunks) + 1, step=1),
        step_view=ready_html(len(chunks)) if chunks else STEP_EMPTY, running=False, special_tokens=brought,
    )  # fmt: skip


def not_started(problems: list[Diagnostic]) -> RunUpdate:
    """A run that could not start: say why, and show the status as failed (not a blank)."""
    return RunUpdate(diagnostics=diagnostics_html(problems), stats=_stats_html(None, 0, 0, None, 0, 0, "failed"))


def _expected_note(workspace: Workspace, settings: RunSettings, message: dict, stopped: bool) -> str:
    """For a preset recording: whether the parsed message is the one the recording expects."""
    if settings.runner != "recorded" or settings.recording == PASTED or stopped:
        return ""
    recording = workspace.recording(settings.recording)
    if recording is None or recording.expected is None:
        return ""
    differing = recording.differences(message)
    if not differing:
        return '<div class="expected ok">✓ The parsed message equals the recording’s expected message.</div>'
    return f'<div class="expected bad">✗ The parsed message differs from the recording’s expected message in: {esc(", ".join(differing))}.</div>'
