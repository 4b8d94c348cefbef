"""The Checks tab's engines matrix (cases × engines; a cell opens the difference) and "mark as
intended" (kept in the workspace, so in browser storage and the share link). The engine decides
(`engine.checks`: the matrix, `mark_intended`); this module only shows and records."""

from __future__ import annotations

from typing import Any

import gradio as gr

from engine.budget import check_workspace
from engine.checks import CheckReport, mark_intended
from engine.engines import ENGINES, LABELS

from .check_list import checks_html
from .highlight import esc
from .state import Session, encode_workspace

ENGINES_NOTE = (
    "**Where does this template work?** Every case rendered by the engines that serve models, compared "
    "byte for byte with transformers (the reference). Click a cell to see the difference."
)
# Short words for the matrix cells; a cell's full text is shown when it is clicked.
CELL = {"identical": "✓ identical", "differs": "≠ differs", "error": "✗ error", "not checked": "– not checked"}
DEFAULT_WHY = "marked as intended in the Checks tab"


def engine_rows(engines: dict[str, dict[str, dict]]) -> list[list[str]]:
    """The matrix as table rows: one per case, one column per engine."""
    cases = list(dict.fromkeys(case for row in engines.values() for case in row))
    rows = []
    for case in cases:
        row = [case]
        for engine in ENGINES:
            cell = engines.get(engine, {}).get(case)
            if cell is None:
                row.append("")
            elif cell["status"] == "differs":
                row.append(f"{CELL['differs']} at {cell.get('line')}:{cell.get('column')}")
            else:
                row.append(CELL.get(cell["status"], cell["status"]))
        rows.append(row)
    return rows


def show_engine_cell(session: Session, evt: gr.SelectData) -> dict[str, str]:
    """A matrix cell was clicked: what that engine made of that case."""
    row, column = evt.index if isinstance(evt.index, (list, tuple)) else (evt.index, 0)
    cases = [r[0] for r in engine_rows(session.engines)]
    if not isinstance(row, int) or not 0 <= row < len(cases) or not isinstance(column, int) or not 1 <= column <= len(ENGINES):
        return {"engine_detail": ""}
    engine, case = ENGINES[column - 1], cases[row]
    cell = session.engines.get(engine, {}).get(case)
    if cell is None:
        return {"engine_detail": ""}
    head = f'<div class="engine-cell {esc(cell["status"].replace(" ", "-"))}"><b>{esc(LABELS[engine])}</b> · case {esc(case)} · {esc(cell["status"])}'
    return {"engine_detail": f'{head}<pre>{esc(cell["details"])}</pre></div>'}


def intended_html(session: Session) -> str:
    """The intended differences the workspace holds (a preset's and the ones marked here)."""
    items = session.workspace.round_trip_differences
    if not items:
        return '<div class="intended-list empty">No intended differences.</div>'
    shown = "".join(f"<li><code>{esc(key)}</code>: {esc(why)}</li>" for key, why in items.items())
    return f'<div class="intended-list"><b>Intended differences</b> (kept in this workspace and its share link)<ul>{shown}</ul></div>'


def mark_selected_intended(session: Session, intend_why: str) -> dict[str, Any]:
    """"Mark as intended" on the result last clicked: the workspace keeps it (by `name [subject]`),
    and the result is shown as intended at once, as the next run will report it."""
    index = session.selected_check
    if index is None or not 0 <= index < len(session.checks):
        return {"intended_list": intended_html(session) + '<div class="intended-note">Click a result first.</div>'}
    result = session.checks[index]
    if result.status not in ("warn", "fail"):
        return {"intended_list": intended_html(session) + '<div class="intended-note">Only a warning or a failure can be marked as intended.</div>'}
    why = (intend_why or "").strip() or DEFAULT_WHY
    differences = session.workspace.round_trip_differences
    before = dict(differences)
    differences[result.key] = why
    if too_much := check_workspace(session.workspace, "case"):  # a reason is text the workspace keeps
        session.workspace.round_trip_differences = before
        return {"intended_list": intended_html(session) + f'<div class="intended-note">⚠ {esc(too_much[0].message)}</div>'}
    mark_intended(CheckReport(checks=[result]), {result.key: why})
    return {"intended_list": intended_html(session), "checks_list": checks_html(session.checks, index), "intend_why": "",
            "saved_code": encode_workspace(session.workspace)}  # fmt: skip


def unmark_selected(session: Session) -> dict[str, Any]:
    """Forget the intended difference of the result last clicked (the next run judges it again)."""
    index = session.selected_check
    if index is not None and 0 <= index < len(session.checks):
        session.workspace.round_trip_differences.pop(session.checks[index].key, None)
    return {"intended_list": intended_html(session), "saved_code": encode_workspace(session.workspace)}


def build_checks_extras() -> dict[str, Any]:
    """The intended-differences controls and the engines matrix, by name."""
    with gr.Row(elem_id="intend-row"):
        why = gr.Textbox(label="Why it is intended", placeholder=DEFAULT_WHY, elem_id="intend-why", scale=4)
        mark = gr.Button("Mark as intended", elem_id="intend-mark", scale=1)
        unmark = gr.Button("Unmark", elem_id="intend-unmark", scale=1)
    intended = gr.HTML(elem_id="intended-list")
    gr.Markdown(ENGINES_NOTE, elem_id="engines-note")
    matrix = gr.Dataframe(headers=["case", *(LABELS[e] for e in ENGINES)], datatype=["str"] * (1 + len(ENGINES)),
                          interactive=False, wrap=True, elem_id="engines-table")  # fmt: skip
    detail = gr.HTML(elem_id="engine-detail")
    return dict(intend_why=why, intend_mark=mark, intend_unmark=unmark, intended_list=intended,
                engines_table=matrix, engine_detail=detail)
