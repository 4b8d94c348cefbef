"""The page, declared in one place: the panels, and the events that connect them.

Every component an event touches is registered by name (`wiring.Wiring`); every callback is a plain
function in a panel module (or below) that reads components by name and returns new values by
name. `gr.State(Session.empty)` gives each browser session its own workspace, so two users never
see each other's templates or runs."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

import gradio as gr
import transformers

from engine.diagnostics import Diagnostic
from engine.presets import load_preset
from engine.response_spec import load_response_spec
from engine.workspace import Workspace

from . import case_panel as cases
from . import run_panel as runs
from .case_form import FORM_FIELDS, CaseForm, save_form
from .checks_extras import build_checks_extras, mark_selected_intended, show_engine_cell, unmark_selected
from .checks_panel import JUMP_JS, build_checks_tab, run_all_checks, show_location
from .editors import build_editors
from .highlight import diagnostics_html, field_classes, legend_html
from .prompt_panel import build_prompt_panel
from .publish_panel import build_publish_tab, download_zip, open_pull_request, preview
from .run_panel import build_run_panel, settings_updates
from .run_stream import OUTPUTS as RUN_OUTPUTS
from .run_stream import SETTINGS
from .share import BOOT_JS, CLEAR_HASH_JS, LINK_JS, SAVE_JS, save_settings, share_code
from .sources import from_files, from_hub, from_preset, preset_choices, restore
from .state import Session, default_workspace
from .step_panel import build_step_view, step_through
from .wiring import Wiring
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

# What showing a whole workspace updates (a preset, a Hub load, files, a share link).
FILL = ("preset", "chat_template", "response_template", *cases.SHOWN, *SETTINGS, "legend", "notes", "status",
        "publish_repo", "publish_revision")  # fmt: skip
# What an edit re-derives.
REFRESH_INPUTS = ("session", "chat_template", "response_template", "form_case", "show_whitespace", *FORM_FIELDS)
REFRESH_OUTPUTS = ("chat_diagnostics", "response_diagnostics", "case_diagnostics", "prompt", "prompt_info", "saved_code")
# The editors and the case form: what most buttons save before they act.
EDITED = ("session", "chat_template", "response_template", "form_case", *FORM_FIELDS)


def header_html() -> str:
    return (
        '<div class="header"><div class="title">Template <span class="accent">playground</span></div>'
        '<div class="tagline">Edit a chat template and a response template side by side, and watch model output '
        "stream with every region highlighted.</div>"
        f'<div class="version" id="transformers-version">Rendered and parsed by <b>transformers {transformers.__version__}</b></div></div>'
    )


def notes_markdown(workspace: Workspace) -> str:
    """The preset's notes (what is surprising about this format)."""
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


def fill(session: Session, workspace: Workspace, note: str = "", diagnostics: list[Diagnostic] | None = None) -> dict[str, Any]:
    """Show `workspace` in every panel (`FILL`)."""
    session.workspace = workspace
    session.last_prompt_html = ""
    session.last_spec = None
    loaded = load_response_spec(workspace.response_template)
    preset = workspace.preset if workspace.preset in [n for _, n in preset_choices()] else None
    return {
        "preset": gr.update(value=preset),
        "chat_template": workspace.chat_template,
        "response_template": workspace.response_template,
        **cases.show_case(workspace),
        **settings_updates(workspace),
        "legend": legend_html(field_classes(loaded.template.fields)) if loaded.ok else "",
        "notes": notes_markdown(workspace),
        "status": status_html(diagnostics or [], note),
        "publish_repo": workspace.source_repo,
        "publish_revision": workspace.source_revision,
    }


def pick_preset(session: Session, preset: str) -> dict[str, Any]:
    workspace, problems = from_preset(preset)
    if workspace is None:
        return {"status": status_html(problems)}
    return fill(session, workspace, f"Loaded the <b>{html.escape(workspace.preset)}</b> preset.")


def load_hub(session: Session, hub_repo: str, hub_revision: str) -> dict[str, Any]:
    workspace, problems = from_hub(session.workspace, hub_repo, hub_revision)
    if workspace is None:
        return {"status": status_html(problems)}
    return fill(session, workspace, f"Loaded the templates of <b>{html.escape(hub_repo.strip())}</b>.", problems)


def load_files(session: Session, files: list[Any] | None) -> dict[str, Any]:
    paths = [f if isinstance(f, str) else getattr(f, "name", str(f)) for f in (files or [])]
    workspace, problems = from_files(session.workspace, paths)
    if workspace is None:
        return {"status": status_html(problems)}
    return fill(session, workspace, "Loaded the uploaded files.", problems)


def restore_page(session: Session, boot: str) -> dict[str, Any]:
    """Page load: a share link's state, else this browser's saved copy, else the default preset."""
    workspace, note = restore(boot)
    return fill(session, workspace or default_workspace(), note)


def pick_recording(session: Session, recording: str, form_case: str, **form: Any) -> dict[str, Any]:
    """Picking a recording also shows its case (the prompt decides how the output parses)."""
    save_form(session.workspace, form_case, CaseForm.from_named(form))
    workspace = session.workspace
    workspace.run.recording = recording
    chosen = workspace.recording(recording)
    if chosen is not None and workspace.find_case(chosen.case) is not None:
        workspace.case_name = chosen.case
    return {**cases.show_case(workspace), **runs.pasted_visibility(recording)}


def build() -> gr.Blocks:
    ui = Wiring()
    with gr.Blocks(title="Template playground", fill_width=True, elem_id="playground") as page:
        ui.add(session=gr.State(Session.empty), boot=gr.Textbox(visible=False), saved_code=gr.Textbox(visible=False))
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
        ui.add(preset=preset, hub_repo=repo, hub_revision=revision, hub_load=hub_button, files=files,
               share_button=share_button, share_code=share_hidden, share_link=share_link, status=status, notes=notes)

        with gr.Tabs(elem_id="tabs"):
            with gr.Tab("Playground", id="playground"):
                ui.add(**build_editors())
                with gr.Row(equal_height=False):
                    with gr.Column(scale=2, min_width=340):
                        ui.add(**cases.build_case_panel())
                    with gr.Column(scale=3, min_width=420):
                        ui.add(**build_prompt_panel())
                ui.add(**build_run_panel())
                with gr.Group(elem_classes=["panel"]):
                    ui.add(step_view=build_step_view(ui["step"]))
            with gr.Tab("Checks", id="checks"):
                ui.add(**build_checks_tab())
                ui.add(**build_checks_extras())
            with gr.Tab("Publish", id="publish"):
                ui.add(**build_publish_tab())
        wire(page, ui)
    return page


def wire(page: gr.Blocks, ui: Wiring) -> None:
    """Every event of the page, by component name."""
    quiet: dict[str, Any] = {"show_progress": "hidden", "queue": True}

    def then_refresh(event: Any) -> Any:
        return ui.on(event.then, refresh, REFRESH_INPUTS, REFRESH_OUTPUTS, **quiet)

    edits = [ui["chat_template"].input, ui["response_template"].input, ui["show_whitespace"].input]
    edits += [ui[name].input for name in FORM_FIELDS]
    ui.on(edits, refresh, REFRESH_INPUTS, REFRESH_OUTPUTS, trigger_mode="always_last", concurrency_limit=None, **quiet)
    ui.on(ui["saved_code"].change, None, ["saved_code"], js=SAVE_JS)

    loaded = ui.on(page.load, restore_page, ["session", "boot"], FILL, js=BOOT_JS)
    then_refresh(loaded).then(None, None, None, js=CLEAR_HASH_JS)
    then_refresh(ui.on(ui["preset"].input, pick_preset, ["session", "preset"], FILL))
    then_refresh(ui.on(ui["hub_load"].click, load_hub, ["session", "hub_repo", "hub_revision"], FILL))
    then_refresh(ui.on(ui["files"].upload, load_files, ["session", "files"], FILL))

    case_state = ["session", "form_case", *FORM_FIELDS]
    then_refresh(ui.on(ui["case_picker"].input, cases.select_case, [*case_state, "case_picker"], cases.SHOWN, **quiet))
    then_refresh(ui.on(ui["case_add"].click, cases.add_case, case_state, cases.SHOWN, **quiet))
    then_refresh(ui.on(ui["case_duplicate"].click, cases.duplicate_case, case_state, cases.SHOWN, **quiet))
    then_refresh(ui.on(ui["case_rename"].click, cases.rename_case, [*case_state, "case_name"], cases.SHOWN, **quiet))
    then_refresh(ui.on(ui["case_delete"].click, cases.delete_case, case_state, cases.SHOWN, **quiet))
    then_refresh(ui.on(ui["recording"].input, pick_recording, [*case_state, "recording"], [*cases.SHOWN, "pasted"], **quiet))

    boxes = ["recorded_box", "simulated_box", "local_box", "remote_box", "sampling_box", "pace_box"]
    ui.on(ui["runner"].change, runs.runner_visibility, ["runner"], boxes, **quiet)
    ui.on(ui["recording"].change, runs.pasted_visibility, ["recording"], ["pasted"], **quiet)
    ui.on([ui[name].input for name in SETTINGS], save_settings, ["session", *SETTINGS], ["saved_code"],
          trigger_mode="always_last", **quiet)
    ui.on(ui["run"].click, runs.run_callback, [*EDITED, *SETTINGS, "api_key"], RUN_OUTPUTS, concurrency_limit=16,
          show_progress="hidden")
    ui.on(ui["stop"].click, runs.stop_button, ["session"], [], queue=False, show_progress="hidden")
    ui.on(ui["step"].change, step_through, ["session", "step"], ["step_view"], trigger_mode="always_last", **quiet)

    share = ui.on(ui["share_button"].click, share_code, [*EDITED, *SETTINGS], ["share_code"], **quiet)
    ui.on(share.then, None, ["share_code"], ["share_link"], js=LINK_JS)

    ui.on(ui["checks_run"].click, run_all_checks, EDITED,
          ["checks_summary", "checks_table", "checks_diagnostics", "engines_table", "engine_detail", "intended_list"],
          concurrency_limit=4)
    jump = ui.on(ui["checks_table"].select, show_location, ["session"], ["check_detail", "check_jump"], show_progress="hidden")
    ui.on(jump.then, None, ["check_jump"], [], js=JUMP_JS)
    ui.on(ui["engines_table"].select, show_engine_cell, ["session"], ["engine_detail"], show_progress="hidden")
    ui.on(ui["intend_mark"].click, mark_selected_intended, ["session", "intend_why"],
          ["intended_list", "checks_table", "intend_why", "saved_code"], **quiet)
    ui.on(ui["intend_unmark"].click, unmark_selected, ["session"], ["intended_list", "saved_code"], **quiet)

    publish_inputs = [*EDITED, "publish_repo", "publish_revision", "publish_token"]
    ui.on(ui["publish_preview"].click, preview, publish_inputs,
          ["publish_diff", "publish_title", "publish_description", "publish_messages", "publish_zip"], concurrency_limit=4)
    ui.on(ui["publish_open"].click, open_pull_request, [*publish_inputs, "publish_title", "publish_description"],
          ["publish_messages"], concurrency_limit=4)
    ui.on(ui["publish_download"].click, download_zip, EDITED, ["publish_zip", "publish_messages"])
