"""The Checks tab: run every check of `engine.checks` on the templates and cases being edited (and
the last run's output), show pass / info / warn / fail with details, and show the line a result
points at (clicking a row also scrolls that editor to it on the Playground tab). The engines matrix
and "mark as intended" are in checks_extras."""

from __future__ import annotations

from typing import Any

import gradio as gr

from engine import limits
from engine.cases import Case

from .check_list import checks_html, ordered
from .checks_extras import engine_rows, intended_html
from .highlight import diagnostics_html, esc
from .state import Session
from .workbench import sync

NOTE = (
    "Checks prove the two templates are inverses (**round trip**, message side and output side), that "
    "**streaming** in any chunking gives the one-shot result, and where the chat template renders the same "
    "in the engines that serve models (**engines**, **lints**); **robustness** varies outputs the way models vary them "
    "(adversarial values, call counts, text and whitespace around calls, the end token left out) and reports the "
    "smallest that breaks. They run on the templates, cases and "
    "recordings you are editing, plus the last run. Notes (info) never fail; a result you mark as intended neither."
)
# The checks render and stream every case and output many times; a minute is far more than they need.
CHECKS_TIMEOUT = limits.CHECK_SECONDS
# The list's own script: a click on a result (or Enter or Space on it) selects it (the server hears
# its index, for "mark as intended"); its "→ line" button jumps to that line in the editor (app/page.js).
PICK_JS = """
element.addEventListener('keydown', (event) => {
  if ((event.key === 'Enter' || event.key === ' ') && event.target.classList.contains('check-row')) {
    event.preventDefault();
    event.target.click();
  }
});
element.addEventListener('click', (event) => {
  const row = event.target.closest('.check-row');
  if (!row) return;
  for (const r of element.querySelectorAll('.check-row.selected')) { r.classList.remove('selected'); r.removeAttribute('aria-current'); }
  row.classList.add('selected');
  row.setAttribute('aria-current', 'true');
  trigger('click', {index: row.dataset.index});
  const jump = event.target.closest('.check-jump');
  if (jump && window.playgroundJump) {
    const name = row.querySelector('.check-name').textContent;
    const details = row.querySelector('.check-details').textContent;
    window.playgroundJump(jump.dataset.source, parseInt(jump.dataset.line, 10), `${name}: ${details}`);
  }
});
"""
def run_all_checks(session: Session, chat_template: str, response_template: str, form_case: str, **form: Any) -> dict[str, Any]:
    """The "Run all checks" button: the summary, the table rows and the diagnostics."""
    sync(session, chat_template, response_template, form_case, form)
    if not session.claim("checks"):
        return {"checks_summary": '<div class="checks-summary warn"><b>BUSY</b> · The checks are already running '
                                  "in this tab; their results come when they end.</div>"}
    try:
        report = _run(session)
    finally:
        session.done("checks")
    session.checks, session.engines, session.selected_check = ordered(report.checks), report.engines, None
    extras = {"engines_table": engine_rows(report.engines), "engine_detail": "", "intended_list": intended_html(session),
              "check_detail": ""}  # fmt: skip
    if not report.checks:
        summary = f'<div class="checks-summary fail"><b>FAIL</b> · {esc(report.diagnostics[0].message) if report.diagnostics else "No checks ran."}</div>'
        return {"checks_summary": summary, "checks_list": "", "checks_diagnostics": diagnostics_html(report.diagnostics), **extras}
    counts = report.counts()
    worst = report.status
    summary = (
        f'<div class="checks-summary {worst}"><b>{esc(worst.upper())}</b> · '
        f'{counts["fail"]} failed · {counts["warn"]} warnings · {counts["info"]} notes · {counts["pass"]} passed'
        "<span class=\"sub\"> · click a result to select it; → jumps to its line</span></div>"
    )
    return {"checks_summary": summary, "checks_list": checks_html(session.checks), "checks_diagnostics": diagnostics_html(report.diagnostics), **extras}


def _run(session: Session):
    workspace = session.workspace
    runs: list[tuple[Case, str]] = []
    run = session.last_run
    if run is not None and run.output and run.matches(workspace):  # a stale run belongs to other templates
        runs.append((workspace.case, run.output))
    # The checks render and parse the author's templates many times: in the killable worker, so a
    # runaway template (or a catastrophic regex) cannot hold the server; one call per visitor at a time.
    tokenizer = session.tokenizer.files if session.tokenizer is not None else None  # built once in the worker
    return workspace.run_checks(runs, timeout=CHECKS_TIMEOUT, random_splits=100, owner=session.owner, tokenizer=tokenizer)


# Characters of a line shown on either side of a result's column.
LINE_WINDOW = 200


def pick_check(session: Session, evt: gr.EventData) -> dict[str, str]:
    """A result was clicked (the list's script sends its index): select it (for "mark as
    intended") and show the lines around where it points."""
    try:
        row = int((evt._data or {}).get("index"))
    except (TypeError, ValueError, AttributeError):
        row = -1
    if not 0 <= row < len(session.checks):
        session.selected_check = None
        return {"check_detail": ""}
    session.selected_check = row
    result = session.checks[row]
    head = f'<div class="check-detail"><b>{esc(result.name)}</b> {esc(result.subject or "")}</div>'
    location = result.location
    if location is None or location.line is None:
        return {"check_detail": head}
    text = _source_text(session, location.source)
    if text is None:
        return {"check_detail": head}
    lines = text.splitlines()
    first, last = max(1, location.line - 3), min(len(lines), location.line + 3)
    shown = []
    # Each line as a window around the column (a template may be one line of 200,000 characters).
    column = location.column or 1
    start = max(0, column - 1 - LINE_WINDOW)
    for number in range(first, last + 1):
        content = lines[number - 1] if number - 1 < len(lines) else ""
        lead = "…" if start and len(content) > start else ""
        window = lead + content[start : start + 2 * LINE_WINDOW] + ("…" if len(content) > start + 2 * LINE_WINDOW else "")
        cls = ' class="hit"' if number == location.line else ""
        shown.append(f'<div{cls}><span class="ln">{number}</span>{esc(window) or " "}</div>')
        if number == location.line and location.column is not None:
            shown.append(f'<div class="caret-line"><span class="ln"></span>{" " * (len(lead) + column - 1 - start)}^</div>')
    where = f"{location.source.replace('_', ' ')}, line {location.line}" + (f", column {location.column}" if location.column else "")
    detail = head + f'<div class="check-where">{esc(where)}</div><div class="check-lines">{"".join(shown)}</div>'
    return {"check_detail": detail}


def _source_text(session: Session, source: str) -> str | None:
    workspace = session.workspace
    if source == "chat_template":
        return workspace.chat_template
    if source == "response_template":
        return workspace.response_template
    return None


def build_checks_tab() -> dict[str, Any]:
    """The Checks tab's components, by name."""
    gr.Markdown(NOTE, elem_id="checks-note")
    run = gr.Button("Run all checks", variant="primary", elem_id="checks-run")
    summary = gr.HTML(elem_id="checks-summary")
    diagnostics = gr.HTML(elem_id="checks-diagnostics")
    results = gr.HTML(elem_id="checks-list", js_on_load=PICK_JS)
    detail = gr.HTML(elem_id="check-detail")
    return dict(checks_run=run, checks_summary=summary, checks_diagnostics=diagnostics, checks_list=results,
                check_detail=detail)
