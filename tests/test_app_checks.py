"""The Checks tab: every check on the edited templates (plus the last run), what needs attention
first (passes folded), and the line a clicked result points at."""

from __future__ import annotations

import html

import gradio as gr

from app.checks_panel import pick_check, run_all_checks
from app.page import pick_preset
from app.run_stream import stream_run
from app.state import Session
from engine.workspace import RunSettings
from tests.test_app_support import edited, session


def run_checks_on(sess: Session, chat: str | None = None) -> tuple:
    """The summary, the results as rows (status, name, subject, where, details: the session's
    results, in the order the list shows them) and the diagnostics; the list's HTML is checked too."""
    out = run_all_checks(**edited(sess, chat))
    rows = [[c.status, c.name, c.subject or "", str(c.location) if c.location else "", c.details] for c in sess.checks]
    for index, result in enumerate(sess.checks):
        assert f'data-index="{index}"' in out["checks_list"] and html.escape(result.name) in out["checks_list"]
    return out["checks_summary"], rows, out["checks_diagnostics"]


def click(sess: Session, row: int) -> str:
    """A click on result `row` of the list (its script sends the index as event data)."""
    return pick_check(sess, gr.EventData(None, {"index": str(row)}))["check_detail"]


def test_checks_run_on_a_preset_and_a_lint_points_at_its_line():
    sess = Session.empty()
    pick_preset(sess, "smollm3")
    summary, rows, diagnostics = run_checks_on(sess)
    assert "passed" in summary and rows
    statuses = {row[0] for row in rows}
    assert statuses <= {"pass", "info", "warn", "fail"} and "fail" not in statuses
    names = {row[1] for row in rows}
    assert {"round_trip.message", "streaming", "robustness.end_token"} <= names  # the robustness check is in the tab
    located = next(i for i, row in enumerate(rows) if row[3].startswith("chat_template:"))
    detail = click(sess, located)
    line = int(rows[located][3].split(":")[1])
    assert sess.selected_check == located
    assert f'<div class="hit"><span class="ln">{line}</span>' in detail
    assert "chat template, line" in detail


def test_results_that_need_attention_come_first_and_passes_are_folded():
    from app.check_list import checks_html

    sess = Session.empty()
    pick_preset(sess, "smollm3")
    run_checks_on(sess)
    statuses = [c.status for c in sess.checks]
    order = {"fail": 0, "warn": 1, "info": 2, "pass": 3}
    assert statuses == sorted(statuses, key=order.get) and "warn" in statuses and statuses[0] == "warn"
    listed = checks_html(sess.checks)
    first_warning, folded = listed.index('class="check-row warn"'), listed.index('<details class="passed">')
    assert first_warning < folded and listed.count('class="check-row pass"') == statuses.count("pass")
    assert f"{statuses.count('pass')} passed</summary>" in listed
    located = next(c for c in sess.checks if c.location and c.location.line)
    assert f'data-line="{located.location.line}"' in listed  # its jump button


def test_the_last_run_is_checked_too():
    sess = session()
    list(stream_run(sess, RunSettings(recording="think then answer"), interval=0))
    _, rows, _ = run_checks_on(sess)
    assert any("run" in row[2] for row in rows), [row[2] for row in rows]


def test_a_broken_template_is_reported_not_raised():
    sess = session()
    summary, rows, diagnostics = run_checks_on(sess, chat="{% if %}")
    assert "FAIL" in summary and all(row[0] == "fail" for row in rows)
    assert "Jinja syntax error" in diagnostics or "syntax" in diagnostics.lower()


def test_clicking_outside_the_results_shows_nothing():
    sess = session()
    assert click(sess, 500) == "" and sess.selected_check is None


def test_checks_on_a_runaway_template_stop_with_a_message(monkeypatch):
    import app.checks_panel

    monkeypatch.setattr(app.checks_panel, "CHECKS_TIMEOUT", 3.0)
    sess = session()
    summary, rows, _ = run_checks_on(sess, chat="{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}")
    assert "The checks stopped" in summary and "took longer than 3 s" in summary and rows == []


def test_the_checks_tab_and_check_preset_pass_the_same_kwargs():
    """One function decides which template kwargs a check passes (None defaults are left out), so
    the Checks tab and `python -m engine check --preset` judge a preset identically."""
    from engine.workspace import run_preset_checks

    for name in ("smollm3", "gpt-oss"):  # smollm3 declares kwargs whose default is None (not passed)
        sess = Session.empty()
        pick_preset(sess, name)
        summary, rows, _ = run_checks_on(sess)
        cli = run_preset_checks(name, random_splits=100)
        shown = sorted((r[0], r[1], r[2]) for r in rows)
        assert shown == sorted((c.status, c.name, c.subject or "") for c in cli.checks)


# ----- the engines matrix and "mark as intended" -----------------------------------------------------

from app.checks_extras import mark_selected_intended, show_engine_cell, unmark_selected  # noqa: E402
from app.state import decode_workspace  # noqa: E402
from tests.test_app_support import CHATML  # noqa: E402

# A newline after a block tag: transformers (trim_blocks) drops it, TGI's MiniJinja keeps it.
DIFFERS_IN_TGI = CHATML.replace("{%- if add_generation_prompt -%}\n", "{%- if add_generation_prompt -%}\n{% if true %}\n{% endif %}\n")


def test_the_engines_matrix_shows_every_case_and_a_cell_opens_the_difference():
    sess = session()
    out = run_all_checks(**edited(sess, DIFFERS_IN_TGI))
    matrix = out["engines_table"]
    assert [row[0] for row in matrix] == ["greeting", "thinking"]
    assert matrix[0][1].startswith("≠ differs at ") and matrix[0][2] == "✓ identical" and matrix[0][3] == "✓ identical"
    detail = show_engine_cell(sess, gr.SelectData(None, {"index": [0, 1], "value": "", "selected": True}))["engine_detail"]
    assert "MiniJinja (TGI)" in detail and "case greeting" in detail and "differs at line" in detail and "⏎" in detail
    assert show_engine_cell(sess, gr.SelectData(None, {"index": [0, 0], "value": "", "selected": True}))["engine_detail"] == ""


def test_a_result_marked_as_intended_is_kept_in_the_workspace_and_the_share_link():
    sess = session()
    run_checks_on(sess, DIFFERS_IN_TGI)
    row = next(i for i, c in enumerate(sess.checks) if c.name == "engines.minijinja-tgi")
    assert sess.checks[row].status == "warn"
    click(sess, row)
    out = mark_selected_intended(sess, "we do not serve with TGI")
    assert sess.checks[row].status == "info" and "Intended: we do not serve with TGI" in sess.checks[row].details
    # Selected, and said so to a screen reader; every row is in the tab order (Enter selects it, as a click).
    assert f'class="check-row info selected" data-index="{row}" tabindex="0" aria-current="true"' in out["checks_list"]
    assert "engines.minijinja-tgi" in out["intended_list"]
    shared, problem = decode_workspace(out["saved_code"])
    assert problem is None and shared.round_trip_differences["engines.minijinja-tgi"] == "we do not serve with TGI"
    # The next run reports it as intended, and it does not count as a warning.
    before = sum(1 for c in sess.checks if c.status == "warn")
    summary, rows, _ = run_checks_on(sess, DIFFERS_IN_TGI)
    row = next(i for i, c in enumerate(sess.checks) if c.name == "engines.minijinja-tgi")
    assert rows[row][0] == "info" and f"{before} warnings" in summary
    click(sess, row)
    assert "engines.minijinja-tgi" not in unmark_selected(sess)["intended_list"]
    run_checks_on(sess, DIFFERS_IN_TGI)
    assert next(c for c in sess.checks if c.name == "engines.minijinja-tgi").status == "warn"


def test_only_a_warning_or_failure_can_be_marked():
    sess = session()
    run_checks_on(sess)
    assert "Click a result first" in mark_selected_intended(sess, "")["intended_list"]
    click(sess, next(i for i, c in enumerate(sess.checks) if c.status == "pass"))
    assert "Only a warning or a failure" in mark_selected_intended(sess, "")["intended_list"]
    assert sess.workspace.round_trip_differences == {}
