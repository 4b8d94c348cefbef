"""The Checks tab: run every check of `engine.checks` on the templates and cases being edited (and
the last run's output), show pass / info / warn / fail with details, and show the line a result
points at (clicking a row also scrolls that editor to it on the Playground tab). The engines matrix
and "mark as intended" are in checks_extras."""

from __future__ import annotations

from typing import Any

import gradio as gr

from engine.cases import Case

from .checks_extras import engine_rows, intended_html
from .highlight import diagnostics_html, esc
from .state import Session
from .workbench import sync

NOTE = (
    "Checks prove the two templates are inverses (**round trip**, message side and output side), that "
    "**streaming** in any chunking gives the one-shot result, and where the chat template renders the same "
    "in the engines that serve models (**engines**, **lints**). They run on the templates, cases and "
    "recordings you are editing, plus the last run. Notes (info) never fail; a result you mark as intended neither."
)
HEADERS = ["status", "check", "subject", "where", "details"]
# The checks render and stream every case and output many times; a minute is far more than they need.
CHECKS_TIMEOUT = 60.0
EDITOR_IDS = {"chat_template": "chat-editor", "response_template": "response-editor", "case": "messages-editor"}

# Clicking a row: switch to the Playground tab and scroll the editor to the line (CodeMirror only
# renders lines near the viewport, so scroll proportionally first, then to the line's gutter).
JUMP_JS = """(where) => {
  if (!where) return;
  const [source, lineText] = where.split(':');
  const ids = %s;
  const line = parseInt(lineText || '0', 10);
  const id = ids[source];
  if (!id || !line) return;
  const tab = [...document.querySelectorAll('#tabs button[role=tab]')].find(b => b.textContent.trim() === 'Playground');
  if (tab) tab.click();
  setTimeout(() => {
    const root = document.getElementById(id);
    if (!root) return;
    root.scrollIntoView({block: 'center'});
    const scroller = root.querySelector('.cm-scroller');
    const total = parseInt([...root.querySelectorAll('.cm-gutterElement')].pop()?.textContent || '1', 10);
    const find = () => [...root.querySelectorAll('.cm-lineNumbers .cm-gutterElement')].find(g => g.textContent.trim() === String(line));
    if (!find() && scroller) scroller.scrollTop = scroller.scrollHeight * (line - 1) / Math.max(total, line);
    setTimeout(() => {
      const gutter = find();
      if (!gutter || !scroller) return;
      scroller.scrollTop += gutter.getBoundingClientRect().top - scroller.getBoundingClientRect().top - scroller.clientHeight / 3;
      root.dataset.jumpedTo = String(line);
    }, 150);
  }, 250);
}""" % EDITOR_IDS


def run_all_checks(session: Session, chat_template: str, response_template: str, form_case: str, **form: Any) -> dict[str, Any]:
    """The "Run all checks" button: the summary, the table rows and the diagnostics."""
    sync(session, chat_template, response_template, form_case, form)
    workspace = session.workspace
    runs: list[tuple[Case, str]] = []
    run = session.last_run
    if run is not None and run.chunks and run.matches(workspace):  # a stale run belongs to other templates
        runs.append((workspace.case, "".join(run.chunks)))
    # The checks render and parse the author's templates many times: in the killable worker, so a
    # runaway template (or a catastrophic regex) cannot hold the server.
    report = workspace.run_checks(runs, timeout=CHECKS_TIMEOUT, random_splits=100)
    session.checks, session.engines, session.selected_check = report.checks, report.engines, None
    extras = {"engines_table": engine_rows(report.engines), "engine_detail": "", "intended_list": intended_html(session)}
    if not report.checks:
        summary = f'<div class="checks-summary fail"><b>FAIL</b> · {esc(report.diagnostics[0].message) if report.diagnostics else "No checks ran."}</div>'
        return {"checks_summary": summary, "checks_table": [], "checks_diagnostics": diagnostics_html(report.diagnostics), **extras}
    counts = report.counts()
    worst = report.status
    summary = (
        f'<div class="checks-summary {worst}"><b>{esc(worst.upper())}</b> · '
        f'{counts["pass"]} passed · {counts["info"]} notes · {counts["warn"]} warnings · {counts["fail"]} failed'
        "<span class=\"sub\"> · click a row to see the line it points at</span></div>"
    )
    rows = [[c.status, c.name, c.subject or "", str(c.location) if c.location else "", c.details] for c in report.checks]
    return {"checks_summary": summary, "checks_table": rows, "checks_diagnostics": diagnostics_html(report.diagnostics), **extras}


def show_location(session: Session, evt: gr.SelectData) -> dict[str, str]:
    """A row was clicked: the result's details and the lines around where it points; also the
    `source:line` the page's script scrolls that editor to."""
    row = evt.index[0] if isinstance(evt.index, (list, tuple)) else evt.index
    if not isinstance(row, int) or not 0 <= row < len(session.checks):
        return {"check_detail": "", "check_jump": ""}
    session.selected_check = row
    result = session.checks[row]
    head = f'<div class="check-detail"><b>{esc(result.name)}</b> {esc(result.subject or "")}<pre>{esc(result.details)}</pre></div>'
    location = result.location
    if location is None or location.line is None:
        return {"check_detail": head, "check_jump": ""}
    text = _source_text(session, location.source)
    if text is None:
        return {"check_detail": head, "check_jump": ""}
    lines = text.splitlines()
    first, last = max(1, location.line - 3), min(len(lines), location.line + 3)
    shown = []
    for number in range(first, last + 1):
        content = lines[number - 1] if number - 1 < len(lines) else ""
        cls = ' class="hit"' if number == location.line else ""
        shown.append(f'<div{cls}><span class="ln">{number}</span>{esc(content) or " "}</div>')
        if number == location.line and location.column is not None:
            shown.append(f'<div class="caret-line"><span class="ln"></span>{" " * (location.column - 1)}^</div>')
    where = f"{location.source.replace('_', ' ')}, line {location.line}" + (f", column {location.column}" if location.column else "")
    detail = head + f'<div class="check-where">{esc(where)}</div><div class="check-lines">{"".join(shown)}</div>'
    return {"check_detail": detail, "check_jump": f"{location.source}:{location.line}"}


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
    table = gr.Dataframe(headers=HEADERS, datatype=["str"] * 5, interactive=False, wrap=True, elem_id="checks-table",
                         column_widths=["70px", "200px", "200px", "150px", "auto"], max_height=560)  # fmt: skip
    detail = gr.HTML(elem_id="check-detail")
    jump = gr.Textbox(visible=False)
    return dict(checks_run=run, checks_summary=summary, checks_diagnostics=diagnostics, checks_table=table,
                check_detail=detail, check_jump=jump)
