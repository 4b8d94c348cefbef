"""A run, server side: build the engine runner for the settings, stream its chunks on a background
thread, feed them to the engine's `Trace`, and yield run-panel updates at most `UPDATES_PER_SECOND`
times a second, each built incrementally (`live_views`), so a 20,000-token output streams without
the browser falling behind. `stream_run` is the loop; the Run button's callback wraps it."""

from __future__ import annotations

import queue
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import gradio as gr

from engine.diagnostics import Diagnostic
from engine.response_spec import load_response_spec
from engine.trace import Trace

from .highlight import diagnostics_html, esc, field_classes, legend_html, message_json, output_html, prefix_html
from .live_views import EventsView, StreamView
from .state import PASTED, RUNNERS, LastRun, RunSettings, Session, Workspace
from .workbench import RENDER_TIMEOUT, render_prompt, template_kwargs

UPDATES_PER_SECOND = 15
# After Stop, how long to wait for a runner to notice before leaving it behind.
STOP_GRACE_SECONDS = 2.0


def read_settings(
    runner: str, recording: str, pasted: str, tokens_per_second: float, model: str, max_new_tokens: float,
    temperature: float, top_p: float, seed: float, remote_url: str, remote_model: str,
) -> RunSettings:  # fmt: skip
    return RunSettings(
        runner=runner if runner in RUNNERS else "recorded",
        recording=recording or "",
        pasted=pasted or "",
        tokens_per_second=float(tokens_per_second or 0),
        model=(model or "").strip(),
        max_new_tokens=int(max_new_tokens or 1),
        temperature=float(temperature or 0),
        top_p=float(top_p or 1),
        seed=int(seed or 0),
        remote_url=(remote_url or "").strip(),
        remote_model=(remote_model or "").strip(),
    )


def make_runner(workspace: Workspace, settings: RunSettings, api_key: str | None = None):
    """The engine runner for these settings. Raises RunnerError (with a diagnostic) on bad settings."""
    from engine import runners

    case = workspace.case
    if settings.runner == "recorded":
        if settings.recording == PASTED or not workspace.recordings:
            text = settings.pasted
            if not text:
                raise runners.RunnerError("Nothing to replay: paste a model's raw output first.",
                                          hint="Or pick one of the preset's recordings.")  # fmt: skip
        else:
            recording = workspace.recording(settings.recording)
            if recording is None:
                raise runners.RunnerError(f"No recording named {settings.recording!r}.", hint="Pick one from the list.")
            text = recording.output
        return runners.RecordedRunner(text, tokens_per_second=settings.tokens_per_second, tokenizer=runners.loaded_tokenizer())
    if settings.runner == "simulated":
        return runners.SimulatedRunner(
            workspace.chat_template, case, response_template=workspace.response_template,
            special_tokens=workspace.special_tokens, template_kwargs=template_kwargs(workspace),
            stop_tokens=workspace.stop_tokens, tokens_per_second=settings.tokens_per_second,
            tokenizer=runners.loaded_tokenizer(), timeout=RENDER_TIMEOUT,
        )  # fmt: skip
    if settings.runner == "local":
        if not settings.model:
            raise runners.RunnerError("Which model? Enter a checkpoint id or a local folder.",
                                      hint="e.g. HuggingFaceTB/SmolLM3-3B, or /path/to/a/saved/model")  # fmt: skip
        return runners.LocalRunner(
            model=settings.model, max_new_tokens=settings.max_new_tokens, temperature=settings.temperature,
            top_p=settings.top_p, seed=settings.seed, stop_tokens=workspace.stop_tokens,
        )  # fmt: skip
    return runners.RemoteRunner(
        settings.remote_url, settings.remote_model, api_key=api_key or None, max_tokens=settings.max_new_tokens,
        temperature=settings.temperature, top_p=settings.top_p, stop_tokens=workspace.stop_tokens,
        response_template=workspace.response_template,
    )  # fmt: skip


@dataclass
class RunUpdate:
    """One update of the run panel; None leaves a view as it is."""

    stream: dict | None = None
    legend: str | None = None
    stats: str | None = None
    diagnostics: str | None = None
    message: str | None = None
    events: dict | None = None
    step: Any = None  # a gr.update for the step-through slider
    running: bool | None = None

    def outputs(self) -> tuple:
        skip = gr.skip()
        return (
            skip if self.stream is None else self.stream,
            skip if self.legend is None else self.legend,
            skip if self.stats is None else self.stats,
            skip if self.diagnostics is None else self.diagnostics,
            skip if self.message is None else self.message,
            skip if self.events is None else self.events,
            skip if self.step is None else self.step,
            skip if self.running is None else gr.update(interactive=not self.running),
            skip if self.running is None else gr.update(interactive=self.running),
        )


def _stats_html(tokens: int, seconds: float, first_region: float | None, chunks: int, events: int, state: str) -> str:
    rate = f"{tokens / seconds:,.1f}" if seconds > 0 and tokens else "–"
    first = f"{first_region:.2f} s" if first_region is not None else "–"
    cells = [
        ("status", state), ("tokens", f"{tokens:,}"), ("tokens/s", rate),
        ("time to first region", first), ("elapsed", f"{seconds:.2f} s"), ("chunks", f"{chunks:,}"), ("events", f"{events:,}"),
    ]  # fmt: skip
    return '<div class="stats">' + "".join(f'<div class="stat"><span>{esc(k)}</span><b>{esc(v)}</b></div>' for k, v in cells) + "</div>"


_DONE = object()


def _pump(runner: Any, prompt: str, tools: list | None, stop: threading.Event, out: queue.Queue) -> None:
    """Move the runner's chunks to `out` on a background thread (so the UI can coalesce updates
    on a timer instead of waiting on the model)."""
    from engine.runners import RunnerError

    try:
        for chunk in runner.stream(prompt, tools=tools, stop=stop):
            out.put(chunk)
            if stop.is_set():
                break
    except RunnerError as e:
        out.put(e.diagnostic)
    except Exception as e:  # noqa: BLE001 - a runner bug must still end as a message, not a hang
        out.put(Diagnostic("error", f"The runner failed: {type(e).__name__}: {e}", "runner"))
    finally:
        out.put(_DONE)


def stream_run(session: Session, workspace_settings: RunSettings, api_key: str | None = None, interval: float | None = None) -> Iterator[RunUpdate]:
    """Run the current case and yield panel updates as the output streams (at most one per
    `interval` seconds, default 1/UPDATES_PER_SECOND; 0 yields after every chunk)."""
    from engine.runners import RunnerError

    interval = 1 / UPDATES_PER_SECOND if interval is None else interval
    workspace = session.workspace
    workspace.run = workspace_settings
    run_id = uuid.uuid4().hex[:8]
    loaded = load_response_spec(workspace.response_template)
    if not loaded.ok:
        yield not_started([Diagnostic("error", "The response template has errors; fix them to run (its editor shows where).", "response_template")])
        return
    case = workspace.case
    rendered = render_prompt(workspace, case)
    if rendered.prompt is None:
        yield not_started([Diagnostic("error", "The prompt does not render; fix the chat template or the case first.", "chat_template"), *rendered.diagnostics])
        return
    prompt = rendered.prompt
    try:
        runner = make_runner(workspace, workspace_settings, api_key)
    except RunnerError as e:
        yield not_started([e.diagnostic])
        return
    trace = Trace(loaded.spec, prompt=prompt, tools=case.tools)
    classes = field_classes(trace.template.fields)
    prefix = prefix_html(prompt, trace.prefix_segments(), classes)
    view = StreamView(run_id, classes, prefix)
    events = EventsView(run_id, classes)
    events.add(trace.initial_events, source="prompt")
    stop = threading.Event()
    session.stop = stop
    chunks: list[str] = []
    tokens: list[int] = []
    seconds: list[float] = []
    first_region: float | None = None
    problems: list[Diagnostic] = []
    message_dump = message_json(trace.message)
    yield RunUpdate(
        stream=view.value(), legend=legend_html(classes), message=message_dump, events=events.value(),
        stats=_stats_html(0, 0, None, 0, events.count, "starting…"), diagnostics=diagnostics_html([]),
        step=gr.update(visible=False), running=True,
    )  # fmt: skip
    out: queue.Queue = queue.Queue()
    pump = threading.Thread(target=_pump, args=(runner, prompt, case.tools, stop, out), daemon=True, name="playground-run")
    pump.start()
    last_update = time.monotonic()
    dirty = False
    stopped_at: float | None = None
    errors_seen = 0
    try:
        while True:
            if stop.is_set() and stopped_at is None:
                stopped_at = time.monotonic()
            wait = STOP_GRACE_SECONDS if stopped_at is not None else (max(0.0, last_update + interval - time.monotonic()) if dirty else 0.25)
            try:
                item = out.get(timeout=wait)
            except queue.Empty:
                item = None
                if stopped_at is not None and time.monotonic() - stopped_at >= STOP_GRACE_SECONDS:
                    problems.append(Diagnostic("warning", "The runner did not stop in time; its output after Stop is ignored.", "runner"))
                    break
            if item is _DONE:
                break
            if isinstance(item, Diagnostic):
                problems.append(item)
            elif item is not None and not trace.finished:
                step = trace.feed(item.text)
                view.feed(item.text)
                chunks.append(item.text)
                tokens.append(item.tokens)
                seconds.append(item.seconds)
                if first_region is None and step.wrote_region:
                    first_region = item.seconds
                events.add(step.events)
                if step.message_changed:
                    message_dump = message_json(trace.message)
                dirty = True
            if dirty and time.monotonic() - last_update >= interval:
                if len(trace.diagnostics) > errors_seen and any(d.span for d in trace.diagnostics[errors_seen:]):
                    errors_seen = len(trace.diagnostics)
                    segments = trace.segments()
                    stream = view.replace(output_html(view.text, segments, classes, trace.diagnostics, prefix), segments)
                else:
                    stream = view.update(trace.segments())
                yield RunUpdate(
                    stream=stream, events=events.value(), message=message_dump,
                    stats=_stats_html(tokens[-1] if tokens else 0, seconds[-1] if seconds else 0, first_region, len(chunks), events.count, "stopping…" if stop.is_set() else "streaming"),
                )  # fmt: skip
                last_update = time.monotonic()
                dirty = False
        stopped = stop.is_set()  # Stop was pressed (before the finally below sets it anyway)
    finally:
        # Also reached when the page cancels the generator: the runner must not outlive it.
        stop.set()
        if session.stop is stop:
            session.stop = None
    step = trace.finalize()
    events.add(step.events)
    problems += list(getattr(runner, "diagnostics", []) or [])
    errors = [d for d in trace.diagnostics if d.span is not None]
    if errors:
        segments = trace.segments()
        stream = view.replace(output_html(view.text, segments, classes, trace.diagnostics, prefix), segments)
    else:
        stream = view.update(trace.segments())
    expected_note = _expected_note(workspace, workspace_settings, trace.message, stopped)
    session.last_run = LastRun(prompt, case.tools, dict(loaded.spec or {}), chunks, tokens, seconds)
    state = "stopped" if stopped else ("failed" if any(d.severity == "error" for d in problems) else "done")
    all_problems = problems + [d for d in trace.diagnostics]
    yield RunUpdate(
        stream=stream, events=events.value(), message=message_json(trace.message),
        stats=_stats_html(tokens[-1] if tokens else 0, seconds[-1] if seconds else 0, first_region, len(chunks), events.count, state) + expected_note,
        diagnostics=diagnostics_html(all_problems, "Parsed without problems."),
        step=gr.update(visible=bool(chunks), minimum=0, maximum=len(chunks) + 1, value=len(chunks) + 1, step=1),
        running=False,
    )  # fmt: skip


def not_started(problems: list[Diagnostic]) -> RunUpdate:
    """A run that could not start: say why, and show the status as failed (not a blank)."""
    return RunUpdate(diagnostics=diagnostics_html(problems), stats=_stats_html(0, 0, None, 0, 0, "failed"))


def _expected_note(workspace: Workspace, settings: RunSettings, message: dict, stopped: bool) -> str:
    """For a preset recording: whether the parsed message is the one the recording expects."""
    if settings.runner != "recorded" or settings.recording == PASTED or stopped:
        return ""
    recording = workspace.recording(settings.recording)
    if recording is None or recording.expected is None:
        return ""
    if message == recording.expected:
        return '<div class="expected ok">✓ The parsed message equals the recording’s expected message.</div>'
    differing = sorted(k for k in set(message) | set(recording.expected) if message.get(k) != recording.expected.get(k))
    return f'<div class="expected bad">✗ The parsed message differs from the recording’s expected message in: {esc(", ".join(differing))}.</div>'
