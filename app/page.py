"""The page, declared in one place: the panels, and the events that connect them.

Every callback is a plain function in a panel module (or below) taking and returning plain values;
`gr.State(Session.empty)` gives each browser session its own workspace, so two users never see
each other's templates or runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gradio as gr
import transformers

from engine.diagnostics import Diagnostic

from . import case_panel as cases
from . import run_panel as runs
from .case_panel import CaseForm, build_case_panel, save_form
from .checks_panel import build_checks_tab, wire_checks_tab
from .editors import build_editors
from .highlight import diagnostics_html, field_classes, legend_html
from .prompt_panel import build_prompt_panel
from .publish_panel import build_publish_tab, wire_publish_tab
from .run_panel import build_run_panel, settings_updates
from .share import BOOT_JS, CLEAR_HASH_JS, LINK_JS, SAVE_JS, save_settings, share_code
from .sources import default_preset, from_files, from_hub, from_preset, preset_choices, restore
from .state import Session, Workspace
from .step_panel import build_step_view, step_view
from .workbench import refresh

ASSETS = Path(__file__).resolve().parent
CSS = (ASSETS / "style.css").read_text(encoding="utf-8")
THEME = gr.themes.Soft(
    primary_hue="indigo",
    secondary_hue="teal",
    neutral_hue="slate",
    font=["Inter", "ui-sans-serif", "system-ui", "-apple-system", "Segoe UI", "sans-serif"],
    font_mono=["JetBrains Mono", "ui-monospace", "SFMono-Regular", "Menlo", "Consolas", "monospace"],
)
# Blocks(css=, theme=) moved to launch() in Gradio 6: app.py (and the tests) pass these.
LAUNCH_OPTIONS: dict[str, Any] = {"css": CSS, "theme": THEME}


def header_html() -> str:
    return (
        '<div class="header"><div class="title">Template <span class="accent">playground</span></div>'
        '<div class="tagline">Edit a chat template and a response template side by side, and watch model output '
        "stream with every region highlighted.</div>"
        f'<div class="version" id="transformers-version">Rendered and parsed by <b>transformers {transformers.__version__}</b></div></div>'
    )


def notes_markdown(workspace: Workspace) -> str:
    """The preset's notes (what is surprising about this format)."""
    from engine.presets import load_preset

    if not workspace.preset:
        return "_Custom templates: no preset notes._"
    try:
        preset = load_preset(workspace.preset)
    except (KeyError, ValueError, OSError):
        return ""
    lines = [f"**{preset.display_name}**" + (f" — {', '.join(f'`{c}`' for c in preset.checkpoints)}" if preset.checkpoints else "")]
    lines += [f"- {note}" for note in preset.notes]
    if preset.round_trip_differences:
        lines.append("\n**Not kept when rendered into history:** " + "; ".join(f"`{k}`: {v}" for k, v in preset.round_trip_differences.items()))
    return "\n".join(lines)


def status_html(diagnostics: list[Diagnostic], note: str = "") -> str:
    parts = [f'<div class="status-note">{note}</div>'] if note else []
    if diagnostics:
        parts.append(diagnostics_html(diagnostics))
    return "".join(parts)


def fill(session: Session, workspace: Workspace, note: str = "", diagnostics: list[Diagnostic] | None = None) -> tuple:
    """Show `workspace` in every panel (outputs in `Page.fill_outputs` order)."""
    session.workspace = workspace
    session.last_prompt = None
    session.last_prompt_html = ""
    session.last_spec = None
    try:
        from engine.response_spec import load_response_spec

        loaded = load_response_spec(workspace.response_template)
        legend = legend_html(field_classes(loaded.template.fields)) if loaded.ok else ""
    except Exception:  # noqa: BLE001
        legend = ""
    preset = workspace.preset if workspace.preset in [n for _, n in preset_choices()] else None
    return (
        gr.update(value=preset),
        workspace.chat_template,
        workspace.response_template,
        *cases.show_case(workspace),
        *settings_updates(workspace),
        legend,
        notes_markdown(workspace),
        status_html(diagnostics or [], note),
        workspace.source_repo,
        workspace.source_revision,
    )


def pick_preset(session: Session, name: str) -> tuple:
    workspace, problems = from_preset(name)
    if workspace is None:
        return _status_only(problems)
    return fill(session, workspace, f"Loaded the <b>{workspace.preset}</b> preset.")


def load_hub(session: Session, repo: str, revision: str) -> tuple:
    workspace, problems = from_hub(session.workspace, repo, revision)
    if workspace is None:
        return _status_only(problems)
    return fill(session, workspace, f"Loaded the templates of <b>{repo}</b>.", problems)


def load_files(session: Session, files: list[Any] | None) -> tuple:
    paths = [f if isinstance(f, str) else getattr(f, "name", str(f)) for f in (files or [])]
    workspace, problems = from_files(session.workspace, paths)
    if workspace is None:
        return _status_only(problems)
    return fill(session, workspace, "Loaded the uploaded files.", problems)


def restore_page(session: Session, boot: str) -> tuple:
    """Page load: a share link's state, else this browser's saved copy, else the default preset."""
    workspace, note = restore(boot)
    if workspace is None:
        default, problems = from_preset(default_preset())
        workspace = default or Workspace()
        return fill(session, workspace, note, problems)
    return fill(session, workspace, note)


_FILL_SIZE = 7 + cases.FORM_SIZE + 11 + 3 + 2
STATUS_INDEX = _FILL_SIZE - 3  # where `fill` puts the top status message


def _status_only(problems: list[Diagnostic]) -> tuple:
    values = [gr.skip()] * _FILL_SIZE
    values[STATUS_INDEX] = status_html(problems)
    return tuple(values)


def pick_recording(session: Session, recording: str, form_case: str, *form: Any) -> tuple:
    """Picking a recording also shows its case (the prompt decides how the output parses)."""
    save_form(session, form_case, CaseForm.from_values(form))
    workspace = session.workspace
    workspace.run.recording = recording
    chosen = workspace.recording(recording)
    if chosen is not None and workspace.find_case(chosen.case) is not None:
        workspace.case_name = chosen.case
    shown = cases.show_case(workspace)
    return (*shown, runs.pasted_visibility(recording))


def build() -> gr.Blocks:
    with gr.Blocks(title="Template playground", fill_width=True, elem_id="playground") as page:
        session = gr.State(Session.empty)
        boot = gr.Textbox(visible=False)
        saved_code = gr.Textbox(visible=False)
        gr.HTML(header_html())
        with gr.Row(equal_height=False, elem_id="top-bar"):
            preset = gr.Dropdown(preset_choices(), label="Preset", scale=2, elem_id="preset-picker")
            with gr.Column(scale=3):
                with gr.Accordion("Load from the Hub, or from files", open=False, elem_id="load-accordion"):
                    with gr.Row():
                        repo = gr.Textbox(label="Repo id or local folder", placeholder="HuggingFaceTB/SmolLM3-3B", scale=3, elem_id="hub-repo")
                        revision = gr.Textbox(label="Revision", placeholder="main", scale=1, elem_id="hub-revision")
                        hub_button = gr.Button("Load from Hub", scale=1, elem_id="hub-load")
                    files = gr.File(label="Load files: chat_template.jinja, tokenizer_config.json, response_template.json",
                                    file_count="multiple", file_types=[".jinja", ".json"], elem_id="file-upload")  # fmt: skip
            with gr.Column(scale=2, min_width=260):
                share_button = gr.Button("Share link", elem_id="share-button")
                share_hidden = gr.Textbox(visible=False)
                share_link = gr.Textbox(show_label=False, placeholder="A link that reopens these templates, cases and settings",
                                        buttons=["copy"], elem_id="share-link", max_lines=1)  # fmt: skip
        status = gr.HTML(elem_id="top-status")
        with gr.Accordion("About this format", open=False, elem_id="notes-accordion"):
            notes = gr.Markdown(elem_id="preset-notes")

        with gr.Tabs(elem_id="tabs"):
            with gr.Tab("Playground", id="playground"):
                editors = build_editors()
                with gr.Row(equal_height=False):
                    with gr.Column(scale=2, min_width=340):
                        case = build_case_panel()
                    with gr.Column(scale=3, min_width=420):
                        prompt = build_prompt_panel()
                run = build_run_panel()
                with gr.Group(elem_classes=["panel"]):
                    step_html = build_step_view(run.step)
            with gr.Tab("Checks", id="checks"):
                checks = build_checks_tab()
            with gr.Tab("Publish", id="publish"):
                publish = build_publish_tab()

        # ----- events ---------------------------------------------------------------------------
        form = case.form
        fill_outputs = [preset, editors.chat, editors.response, *case.shown, *run.settings, run.legend, notes, status,
                        publish.repo, publish.revision]  # fmt: skip
        assert len(fill_outputs) == _FILL_SIZE
        refresh_inputs = [session, editors.chat, editors.response, case.form_case, prompt.show_whitespace, *form]
        refresh_outputs = [editors.chat_diagnostics, editors.response_diagnostics, case.diagnostics, prompt.view, prompt.info, saved_code]
        quiet: dict[str, Any] = {"show_progress": "hidden", "queue": True}

        def then_refresh(event: Any) -> Any:
            return event.then(refresh, refresh_inputs, refresh_outputs, **quiet)

        edits = [editors.chat.input, editors.response.input, prompt.show_whitespace.input]
        edits += [c.input for c in form]
        gr.on(edits, refresh, refresh_inputs, refresh_outputs, trigger_mode="always_last", concurrency_limit=None, **quiet)
        saved_code.change(None, [saved_code], None, js=SAVE_JS)

        loaded = page.load(restore_page, [session, boot], fill_outputs, js=BOOT_JS)
        then_refresh(loaded).then(None, None, None, js=CLEAR_HASH_JS)
        then_refresh(preset.input(pick_preset, [session, preset], fill_outputs))
        then_refresh(hub_button.click(load_hub, [session, repo, revision], fill_outputs))
        then_refresh(files.upload(load_files, [session, files], fill_outputs))

        case_state = [case.form_case, *form]
        then_refresh(case.picker.input(cases.select_case, [session, case.picker, *case_state], case.shown, **quiet))
        then_refresh(case.add.click(cases.add_case, [session, *case_state], case.shown, **quiet))
        then_refresh(case.duplicate.click(cases.duplicate_case, [session, *case_state], case.shown, **quiet))
        then_refresh(case.rename.click(cases.rename_case, [session, case.name, *case_state], case.shown, **quiet))
        then_refresh(case.delete.click(cases.delete_case, [session, *case_state], case.shown, **quiet))
        then_refresh(run.recording.input(pick_recording, [session, run.recording, *case_state], [*case.shown, run.pasted], **quiet))

        run.runner.change(runs.runner_visibility, [run.runner],
                          [run.recorded_box, run.simulated_box, run.local_box, run.remote_box, run.sampling_box, run.pace_box], **quiet)  # fmt: skip
        run.recording.change(runs.pasted_visibility, [run.recording], [run.pasted], **quiet)
        gr.on([c.input for c in run.settings], save_settings, [session, *run.settings], saved_code, trigger_mode="always_last", **quiet)
        run_inputs = [session, editors.chat, editors.response, case.form_case, *run.settings, run.api_key, *form]
        run.run.click(runs.run_callback, run_inputs, run.outputs, concurrency_limit=16, show_progress="hidden")
        run.stop.click(runs.stop_button, [session], None, queue=False, show_progress="hidden")
        run.step.change(step_view, [session, run.step], step_html, trigger_mode="always_last", **quiet)

        share_inputs = [session, editors.chat, editors.response, case.form_case, *run.settings, *form]
        share_button.click(share_code, share_inputs, share_hidden, **quiet).then(
            None, [share_hidden], [share_link], js=LINK_JS
        )
        wire_checks_tab(checks, session, editors, case)
        wire_publish_tab(publish, session, editors, case)
    return page
