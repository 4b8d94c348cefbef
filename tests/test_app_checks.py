"""The Checks tab: every check on the edited templates (plus the last run), a pass/warn/fail table,
and the line a clicked result points at."""

from __future__ import annotations

import gradio as gr

from app.checks_panel import run_all_checks, show_location
from app.page import pick_preset
from app.run_stream import stream_run
from app.state import Session
from engine.workspace import RunSettings
from tests.test_app_support import edited, session


def run_checks_on(sess: Session, chat: str | None = None) -> tuple:
    out = run_all_checks(**edited(sess, chat))
    return out["checks_summary"], out["checks_table"], out["checks_diagnostics"]


def click(sess: Session, row: int) -> tuple[str, str]:
    out = show_location(sess, gr.SelectData(None, {"index": [row, 0], "value": "", "selected": True}))
    return out["check_detail"], out["check_jump"]


def test_checks_run_on_a_preset_and_a_lint_points_at_its_line():
    sess = Session.empty()
    pick_preset(sess, "smollm3")
    summary, rows, diagnostics = run_checks_on(sess)
    assert "passed" in summary and rows
    statuses = {row[0] for row in rows}
    assert statuses <= {"pass", "warn", "fail"} and "fail" not in statuses
    names = {row[1] for row in rows}
    assert {"round_trip.message", "streaming"} <= names
    located = next(i for i, row in enumerate(rows) if row[3].startswith("chat_template:"))
    detail, jump = click(sess, located)
    line = int(rows[located][3].split(":")[1])
    assert jump == f"chat_template:{line}"
    assert f'<div class="hit"><span class="ln">{line}</span>' in detail
    assert "chat template, line" in detail


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
    assert click(sess, 5) == ("", "")


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
        assert [(r[0], r[1], r[2]) for r in rows] == [(c.status, c.name, c.subject or "") for c in cli.checks]
