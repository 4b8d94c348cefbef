"""The case form as data (no UI here): the values the case panel's controls hold, how they map onto
a `Case`, and which declared template kwarg each control slot shows.

Kwarg controls come from a fixed pool of slots (checkboxes, dropdowns, text boxes) that the
declared kwargs are mapped onto: a Gradio page is declared once, and a pool keeps every control a
plain component that tests can drive. Kwargs beyond the pool, or undeclared ones, go in the
"other template kwargs" JSON box."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from engine.budget import check_workspace
from engine.cases import Case
from engine.diagnostics import Diagnostic
from engine.inputs import load_json
from engine.render import RESERVED_KWARGS
from engine.workspace import Workspace

BOOL_SLOTS, CHOICE_SLOTS, TEXT_SLOTS = 4, 3, 3
BOOL_NAMES = tuple(f"kw_bool_{i}" for i in range(BOOL_SLOTS))
CHOICE_NAMES = tuple(f"kw_choice_{i}" for i in range(CHOICE_SLOTS))
TEXT_NAMES = tuple(f"kw_text_{i}" for i in range(TEXT_SLOTS))
# The names of the form's controls, as the page registers them and handlers receive them.
FORM_FIELDS = ("messages", "tools", "documents", "add_generation_prompt", "continue_final_message", "extra_kwargs",
               *BOOL_NAMES, *CHOICE_NAMES, *TEXT_NAMES)  # fmt: skip


@dataclass(frozen=True)
class Slot:
    name: str
    kind: str  # "bool" | "choice" | "text"
    index: int
    spec: dict

    @property
    def control(self) -> str:
        """The name of the control that shows this kwarg."""
        return {"bool": BOOL_NAMES, "choice": CHOICE_NAMES, "text": TEXT_NAMES}[self.kind][self.index]


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


@dataclass(frozen=True)
class CaseForm:
    """The case panel's values, by control name (`FORM_FIELDS`)."""

    values: dict[str, Any]

    @classmethod
    def from_named(cls, values: dict[str, Any]) -> CaseForm:
        """The form from a handler's keyword arguments (other names are ignored). The page sends
        text, booleans or nothing; anything else (an API caller's number or list) is read as its
        text, so it becomes a message under the field rather than a crash."""
        return cls({name: _plain(values.get(name)) for name in FORM_FIELDS})

    def __getitem__(self, name: str) -> Any:
        return self.values[name]


def _plain(value: Any) -> str | bool | None:
    return value if value is None or isinstance(value, (str, bool)) else str(value)


def _parse_json(text: str | None, what: str, *, allow_empty: bool) -> tuple[Any, Diagnostic | None]:
    if not (text or "").strip():
        if allow_empty:
            return None, None
        return None, Diagnostic("error", f"{what} is empty.", "case", hint="Write a JSON value here.")
    value, problems = load_json(text, "case", what)  # type: ignore[arg-type]
    return value, (problems[0] if problems else None)


def read_form(workspace: Workspace, base: Case, form: CaseForm) -> tuple[Case | None, list[Diagnostic]]:
    """The case the form describes (None if it has errors), starting from `base` (name, description)."""
    problems: list[Diagnostic] = []
    parsed = {}
    for key, what, allow_empty in (("messages", "Messages", False), ("tools", "Tools", True),
                                   ("documents", "Documents", True), ("extra_kwargs", "Other template kwargs", True)):
        parsed[key], error = _parse_json(form[key], what, allow_empty=allow_empty)
        problems += [error] if error else []
    extra = parsed["extra_kwargs"]
    if extra is not None and not isinstance(extra, dict):
        problems.append(Diagnostic("error", "Other template kwargs must be a JSON object.", "case",
                                   hint='e.g. {"enable_thinking": false}'))
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
        messages=parsed["messages"],
        tools=parsed["tools"],
        documents=parsed["documents"],
        add_generation_prompt=bool(form["add_generation_prompt"]),
        continue_final_message=bool(form["continue_final_message"]),
        template_kwargs=overrides,
    )
    return case, []


def _slot_kwargs(workspace: Workspace, form: CaseForm) -> tuple[dict, list[Diagnostic]]:
    values: dict[str, Any] = {}
    problems = []
    for slot in slot_plan(workspace.kwarg_specs):
        value = form[slot.control]
        if slot.kind == "bool":
            values[slot.name] = bool(value)
        elif slot.kind == "choice":
            if value not in (None, ""):
                values[slot.name] = value
        elif slot.spec.get("type") == "json":
            parsed, error = _parse_json(value, f"Template kwarg {slot.name}", allow_empty=True)
            if error:
                problems.append(error)
            elif parsed is not None:
                values[slot.name] = parsed
        elif value or slot.spec.get("default") == "":
            values[slot.name] = value or ""
    return values, problems


def save_form(workspace: Workspace, form_case: str, form: CaseForm) -> list[Diagnostic]:
    """Write the form into the case it shows (when it parses; a typo never loses the last good
    case); returns the form's problems."""
    base = workspace.find_case(form_case) or workspace.case
    case, problems = read_form(workspace, base, form)
    if case is not None and case != base:
        index = workspace.cases.index(base)
        workspace.cases[index] = case
        if too_much := check_workspace(workspace, "case"):  # each field within its limit, all of them not
            workspace.cases[index] = base
            return too_much
    return problems


def json_text(value: Any) -> str:
    """How the form shows a JSON value ("" for none)."""
    return json.dumps(value, indent=2, ensure_ascii=False) if value is not None else ""
