"""The page, declared in one place: the panels, and the events that connect them.

Every component an event touches is registered by name (`wiring.Wiring`); every callback is a plain
function in a panel module (or below) that reads components by name and returns new values by
name. `gr.State(Session.empty)` gives each browser session its own workspace, so two users never
see each other's templates or runs."""

from __future__ import annotations

import html
import inspect
from functools import cache
from pathlib import Path
from typing import Any

import gradio as gr
import regex
import transformers

from engine import limits
from engine.diagnostics import Diagnostic
from engine.errors import log_failure
from engine.model_workspace import Keep, ModelStart
from engine.presets import load_preset
from engine.public import Policy, policy
from engine.response_spec import load_response_spec
from engine.text import SPECIAL_TOKEN
from engine.workspace import RUNNERS, Workspace

from . import behaviour_view as behaviour
from . import case_panel as cases
from . import draft_panel as drafts
from . import format_panel as formats
from . import run_panel as runs
from . import token_panel as tokens
from .case_form import FORM_FIELDS, CaseForm, save_form
from .checks_extras import build_checks_extras, mark_selected_intended, show_engine_cell, unmark_selected
from .behaviour_view import build_behaviour_section, loaded_version
from .checks_panel import build_checks_tab, pick_check, run_all_checks
from .editors import build_editors
from .highlight import field_classes, legend_html
from .load_panel import UNDO_BUTTON, build_load_panel, status_html
from .prompt_panel import build_prompt_panel
from .publish_panel import build_publish_tab, download_zip, open_pull_request, preview
from .run_panel import settings_updates
from .run_stream import OUTPUTS as RUN_OUTPUTS
from .run_stream import SETTINGS
from .share import BOOT_JS, LINK_JS, RESTORE_GATE_JS, RESTORED_JS, SAVE_JS, save_settings, share_code
from .sources import from_files, from_hub, from_preset, preset_choices, restore
from .state import Session, default_workspace
from .step_panel import build_step_view, step_through
from .walk import WALK_BAR
from .wiring import Wiring
from .workbench import (build_prompt_view, edit_case, edit_chat_template, edit_response_template, explain_view, refresh,
                        refreshed, sync, toggle_tokens, view_outputs)

ASSETS = Path(__file__).resolve().parent
CSS = "\n".join((ASSETS / name).read_text(encoding="utf-8") for name in ("style.css", "provenance.css", "walk.css"))
# The page's scripts, each a function run once the page is drawn: the page's own behaviour, then the
# conversation editor (which uses the page's helpers), then provenance (where each character came from),
# the sizes of the prompt and the output, and presentation mode's step-by-step walk.
JS = "() => {\n" + "".join(f"({(ASSETS / name).read_text(encoding='utf-8').strip()})();\n"
                          for name in ("page.js", "conversation.js", "provenance.js", "layout.js", "walk.js")) + "}"
THEME = gr.themes.Soft(
    primary_hue="indigo",
    secondary_hue="teal",
    neutral_hue="slate",
    font=["Inter", "ui-sans-serif", "system-ui", "-apple-system", "Segoe UI", "sans-serif"],
    font_mono=["JetBrains Mono", "ui-monospace", "SFMono-Regular", "Menlo", "Consolas", "monospace"],
    spacing_size="sm",  # compact: the whole edit → prompt → run → output loop fits one laptop screen
).set(layout_gap="8px", block_padding="4px 8px", block_label_margin="0", block_label_padding="0 6px",
      block_label_text_size="0.78rem", section_header_text_size="0.85rem",
      # Contrast (WCAG AA, 4.5:1 for text; axe-core checks it in the browser tests): Soft's labels
      # (indigo 500 on indigo 100), its grey help text and placeholders (slate 400) and its primary
      # button (white on indigo 500) fall short; one shade darker (lighter on dark) meets it.
      block_label_text_color="*primary_700", block_title_text_color="*primary_700",
      body_text_color_subdued="*neutral_600", body_text_color_subdued_dark="*neutral_300",
      input_placeholder_color="*neutral_500", input_placeholder_color_dark="*neutral_400",
      button_primary_background_fill="*primary_600", button_primary_background_fill_hover="*primary_700",
      button_primary_background_fill_dark="*primary_600", button_primary_background_fill_hover_dark="*primary_700")
# Blocks(css=, theme=) moved to launch() in Gradio 6: app.py (and the tests) pass these.
# Uploads are template files (a few kB; a tokenizer_config.json with a large vocabulary, a few MB) and
# tokenizer.json files (Gemma 3's is 33 MB; engine.limits.MAX_TOKENIZER_BYTES is the bound).
MAX_UPLOAD = f"{limits.MAX_TOKENIZER_BYTES // 1_000_000}mb"
# Gradio keeps a little state for every session it has seen; beyond this many, the oldest go.
SESSIONS_KEPT = 2000
# run_history off: Gradio 6 otherwise keeps every event's inputs and outputs in the browser's
# localStorage (a Hub token or API key typed here included) and re-reads and re-writes that history
# on every event, which made each keystroke slower the longer a page was used.
LAUNCH_OPTIONS: dict[str, Any] = {"css": CSS, "theme": THEME, "js": JS, "max_file_size": MAX_UPLOAD,
                                  "state_session_capacity": SESSIONS_KEPT, "run_history": False}

# What an edit re-derives: the diagnostics, the prompt and its info line, the saved state, the run note.
REFRESH_OUTPUTS = ("chat_diagnostics", "response_diagnostics", "case_diagnostics", "prompt", "prompt_info", "saved_code",
                   "run_note")  # fmt: skip
# What showing a whole workspace updates (a preset, a Hub load, files, a share link).
FILL = ("preset", "chat_template", "response_template", *cases.SHOWN, *SETTINGS, "model_note", "legend", "notes", "status",
        "publish_repo", "publish_revision", *runs.RUN_VIEWS, *tokens.SPECIAL_SHOWN, "draft_box", "draft_undo",
        "draft_status")  # fmt: skip
# ... with the prompt panel (what a preset, a Hub load, files or a share link show, in one answer).
WORKSPACE_SHOWN = (*FILL, *REFRESH_OUTPUTS)
# ... and what a files or Hub load (and its Undo) updates besides: the file list is emptied, so the
# next upload holds only its own files.
LOAD_SHOWN = (*WORKSPACE_SHOWN, "files")
# What a load reads: the editors and the case form (saved first: a load that fails loses nothing).
LOAD_INPUTS = ("session", "chat_template", "response_template", "form_case", "keep_cases", "keep_response",
               "show_whitespace", *FORM_FIELDS)
# What a case action updates.
CASE_SHOWN = (*cases.SHOWN, *runs.RUN_VIEWS)
# What the refresh after an edit reads.
REFRESH_INPUTS = ("session", "chat_template", "response_template", "form_case", "show_whitespace", *FORM_FIELDS)
# The editors and the case form: what most buttons save before they act.
EDITED = ("session", "chat_template", "response_template", "form_case", *FORM_FIELDS)


def header_html(rules: Policy | None = None) -> str:
    rules = rules or policy()
    return (
        '<div class="header"><div class="title" title="Write the chat template and the response template side by side, '
        'and watch a model\'s output parsed region by region.">Template <span class="accent">playground</span></div>'
        f'<div class="version" id="transformers-version">transformers <b>{transformers.__version__}</b></div>'
        + (public_note(rules) if rules.public else "") + "</div>"
    )


def public_note(rules: Policy) -> str:
    """What a visitor of a public server can and cannot do here (engine.public decides)."""
    models = f"local models: {', '.join(html.escape(m) for m in rules.models)}" if rules.models else "no local models"
    remote = "remote servers over https" if rules.remote else "no remote servers"
    return (f'<div class="public-note" id="public-note">Public server: Hub repos only (no server files), {models}, '
            f"{remote}; templates run sandboxed, with time and size limits (outputs up to "
            f"{limits.MAX_OUTPUT_CHARS:,} characters). Run the playground yourself for everything.</div>")


def notes_html(workspace: Workspace) -> str:
    """The preset's notes (what is surprising about this format), escaped, with every token and
    template tag shown as the code it is (`<think>`, `<|im_end|>`, `{% generation %}`)."""
    if not workspace.preset:
        return '<div class="notes"><i>Custom templates: no preset notes.</i></div>'
    try:
        preset = load_preset(workspace.preset)
    except (KeyError, ValueError, OSError):
        return ""
    checkpoints = ", ".join(f"<code>{html.escape(c)}</code>" for c in preset.checkpoints)
    head = f"<b>{html.escape(preset.display_name)}</b>" + (f" — {checkpoints}" if checkpoints else "")
    items = "".join(f"<li>{code_spans(note)}</li>" for note in preset.notes)
    dropped = "; ".join(f"<code>{html.escape(k)}</code>: {code_spans(v)}" for k, v in preset.round_trip_differences.items())
    tail = f"<p><b>Not kept when rendered into history:</b> {dropped}</p>" if dropped else ""
    return f'<div class="notes"><p>{head}</p><ul>{items}</ul>{tail}</div>'


_CODE = regex.compile(rf"(?:{SPECIAL_TOKEN})|\{{%-?.*?-?%\}}|\{{\{{.*?\}}\}}")


def code_spans(text: str) -> str:
    """`text` escaped, with special tokens and Jinja tags in `<code>`."""
    out, cut = [], 0
    for match in _CODE.finditer(text):
        out += [html.escape(text[cut : match.start()]), f'<code class="tok">{html.escape(match.group())}</code>']
        cut = match.end()
    return "".join(out) + html.escape(text[cut:])


def fill(session: Session, workspace: Workspace, note: str = "", diagnostics: list[Diagnostic] | None = None,
         detail: str = "") -> dict[str, Any]:
    """Show `workspace` in every panel (`FILL`); the prompt panel is `show` or `refreshed`'s. A
    draft under review (and its undo) belonged to the workspace shown before: it goes."""
    session.workspace = workspace
    session.loaded = None if workspace.preset else loaded_version(workspace)  # what an edit is compared with
    session.last_prompt_html = ""
    session.last_spec = None
    session.form_problems = []
    session.draft = session.draft_undo = None
    loaded = load_response_spec(workspace.response_template)
    preset = workspace.preset if workspace.preset in [n for _, n in preset_choices()] else None
    return {
        "preset": gr.update(value=preset),
        "chat_template": workspace.chat_template,
        "response_template": workspace.response_template,
        **cases.show_case(workspace),
        **settings_updates(workspace),
        "legend": legend_html(field_classes(loaded.template.fields)) if loaded.ok else "",
        "notes": notes_html(workspace),
        "status": status_html(diagnostics or [], note, undo=session.load_undo is not None, detail=detail),
        "publish_repo": workspace.source_repo,
        "publish_revision": workspace.source_revision,
        **runs.cleared_run(session),
        **tokens.special_tokens_shown(session),
        "draft_box": gr.update(visible=False),
        "draft_undo": gr.update(visible=False),
        "draft_status": "",
    }


def show(session: Session, workspace: Workspace, show_whitespace: bool, note: str = "",
         diagnostics: list[Diagnostic] | None = None, detail: str = "") -> dict[str, Any]:
    """Show `workspace` in every panel, its prompt included (`WORKSPACE_SHOWN`): one answer, rather
    than a fill and then a second round trip for the prompt (or for its explanation: a preset's
    templates are compiled, and explained, in the render workers when the app starts them)."""
    return {**fill(session, workspace, note, diagnostics, detail), **refreshed(session, show_whitespace)}


def pick_preset(session: Session, preset: str, show_whitespace: bool = False, runner: str | None = None) -> dict[str, Any]:
    """Another preset: its templates, cases and recordings, run the way the visitor chose to run
    (`runner`, as the page shows it: the session may not have saved a change made just before the
    pick), so a local model's box gets this format's suggested checkpoint, and a server stays set."""
    workspace, problems = from_preset(preset)
    if workspace is None:
        return {"status": status_html(problems)}
    session.load_undo = session.workspace.copy()
    workspace.run.remote_url, workspace.run.remote_model = session.workspace.run.remote_url, session.workspace.run.remote_model
    chosen = runner in RUNNERS
    if chosen:
        workspace.run.runner = runner
    shown = show(session, workspace, show_whitespace, f"Loaded the <b>{html.escape(workspace.preset)}</b> preset.")
    if chosen:
        # The runner is left as the page shows it, not sent back: a runner picked while this answer was
        # on its way is not undone by it.
        shown.pop("runner", None)
    return shown


def load_hub(session: Session, hub_repo: str, hub_revision: str, show_whitespace: bool = False, keep_cases: bool = False,
             keep_response: bool = False, chat_template: str | None = None, response_template: str | None = None,
             form_case: str | None = None, **form: Any) -> dict[str, Any]:
    """"Load from Hub": a workspace of that repo's (or folder's) model."""
    saved = _save_editors(session, chat_template, response_template, form_case, form)
    start, problems = from_hub(session.workspace, hub_repo, hub_revision, _keep(keep_cases, keep_response), session.owner)
    return _loaded(session, start, problems, f"Loaded <b>{html.escape((hub_repo or '').strip())}</b>", show_whitespace, saved)


def load_files(session: Session, files: list[Any] | None, show_whitespace: bool = False, keep_cases: bool = False,
               keep_response: bool = False, chat_template: str | None = None, response_template: str | None = None,
               form_case: str | None = None, **form: Any) -> dict[str, Any]:
    """Files uploaded: a workspace of their model. The file list is emptied (each upload is read
    once, and its temporary copies are deleted: the next upload holds only its own files)."""
    saved = _save_editors(session, chat_template, response_template, form_case, form)
    start, problems = from_files(session.workspace, files, _keep(keep_cases, keep_response), session.owner)
    return {**_loaded(session, start, problems, "Loaded your files", show_whitespace, saved), "files": None}


def undo_load(session: Session, show_whitespace: bool = False) -> dict[str, Any]:
    """"Undo" in the status line: the workspace as it was before the last load (or preset)."""
    previous, session.load_undo = session.load_undo, None
    if previous is None:
        return {"status": status_html([], "Nothing to undo.")}
    return show(session, previous, show_whitespace, "The workspace is back as it was before the load.")


def _keep(keep_cases: Any, keep_response: Any) -> Keep:
    return Keep(cases=bool(keep_cases), response_template=bool(keep_response))


def _save_editors(session: Session, chat_template: str | None, response_template: str | None, form_case: str | None,
                  form: dict[str, Any]) -> dict[str, Any]:
    """Keep the editors and the case form in the session before a load reads anything: whatever the
    load does, the last edit is in the workspace it replaces (and that Undo brings back). Returns the
    browser storage's code when the editors were sent."""
    if chat_template is None and response_template is None and form_case is None:
        return {}
    from .state import encode_workspace

    session.form_problems = sync(session, chat_template, response_template, form_case or "", form)
    return {"saved_code": encode_workspace(session.workspace)}


def _loaded(session: Session, start: ModelStart | None, problems: list[Diagnostic], done: str, show_whitespace: bool,
            saved: dict[str, Any]) -> dict[str, Any]:
    """What a load shows: the new workspace with what became of the previous one (kept for Undo), or
    why nothing was loaded (the workspace as it was, editors and all)."""
    if start is None:
        return {"status": status_html(problems, undo=session.load_undo is not None), **saved}
    session.load_undo = session.workspace.copy()
    tokens.keep_tokenizer_tokens(session, start.workspace)
    summary = f"{start.summary[0].upper()}{start.summary[1:]}." if start.summary else ""
    return show(session, start.workspace, show_whitespace, f"{done}.", problems, detail=summary)


def restore_page(session: Session, boot: str, show_whitespace: bool = False) -> dict[str, Any]:
    """Page load with something to restore (`share.RESTORE_GATE_JS`): a share link's state, else
    this browser's saved copy, else the default preset. Whatever the link holds, the page loads
    (with a message when the link cannot be opened)."""
    try:
        workspace, note = restore(boot)
        return show(session, workspace or default_workspace(), show_whitespace, html.escape(note))
    except Exception as e:  # noqa: BLE001 - a damaged saved state must never stop the page from loading
        log_failure("Restoring a saved state failed", e)
        return show(session, default_workspace(), show_whitespace, "⚠ The saved state could not be opened; showing the default preset.")


def check_first_view(session: Session, show_whitespace: bool = False) -> dict[str, Any]:
    """Every page load: the page was served showing the prompt as rendered when the server started;
    the prompt panel is sent again only where it renders differently now (a template that prints
    today's date, a day later). Usually nothing."""
    served = first_view()
    return {name: value for name, value in refreshed(session, show_whitespace).items() if served.get(name) != value}


@cache
def first_view() -> dict[str, Any]:
    """What the page shows as served, before any event (`WORKSPACE_SHOWN`): the default preset
    filled in, with its prompt, so a new visitor sees it as soon as the page is drawn instead of
    after a load event and a render. Rendered in this process: it is the app's own preset, not a
    visitor's template."""
    session = Session.empty()
    return {**fill(session, session.workspace), **view_outputs(session, build_prompt_view(session, False, in_process=True))}


def set_first_view(ui: Wiring) -> None:
    """Give the page's components the values of `first_view`, as if they had been built with them:
    what Gradio serves as the page, and its constructor arguments (Gradio rebuilds a component from
    those when an event updates it, and checks a dropdown's value against the choices it finds there)."""
    ui.served = dict(first_view())  # what an answer need not send again (wiring.not_shown_yet)
    for name, value in first_view().items():
        component = ui[name]
        update = value if isinstance(value, dict) and value.get("__type__") == "update" else {"value": value}
        props = {k: v for k, v in update.items() if k not in ("__type__", "value")}
        if props:  # labels, choices, visibility: as the component's own constructor stores them
            blank = {"value": None} if "value" in inspect.signature(type(component).__init__).parameters else {}
            made = type(component)(**{**component.constructor_args, **props, **blank, "render": False})
            for key in props:
                setattr(component, key, getattr(made, key))
        component.constructor_args.update(props)
        if "value" in update:
            component.value = component.postprocess(update["value"])
            component.constructor_args["value"] = update["value"]


def pick_recording(session: Session, recording: str, form_case: str, **form: Any) -> dict[str, Any]:
    """Picking a recording also shows its case (the prompt decides how the output parses)."""
    save_form(session.workspace, form_case, CaseForm.from_named(form))
    workspace = session.workspace
    workspace.run.recording = recording
    chosen = workspace.recording(recording)
    if chosen is not None and workspace.find_case(chosen.case) is not None:
        workspace.case_name = chosen.case
    return {**cases.show_case(workspace), **runs.pasted_visibility(recording), **runs.forget_other_run(session)}


START_HERE = (
    '<div class="start-here" id="start-here"><span><b>Start here:</b> pick a preset, edit either template (the prompt '
    "updates as you type), press <b>▶ Run</b> (Ctrl+Enter), and read the output region by region.</span>"
    '<button class="start-here-close" title="Hide this line" aria-label="Hide this line">×</button></div>'
)
# On a phone the two editors share one place: this switch shows one at a time.
EDITOR_SWITCH = (
    '<div class="editor-switch" role="group" aria-label="Editor shown"><button data-show="chat" '
    'aria-pressed="true">Chat template</button><button data-show="response" aria-pressed="false">Response template</button></div>'
)
# Presentation mode (for a classroom's projector): larger type and only the teaching flow; the page's
# script toggles it, and `?present=1` in the address opens the page in it.
PRESENT_TOGGLE = ('<button id="present-toggle" class="present-toggle" aria-pressed="false" title="Presentation mode: '
                  'larger type, only conversation → prompt → output → parsed message (or open the page with '
                  '?present=1)">▣ Present</button>')


def build() -> gr.Blocks:
    """The page: a compact header, a toolbar with the loop's controls (preset, case, runner, Run),
    then the workbench: both editors beside the prompt and the output, all in the first screen of a
    laptop. Details (the case's JSON, run options, events, step-through) follow below."""
    ui = Wiring()
    with gr.Blocks(title="Template playground", fill_width=True, elem_id="playground") as page:
        # A value, not a function: Gradio deep-copies it for each session. A function would also be
        # called by a load event of its own on every page load, racing the page's own load (which
        # restores a share link or saved state) and sometimes replacing what it restored.
        ui.add(session=gr.State(Session.empty()), boot=gr.Textbox(visible=False), saved_code=gr.Textbox(visible=False))
        # Pressed by the page's own script when there is a share link or a saved copy to restore.
        ui.add(restore_button=gr.Button("Restore", elem_id="restore-button", elem_classes=["hidden-trigger"]))
        # Pressed by the page's script once the author pauses: where the prompt's characters came from.
        ui.add(explain_button=gr.Button("Explain the prompt", elem_id="explain-button", elem_classes=["hidden-trigger"]))
        # Pressed by the status line's Undo (page.js: `data-press`).
        ui.add(load_undo=gr.Button("Undo the load", elem_id=UNDO_BUTTON, elem_classes=["hidden-trigger"]))
        with gr.Row(equal_height=False, elem_id="header-row"):
            gr.HTML(header_html(), elem_id="header", min_width=300)
            # What the last load said ("Loaded the … preset", a Hub error): in the header, so it
            # takes no room from the workbench.
            ui.add(status=gr.HTML(elem_id="top-status", min_width=120))
            with gr.Accordion("Load from Hub or files", open=False, elem_id="load-accordion"):
                ui.add(**build_load_panel())
            with gr.Accordion("About this format", open=False, elem_id="notes-accordion"):
                notes = gr.HTML(elem_id="preset-notes")
            gr.HTML(PRESENT_TOGGLE, elem_id="present-box", min_width=0)
            with gr.Column(elem_id="share-box", min_width=230):
                with gr.Row(equal_height=True):
                    share_button = gr.Button("Share link", elem_id="share-button", scale=0, min_width=100, size="sm")
                    share_link = gr.Textbox(show_label=False, placeholder="Press Share for a link", buttons=["copy"],
                                            elem_id="share-link", max_lines=1, container=False, min_width=150)  # fmt: skip
        ui.add(share_button=share_button, share_code=gr.Textbox(visible=False), share_link=share_link)
        ui.add(notes=notes)
        with gr.Row(equal_height=True, elem_id="toolbar"):
            ui.add(preset=gr.Dropdown(preset_choices(), label="Preset", elem_id="preset-picker", min_width=170, scale=1))
            ui.add(**cases.build_case_picker())
            ui.add(**runs.build_run_controls())
        gr.HTML(START_HERE, elem_id="start-here-box")

        with gr.Tabs(elem_id="tabs"):
            with gr.Tab("Playground", id="playground"):
                # Each template beside what it makes: the chat template beside the prompt, the response
                # template beside the output (style.css lays the four out as a grid).
                with gr.Row(equal_height=False, elem_id="workbench"):
                    with gr.Column(elem_id="editors-area", min_width=300):
                        gr.HTML(EDITOR_SWITCH, elem_id="editor-switch-box")
                        ui.add(**build_editors())
                    # Presentation mode shows its walk's bar (app/walk.js) and the conversation here
                    # (app/conversation.js moves its view in).
                    gr.HTML(WALK_BAR, elem_id="walk-box")
                    gr.HTML('<div class="panel-title">Conversation</div><div class="present-slot"></div>',
                            elem_id="present-conversation", elem_classes=["panel"])
                    # The prompt above the output, in one column whose split follows what is on screen
                    # (app/layout.js): the prompt grows with its text, the output gets its room after a run.
                    with gr.Column(elem_id="view-area", min_width=300):
                        with gr.Column(elem_id="prompt-area", min_width=300):
                            ui.add(**build_prompt_panel())
                        with gr.Column(elem_id="output-area", min_width=300):
                            ui.add(**runs.build_output_panel())
                with gr.Row(equal_height=False, elem_id="details-row"):
                    with gr.Column(scale=3, min_width=320, elem_id="case-area"):
                        ui.add(**cases.build_case_panel())
                    with gr.Column(scale=2, min_width=300, elem_id="side-area"):
                        ui.add(**runs.build_run_options())
                        ui.add(**tokens.build_token_controls())
                        ui.add(**runs.build_events())
                # What changes for the model: this edit against the loaded version (app/behaviour_view.py).
                with gr.Accordion("What changes for the model", open=False, elem_id="behaviour-accordion"):
                    ui.add(**build_behaviour_section("playground"))
                with gr.Group(elem_classes=["panel"], elem_id="step-panel"):
                    ui.add(step_view=build_step_view(ui["step"]))
            with gr.Tab("Checks", id="checks"):
                ui.add(**build_checks_tab())
                ui.add(**build_checks_extras())
            with gr.Tab("Publish", id="publish"):
                ui.add(**build_publish_tab())
        set_first_view(ui)
        wire(page, ui)
    return page


def wire(page: gr.Blocks, ui: Wiring) -> None:
    """Every event of the page, by component name."""
    quiet: dict[str, Any] = {"show_progress": "hidden", "queue": True}

    def then_refresh(event: Any) -> Any:
        return ui.on(event.then, refresh, REFRESH_INPUTS, REFRESH_OUTPUTS, **quiet)

    # Edits: each editor sends only its own text (the session holds the rest), straight to the
    # handler (queue=False: no queue round trip per keystroke; a session refreshes one at a time).
    typing: dict[str, Any] = {"trigger_mode": "always_last", "show_progress": "hidden", "queue": False, "preprocess": False, "postprocess": False}
    ui.on(ui["chat_template"].input, edit_chat_template, ["session", "chat_template", "show_whitespace"], REFRESH_OUTPUTS, **typing)
    ui.on(ui["response_template"].input, edit_response_template, ["session", "response_template", "show_whitespace"],
          REFRESH_OUTPUTS, **typing)
    ui.on([ui["show_whitespace"].input] + [ui[name].input for name in FORM_FIELDS], edit_case, REFRESH_INPUTS,
          REFRESH_OUTPUTS, **typing)
    # Each keystroke's prompt is shown first; where each of its characters came from follows once the
    # author pauses (the page presses the hidden Explain button: provenance.js).
    ui.on(ui["explain_button"].click, explain_view, ["session", "show_whitespace"], ["prompt", "prompt_info"], **typing)
    ui.on(ui["saved_code"].change, None, ["saved_code"], js=SAVE_JS)

    ui.on(page.load, check_first_view, ["session", "show_whitespace"], REFRESH_OUTPUTS, **quiet)
    ui.on(page.load, None, js=RESTORE_GATE_JS)
    restored = ui.on(ui["restore_button"].click, restore_page, ["session", "boot", "show_whitespace"], WORKSPACE_SHOWN, js=BOOT_JS)
    ui.on(restored.then, None, js=RESTORED_JS)  # the page's scripts learn the workspace they show is the restored one
    # `select`, not `input`: Gradio's dropdown sends `input` twice for one pick (twice the work and
    # twice the answer); and straight to the handler (no queue round trip), as an edit. Its 60 values
    # are sent as they are (no `postprocess`: each was a trip to a thread, and every value is already
    # what the page shows: text, numbers, booleans, a choice).
    ui.on(ui["preset"].select, pick_preset, ["session", "preset", "show_whitespace", "runner"], WORKSPACE_SHOWN, queue=False,
          show_progress="hidden", postprocess=False)
    ui.on(ui["hub_load"].click, load_hub, ["hub_repo", "hub_revision", *LOAD_INPUTS], WORKSPACE_SHOWN)
    ui.on(ui["files"].upload, load_files, ["files", *LOAD_INPUTS], LOAD_SHOWN)
    ui.on(ui["load_undo"].click, undo_load, ["session", "show_whitespace"], WORKSPACE_SHOWN)

    ui.on(ui["show_tokens"].input, toggle_tokens, ["session", "show_tokens", "show_whitespace"], REFRESH_OUTPUTS, **quiet)
    # A tokenizer for this session: then the prompt shows (and counts) its tokens.
    # Its special tokens become the templates' (the field shows them; editing it overrides them).
    loaded = ["tokenizer_status", *tokens.SPECIAL_SHOWN]
    then_refresh(ui.on(ui["tokenizer_hub"].click, tokens.load_from_hub, ["session", "tokenizer_repo", "hub_revision"],
                       loaded, concurrency_limit=4))
    then_refresh(ui.on(ui["tokenizer_upload"].upload, tokens.load_from_upload, ["session", "tokenizer_upload"],
                       loaded, concurrency_limit=4))
    then_refresh(ui.on(ui["tokenizer_folder_load"].click, tokens.load_from_folder, ["session", "tokenizer_folder"],
                       loaded, concurrency_limit=4))
    then_refresh(ui.on(ui["tokenizer_model"].click, tokens.use_model, ["session"], loaded))
    then_refresh(ui.on(ui["special_tokens"].input, tokens.edit_special_tokens, ["session", "special_tokens"],
                       ["special_tokens_diagnostics"], trigger_mode="always_last", **quiet))

    case_state = ["session", "form_case", *FORM_FIELDS]
    then_refresh(ui.on(ui["case_picker"].select, cases.select_case, [*case_state, "case_picker"], CASE_SHOWN, **quiet))
    then_refresh(ui.on(ui["case_add"].click, cases.add_case, case_state, CASE_SHOWN, **quiet))
    then_refresh(ui.on(ui["case_duplicate"].click, cases.duplicate_case, case_state, CASE_SHOWN, **quiet))
    then_refresh(ui.on(ui["case_rename"].click, cases.rename_case, [*case_state, "case_name"], CASE_SHOWN, **quiet))
    then_refresh(ui.on(ui["case_delete"].click, cases.delete_case, case_state, CASE_SHOWN, **quiet))
    then_refresh(ui.on(ui["recording"].select, pick_recording, [*case_state, "recording"], [*CASE_SHOWN, "pasted"], **quiet))

    boxes = ["recorded_box", "simulated_box", "local_box", "remote_box", "sampling_box", "pace_box"]
    # Which boxes show follows the runner and the recording, however they changed (a preset sets the
    # recording): straight to the handler (a queued event costs its own join and event stream).
    visibility: dict[str, Any] = {"show_progress": "hidden", "queue": False}
    ui.on(ui["runner"].change, runs.runner_visibility, ["runner", "recording"], [*boxes, "recording", "pasted"], **visibility)
    ui.on(ui["recording"].change, runs.pasted_visibility, ["recording", "runner"], ["pasted"], **visibility)
    ui.on(ui["check_size"].click, runs.check_model, ["model"], ["model_note"], concurrency_limit=4, show_progress="hidden")
    # A paste is saved when the box's value changes, however it changed: Gradio's `input` comes from a
    # key press, before a Ctrl+V's text is in the box, and never for a paste from the menu (a reload
    # then found an older paste).
    ui.on([*(ui[name].input for name in SETTINGS), ui["pasted"].change], save_settings, ["session", *SETTINGS],
          ["saved_code"], trigger_mode="always_last", **quiet)
    ui.on(ui["run"].click, runs.run_callback, [*EDITED, *SETTINGS, "api_key", "show_whitespace"],
          [*RUN_OUTPUTS, *(name for name in REFRESH_OUTPUTS if name not in RUN_OUTPUTS)], concurrency_limit=16,
          show_progress="hidden")
    ui.on(ui["stop"].click, runs.stop_button, ["session"], [], queue=False, show_progress="hidden")
    # The author moves the slider (not a run setting it): the replay is built on demand.
    ui.on([ui["step"].input, ui["step"].release], step_through, ["session", "step"], ["step_view"], trigger_mode="always_last", **quiet)

    share = ui.on(ui["share_button"].click, share_code, [*EDITED, *SETTINGS], ["share_code"], **quiet)
    ui.on(share.then, None, ["share_code"], ["share_link"], js=LINK_JS)

    ui.on(ui["draft_button"].click, drafts.draft_response, EDITED, drafts.SHOWN, concurrency_limit=4)
    then_refresh(ui.on(ui["draft_apply"].click, drafts.apply_draft, ["session", "response_template"], drafts.APPLIED))
    then_refresh(ui.on(ui["draft_undo"].click, drafts.undo_draft, ["session"], drafts.APPLIED))
    ui.on(ui["draft_discard"].click, drafts.discard_draft, ["session"], drafts.SHOWN, **quiet)
    # The format library: the search filters the picker; a pick is reviewed as a diff, applied (and
    # undone) as a draft is; its examples can become recordings.
    ui.on(ui["format_search"].input, formats.search_formats, ["format_search"], ["format_picker", "format_status"],
          trigger_mode="always_last", **quiet)
    ui.on(ui["format_picker"].select, formats.pick_format, [*EDITED, "format_picker"], formats.SHOWN, **quiet)
    then_refresh(ui.on(ui["format_apply"].click, formats.apply_format, ["session", "response_template", "format_picker"],
                       formats.APPLIED))
    then_refresh(ui.on(ui["format_examples"].click, formats.add_examples, [*EDITED, "format_picker"], formats.EXAMPLES_SHOWN,
                       **quiet))
    ui.on(ui["format_discard"].click, formats.discard_format, [], formats.SHOWN, **quiet)

    # Checks take a worker for up to a minute: the pool gives each client one at a time and keeps places
    # for renders (engine.sandbox), so no limit here holds one visitor's checks behind another's.
    ui.on(ui["checks_run"].click, run_all_checks, EDITED,
          ["checks_summary", "checks_list", "checks_diagnostics", "engines_table", "engine_detail", "intended_list", "check_detail"])
    ui.on(ui["checks_list"].click, pick_check, ["session"], ["check_detail"], show_progress="hidden")
    ui.on(ui["engines_table"].select, show_engine_cell, ["session"], ["engine_detail"], show_progress="hidden")
    ui.on(ui["intend_mark"].click, mark_selected_intended, ["session", "intend_why"],
          ["intended_list", "checks_list", "intend_why", "saved_code"], **quiet)
    ui.on(ui["intend_unmark"].click, unmark_selected, ["session"], ["intended_list", "saved_code"], **quiet)

    publish_inputs = [*EDITED, "publish_repo", "publish_revision", "publish_token"]
    ui.on(ui["publish_preview"].click, preview, publish_inputs,
          ["publish_diff", "publish_title", "publish_description", "publish_messages", "publish_zip", "publish_behaviour"],
          concurrency_limit=4)
    ui.on(ui["publish_open"].click, open_pull_request, [*publish_inputs, "publish_title", "publish_description"],
          ["publish_messages"], concurrency_limit=4)
    ui.on(ui["publish_download"].click, download_zip, EDITED, ["publish_zip", "publish_messages"])
    # What changes for the model: the edit against the loaded version, under the chat template and
    # in Publish (a long call in the worker, one per client at a time: engine.sandbox).
    ui.on(ui["playground_compare"].click, behaviour.compare_in_playground, EDITED, ["playground_behaviour"])
    ui.on(ui["publish_compare"].click, behaviour.compare_in_publish, EDITED, ["publish_behaviour"])
