"""The case panel: named test conversations (switch, add, duplicate, rename, delete), their messages,
tools and documents as JSON, and the template kwargs the preset declares as proper controls. The
form's data model is `case_form`; this module declares the controls and the case actions (each
returns the values to show, by name)."""

from __future__ import annotations

import html
import json
from dataclasses import replace
from typing import Any

import gradio as gr

from engine.budget import check_workspace
from engine.cases import Case, message_shape
from engine.workspace import Workspace

from .case_form import BOOL_NAMES, CHOICE_NAMES, FORM_FIELDS, TEXT_NAMES, CaseForm, json_text, save_form, slot_plan
from .highlight import description_html
from .run_panel import forget_other_run
from .state import Session

# What a case action shows: the picker, the name box, the case the form holds, its description, the form.
SHOWN = ("case_picker", "case_name", "form_case", "case_description", *FORM_FIELDS)


def form_updates(workspace: Workspace, case: Case) -> dict[str, Any]:
    """Values (and labels, visibility) for every form control, showing `case`."""
    plan = {slot.control: slot for slot in slot_plan(workspace.kwarg_specs)}
    effective = {**workspace.template_kwargs(), **case.template_kwargs}
    declared = {s.name for s in plan.values()}
    extra = {k: v for k, v in case.template_kwargs.items() if k not in declared}
    updates: dict[str, Any] = {
        "messages": json_text(case.messages),
        "tools": json_text(case.tools),
        "documents": json_text(case.documents),
        "add_generation_prompt": bool(case.add_generation_prompt),
        "continue_final_message": bool(case.continue_final_message),
        "extra_kwargs": json_text(extra) if extra else "",
    }
    for control in (*BOOL_NAMES, *CHOICE_NAMES, *TEXT_NAMES):
        kind = control.split("_")[1]
        slot = plan.get(control)
        if slot is None:
            updates[control] = gr.update(visible=False, value=False if kind == "bool" else None if kind == "choice" else "")
            continue
        value = effective.get(slot.name, slot.spec.get("default"))
        common = {"visible": True, "label": slot.name, "info": slot.spec.get("help") or None}
        if kind == "bool":
            updates[control] = gr.update(value=bool(value), **common)
        elif kind == "choice":
            choices = [str(c) for c in slot.spec.get("choices", [])]
            updates[control] = gr.update(value=str(value) if value is not None else None, choices=choices, **common)
        else:
            text = json_text(value) if slot.spec.get("type") == "json" and value is not None else ("" if value is None else str(value))
            updates[control] = gr.update(value=text, **common)
    return updates


# ----- case actions ------------------------------------------------------------------------------
# Each saves the form into the case it showed, then returns what to show (`SHOWN`, and the run views
# cleared when the last run belongs to another case); the page then refreshes the prompt.


def show_case(workspace: Workspace, note: str = "") -> dict[str, Any]:
    case = workspace.case
    description = case.description or ""
    if note:
        description = f"{description}\n\n{note}" if description else note
    return {
        "case_picker": gr.update(choices=workspace.case_names(), value=case.name),
        "case_name": case.name,
        "form_case": case.name,
        "case_description": description_html(description),
        **form_updates(workspace, case),
    }


def _save(session: Session, form_case: str, form: dict[str, Any]) -> Workspace:
    save_form(session.workspace, form_case, CaseForm.from_named(form))
    return session.workspace


def select_case(session: Session, case_picker: str, form_case: str, **form: Any) -> dict[str, Any]:
    workspace = _save(session, form_case, form)
    if workspace.find_case(case_picker) is not None:
        workspace.case_name = case_picker
    return {**show_case(workspace), **forget_other_run(session)}


def add_case(session: Session, form_case: str, **form: Any) -> dict[str, Any]:
    workspace = _save(session, form_case, form)
    name = workspace.unique_name("new case")
    return _insert(session, len(workspace.cases), Case(name, [{"role": "user", "content": "Hello!"}]))


def duplicate_case(session: Session, form_case: str, **form: Any) -> dict[str, Any]:
    workspace = _save(session, form_case, form)
    source = workspace.case
    copy = Case.from_dict({**source.to_dict(), "name": workspace.unique_name(f"{source.name} copy")})
    return _insert(session, workspace.cases.index(source) + 1, copy)


def _insert(session: Session, index: int, case: Case) -> dict[str, Any]:
    """Add `case` at `index` and show it, unless the workspace cannot hold it (engine.budget)."""
    workspace = session.workspace
    workspace.cases.insert(index, case)
    if too_much := check_workspace(workspace, "case"):
        workspace.cases.remove(case)
        return show_case(workspace, f"⚠ {too_much[0].message}")
    workspace.case_name = case.name
    return {**show_case(workspace), **forget_other_run(session)}


def rename_case(session: Session, case_name: str, form_case: str, **form: Any) -> dict[str, Any]:
    workspace = _save(session, form_case, form)
    new_name = (case_name or "").strip()
    case = workspace.case
    if not new_name:
        return show_case(workspace, "⚠ A case needs a name.")
    if new_name != case.name and workspace.find_case(new_name) is not None:
        return show_case(workspace, f"⚠ There is already a case named “{new_name}”.")
    old, recordings = case.name, workspace.recordings
    index = workspace.cases.index(case)
    workspace.cases[index] = replace(case, name=new_name)
    workspace.recordings = [replace(r, case=new_name) if r.case == old else r for r in recordings]
    if too_much := check_workspace(workspace, "case"):  # a name is text the workspace holds, in its recordings too
        workspace.cases[index], workspace.recordings = case, recordings
        return show_case(workspace, f"⚠ {too_much[0].message}")
    workspace.case_name = new_name
    return {**show_case(workspace), **forget_other_run(session)}


def delete_case(session: Session, form_case: str, **form: Any) -> dict[str, Any]:
    workspace = session.workspace
    case = workspace.find_case(form_case) or workspace.case
    if len(workspace.cases) <= 1:
        _save(session, form_case, form)
        return show_case(workspace, "⚠ The last case cannot be deleted; edit it instead.")
    index = workspace.cases.index(case)
    workspace.cases.remove(case)
    workspace.case_name = workspace.cases[min(index, len(workspace.cases) - 1)].name
    return {**show_case(workspace), **forget_other_run(session)}


# ----- the panel ---------------------------------------------------------------------------------


def build_case_picker() -> dict[str, Any]:
    """The case picker (the toolbar holds it: switching cases is part of the loop)."""
    picker = gr.Dropdown(label="Case", choices=[], elem_id="case-picker", allow_custom_value=False, min_width=170, scale=1)
    return dict(case_picker=picker)


def conversation_box() -> str:
    """Where the conversation editor goes (app/conversation.js fills it): the switch between it and
    the JSON view, and the message shape it edits (from the engine), as data."""
    shape = html.escape(json.dumps(message_shape()), quote=True)
    return (
        '<div class="view-switch" role="group" aria-label="Edit the messages as">'
        '<button type="button" data-view="conversation" aria-pressed="true">Conversation</button>'
        '<button type="button" data-view="json" aria-pressed="false">JSON</button></div>'
        f'<div class="conversation" id="conversation" data-shape="{shape}"></div>'
    )


def build_case_panel() -> dict[str, Any]:
    """The case panel's components, by name (the picker is in the toolbar). The messages are edited
    as a conversation or as JSON (the `messages` editor, which the conversation writes into, so the
    server reads one checked value either way)."""
    with gr.Group(elem_classes=["panel"], elem_id="case-panel"):
        gr.HTML('<div class="panel-title">Case <span class="sub">the conversation the prompt is rendered from</span></div>')
        with gr.Row(equal_height=False, elem_id="case-actions"):
            name = gr.Textbox(label="Name", scale=2, min_width=180, elem_id="case-name")
            add = gr.Button("+ New", size="sm", scale=0, min_width=80, elem_id="case-add")
            duplicate = gr.Button("Duplicate", size="sm", scale=0, min_width=96, elem_id="case-duplicate")
            rename = gr.Button("Rename", size="sm", scale=0, min_width=86, elem_id="case-rename")
            delete = gr.Button("Delete", size="sm", variant="stop", scale=0, min_width=80, elem_id="case-delete")
        description = gr.HTML(elem_classes=["case-description"])  # text (a share link's), never markup
        form_case = gr.Textbox(visible=False)
        gr.HTML(conversation_box(), elem_id="conversation-box")
        messages = gr.Code(label="Messages (JSON)", language="json", lines=8, max_lines=24, elem_id="messages-editor")
        with gr.Row(elem_id="kwarg-controls"):
            add_generation_prompt = gr.Checkbox(label="add_generation_prompt", elem_id="kw-add-generation-prompt", min_width=220)
            continue_final_message = gr.Checkbox(label="continue_final_message", elem_id="kw-continue-final", min_width=220)
            slots = {name: gr.Checkbox(visible=False, elem_id=f"kw-bool-{i}", min_width=220) for i, name in enumerate(BOOL_NAMES)}
            slots |= {name: gr.Dropdown(visible=False, choices=[], elem_id=f"kw-choice-{i}", min_width=220)
                      for i, name in enumerate(CHOICE_NAMES)}  # fmt: skip
            slots |= {name: gr.Textbox(visible=False, elem_id=f"kw-text-{i}", min_width=220) for i, name in enumerate(TEXT_NAMES)}
        with gr.Accordion("Tools, documents, other template kwargs", open=False, elem_id="case-more"):
            tools = gr.Code(label="Tools (JSON list of function schemas; empty for none)", language="json", lines=4, max_lines=20, elem_id="tools-editor")
            documents = gr.Code(label="Documents (JSON list; empty for none)", language="json", lines=2, max_lines=12, elem_id="documents-editor")
            extra_kwargs = gr.Code(label="Other template kwargs (JSON object)", language="json", lines=2, max_lines=10, elem_id="extra-kwargs-editor")
        diagnostics = gr.HTML(elem_classes=["diag-box"], elem_id="case-diagnostics")
    return dict(
        case_name=name, form_case=form_case, case_description=description, case_add=add,
        case_duplicate=duplicate, case_rename=rename, case_delete=delete, messages=messages, tools=tools,
        documents=documents, add_generation_prompt=add_generation_prompt, continue_final_message=continue_final_message,
        extra_kwargs=extra_kwargs, case_diagnostics=diagnostics, **slots,
    )  # fmt: skip
