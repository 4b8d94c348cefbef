"""The case panel: named test conversations (switch, add, duplicate, rename, delete), their messages,
tools and documents as JSON, and the template kwargs the preset declares as proper controls.

Kwarg controls come from a fixed pool of slots (checkboxes, dropdowns, text boxes) that a preset's
declared kwargs are mapped onto: Gradio pages are declared once, and a pool keeps every control a
plain component that tests can drive. Kwargs beyond the pool, or undeclared ones, go in the
"other template kwargs" JSON box."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

import gradio as gr

from engine.cases import Case
from engine.diagnostics import Diagnostic, json_error
from engine.render import RESERVED_KWARGS

from .state import Session, Workspace

BOOL_SLOTS, CHOICE_SLOTS, TEXT_SLOTS = 4, 3, 3


@dataclass(frozen=True)
class Slot:
    name: str
    kind: str  # "bool" | "choice" | "text"
    index: int
    spec: dict


def slot_plan(specs: dict[str, dict]) -> list[Slot]:
    """Which control shows which declared kwarg; kwargs that do not fit are left to the JSON box."""
    counts = {"bool": 0, "choice": 0, "text": 0}
    limits = {"bool": BOOL_SLOTS, "choice": CHOICE_SLOTS, "text": TEXT_SLOTS}
    plan = []
    for name, spec in specs.items():
        kind = {"bool": "bool", "choice": "choice"}.get(spec.get("type", ""), "text")
        if kind == "choice" and not spec.get("choices"):
            kind = "text"
        if counts[kind] < limits[kind]:
            plan.append(Slot(name, kind, counts[kind], spec))
            counts[kind] += 1
    return plan


@dataclass
class CaseForm:
    """The case panel's values, in the order `FORM_ORDER` lists its components."""

    messages: str
    tools: str
    documents: str
    add_generation_prompt: bool
    continue_final_message: bool
    extra_kwargs: str
    bools: tuple
    choices: tuple
    texts: tuple

    @classmethod
    def from_values(cls, values: tuple | list) -> CaseForm:
        values = list(values)
        head, rest = values[:6], values[6:]
        bools = tuple(rest[:BOOL_SLOTS])
        choices = tuple(rest[BOOL_SLOTS : BOOL_SLOTS + CHOICE_SLOTS])
        texts = tuple(rest[BOOL_SLOTS + CHOICE_SLOTS : BOOL_SLOTS + CHOICE_SLOTS + TEXT_SLOTS])
        return cls(*head, bools, choices, texts)  # type: ignore[arg-type]


FORM_SIZE = 6 + BOOL_SLOTS + CHOICE_SLOTS + TEXT_SLOTS


def _json_dump(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) if value is not None else ""


def _parse_json(text: str, what: str, *, allow_empty: bool) -> tuple[Any, Diagnostic | None]:
    if not (text or "").strip():
        if allow_empty:
            return None, None
        return None, Diagnostic("error", f"{what} is empty.", "case", hint="Write a JSON value here.")
    try:
        return json.loads(text), None
    except json.JSONDecodeError as e:
        return None, json_error(text, e, "case", f"{what}: invalid JSON")


def read_form(workspace: Workspace, base: Case, form: CaseForm) -> tuple[Case | None, list[Diagnostic]]:
    """The case the form describes (None if it has errors), starting from `base` (name, description)."""
    problems: list[Diagnostic] = []
    messages, error = _parse_json(form.messages, "Messages", allow_empty=False)
    problems += [error] if error else []
    tools, error = _parse_json(form.tools, "Tools", allow_empty=True)
    problems += [error] if error else []
    documents, error = _parse_json(form.documents, "Documents", allow_empty=True)
    problems += [error] if error else []
    extra, error = _parse_json(form.extra_kwargs, "Other template kwargs", allow_empty=True)
    problems += [error] if error else []
    if extra is not None and not isinstance(extra, dict):
        problems.append(Diagnostic("error", "Other template kwargs must be a JSON object.", "case",
                                   hint='e.g. {"enable_thinking": false}'))  # fmt: skip
        extra = None
    kwargs, kwarg_problems = _slot_kwargs(workspace, form)
    problems += kwarg_problems
    if problems:
        return None, problems
    overrides = {k: v for k, v in kwargs.items() if v != workspace.kwarg_specs.get(k, {}).get("default")}
    overrides.update(extra or {})
    if clash := sorted(RESERVED_KWARGS & set(overrides)):
        return None, [Diagnostic("error", f"Template kwargs cannot set {', '.join(clash)}: the case's own controls do.", "case")]
    case = replace(
        base,
        messages=messages,
        tools=tools,
        documents=documents,
        add_generation_prompt=bool(form.add_generation_prompt),
        continue_final_message=bool(form.continue_final_message),
        template_kwargs=overrides,
    )
    return case, []


def _slot_kwargs(workspace: Workspace, form: CaseForm) -> tuple[dict, list[Diagnostic]]:
    values: dict[str, Any] = {}
    problems = []
    for slot in slot_plan(workspace.kwarg_specs):
        if slot.kind == "bool":
            values[slot.name] = bool(form.bools[slot.index])
        elif slot.kind == "choice":
            value = form.choices[slot.index]
            if value not in (None, ""):
                values[slot.name] = value
        else:
            text = form.texts[slot.index] or ""
            if slot.spec.get("type") == "json":
                value, error = _parse_json(text, f"Template kwarg {slot.name}", allow_empty=True)
                if error:
                    problems.append(error)
                elif value is not None:
                    values[slot.name] = value
            elif text or slot.spec.get("default") == "":
                values[slot.name] = text
    return values, problems


def form_updates(workspace: Workspace, case: Case) -> list:
    """Values (and labels, visibility) for every form component, showing `case`."""
    plan = {(s.kind, s.index): s for s in slot_plan(workspace.kwarg_specs)}
    effective = {**{k: v for k, v in workspace.default_kwargs().items() if v is not None}, **case.template_kwargs}
    declared = {s.name for s in plan.values()}
    extra = {k: v for k, v in case.template_kwargs.items() if k not in declared}
    updates: list = [
        _json_dump(case.messages),
        _json_dump(case.tools),
        _json_dump(case.documents),
        bool(case.add_generation_prompt),
        bool(case.continue_final_message),
        _json_dump(extra) if extra else "",
    ]
    for kind, count in (("bool", BOOL_SLOTS), ("choice", CHOICE_SLOTS), ("text", TEXT_SLOTS)):
        for index in range(count):
            slot = plan.get((kind, index))
            if slot is None:
                updates.append(gr.update(visible=False, value=False if kind == "bool" else None if kind == "choice" else ""))
                continue
            value = effective.get(slot.name, slot.spec.get("default"))
            common = {"visible": True, "label": slot.name, "info": slot.spec.get("help") or None}
            if kind == "bool":
                updates.append(gr.update(value=bool(value), **common))
            elif kind == "choice":
                choices = [str(c) for c in slot.spec.get("choices", [])]
                updates.append(gr.update(value=str(value) if value is not None else None, choices=choices, **common))
            else:
                text = _json_dump(value) if slot.spec.get("type") == "json" and value is not None else ("" if value is None else str(value))
                updates.append(gr.update(value=text, **common))
    return updates


# ----- case actions ------------------------------------------------------------------------------
# Each returns (picker, form case name, description, *form values); the page then refreshes the prompt.


def show_case(workspace: Workspace, note: str = "") -> tuple:
    case = workspace.case
    description = case.description or ""
    if note:
        description = f"{description}\n\n{note}" if description else note
    return (
        gr.update(choices=workspace.case_names(), value=case.name),
        case.name,
        case.name,
        description,
        *form_updates(workspace, case),
    )


def save_form(session: Session, form_case: str, form: CaseForm) -> list[Diagnostic]:
    """Write the form into the case it shows (when it parses); returns the form's problems."""
    workspace = session.workspace
    base = workspace.find_case(form_case) or workspace.case
    case, problems = read_form(workspace, base, form)
    if case is not None:
        workspace.cases[workspace.cases.index(base)] = case
    return problems


def select_case(session: Session, name: str, form_case: str, *form: Any) -> tuple:
    save_form(session, form_case, CaseForm.from_values(form))
    workspace = session.workspace
    if workspace.find_case(name) is not None:
        workspace.case_name = name
    return show_case(workspace)


def add_case(session: Session, form_case: str, *form: Any) -> tuple:
    save_form(session, form_case, CaseForm.from_values(form))
    workspace = session.workspace
    name = workspace.unique_name("new case")
    workspace.cases.append(Case(name, [{"role": "user", "content": "Hello!"}]))
    workspace.case_name = name
    return show_case(workspace)


def duplicate_case(session: Session, form_case: str, *form: Any) -> tuple:
    save_form(session, form_case, CaseForm.from_values(form))
    workspace = session.workspace
    source = workspace.case
    copy = Case.from_dict({**source.to_dict(), "name": workspace.unique_name(f"{source.name} copy")})
    workspace.cases.insert(workspace.cases.index(source) + 1, copy)
    workspace.case_name = copy.name
    return show_case(workspace)


def rename_case(session: Session, new_name: str, form_case: str, *form: Any) -> tuple:
    save_form(session, form_case, CaseForm.from_values(form))
    workspace = session.workspace
    new_name = (new_name or "").strip()
    case = workspace.case
    if not new_name:
        return show_case(workspace, "⚠ A case needs a name.")
    if new_name != case.name and workspace.find_case(new_name) is not None:
        return show_case(workspace, f"⚠ There is already a case named “{new_name}”.")
    old = case.name
    workspace.cases[workspace.cases.index(case)] = replace(case, name=new_name)
    for recording in workspace.recordings:
        if recording.case == old:
            recording.case = new_name
    workspace.case_name = new_name
    return show_case(workspace)


def delete_case(session: Session, form_case: str, *form: Any) -> tuple:
    workspace = session.workspace
    case = workspace.find_case(form_case) or workspace.case
    if len(workspace.cases) <= 1:
        save_form(session, form_case, CaseForm.from_values(form))
        return show_case(workspace, "⚠ The last case cannot be deleted; edit it instead.")
    index = workspace.cases.index(case)
    workspace.cases.remove(case)
    workspace.case_name = workspace.cases[min(index, len(workspace.cases) - 1)].name
    return show_case(workspace)


# ----- the panel ---------------------------------------------------------------------------------


@dataclass
class CasePanel:
    picker: gr.Dropdown
    name: gr.Textbox
    form_case: gr.Textbox
    description: gr.Markdown
    add: gr.Button
    duplicate: gr.Button
    rename: gr.Button
    delete: gr.Button
    messages: gr.Code
    tools: gr.Code
    documents: gr.Code
    add_generation_prompt: gr.Checkbox
    continue_final_message: gr.Checkbox
    extra_kwargs: gr.Code
    bools: list[gr.Checkbox]
    choices: list[gr.Dropdown]
    texts: list[gr.Textbox]
    diagnostics: gr.HTML

    @property
    def form(self) -> list:
        """The form components in `CaseForm` order."""
        return [
            self.messages, self.tools, self.documents, self.add_generation_prompt,
            self.continue_final_message, self.extra_kwargs, *self.bools, *self.choices, *self.texts,
        ]  # fmt: skip

    @property
    def shown(self) -> list:
        """What a case action updates: picker, name box, form case, description, then the form."""
        return [self.picker, self.name, self.form_case, self.description, *self.form]


def build_case_panel() -> CasePanel:
    with gr.Group(elem_classes=["panel"]):
        gr.HTML('<div class="panel-title">Case <span class="sub">a named test conversation</span></div>')
        with gr.Row(equal_height=True):
            picker = gr.Dropdown(label="Case", choices=[], scale=3, elem_id="case-picker", allow_custom_value=False)
            name = gr.Textbox(label="Name", scale=2, elem_id="case-name")
        with gr.Row():
            add = gr.Button("+ New", size="sm", elem_id="case-add")
            duplicate = gr.Button("Duplicate", size="sm", elem_id="case-duplicate")
            rename = gr.Button("Rename", size="sm", elem_id="case-rename")
            delete = gr.Button("Delete", size="sm", variant="stop", elem_id="case-delete")
        description = gr.Markdown(elem_classes=["case-description"])
        form_case = gr.Textbox(visible=False)
        messages = gr.Code(label="Messages (JSON)", language="json", lines=8, max_lines=24, elem_id="messages-editor")
        with gr.Row():
            add_generation_prompt = gr.Checkbox(label="add_generation_prompt", elem_id="kw-add-generation-prompt")
            continue_final_message = gr.Checkbox(label="continue_final_message", elem_id="kw-continue-final")
        with gr.Row(elem_id="kwarg-controls"):
            bools = [gr.Checkbox(visible=False, elem_id=f"kw-bool-{i}") for i in range(BOOL_SLOTS)]
            choices = [gr.Dropdown(visible=False, choices=[], elem_id=f"kw-choice-{i}") for i in range(CHOICE_SLOTS)]
            texts = [gr.Textbox(visible=False, elem_id=f"kw-text-{i}") for i in range(TEXT_SLOTS)]
        with gr.Accordion("Tools, documents, other template kwargs", open=False, elem_id="case-more"):
            tools = gr.Code(label="Tools (JSON list of function schemas; empty for none)", language="json", lines=4, max_lines=20, elem_id="tools-editor")
            documents = gr.Code(label="Documents (JSON list; empty for none)", language="json", lines=2, max_lines=12, elem_id="documents-editor")
            extra_kwargs = gr.Code(label="Other template kwargs (JSON object)", language="json", lines=2, max_lines=10, elem_id="extra-kwargs-editor")
        diagnostics = gr.HTML(elem_classes=["diag-box"], elem_id="case-diagnostics")
    return CasePanel(picker, name, form_case, description, add, duplicate, rename, delete, messages, tools,
                     documents, add_generation_prompt, continue_final_message, extra_kwargs, bools, choices,
                     texts, diagnostics)  # fmt: skip
