"""Issue 37, item 1: one function decides whether a workspace change fits
(`engine.budget.check_workspace`), and every path that adds cases, recordings or text goes through
it. Every handler the page wires is called on a session whose workspace is at its budget (the most
cases and recordings it may hold, its size just under the limit), with what a visitor could send to
grow it (long texts in every box, a format's examples, a paste, a reason, special tokens): none may
leave the workspace holding more than it may. The handlers are found on the page itself, as
tests/test_server_routes.py finds them, so a path added tomorrow is driven the day it is wired.
Refusals say what was measured, in the author's terms."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.state import Session, decode_workspace, encode_workspace
from engine import limits
from engine.budget import check_workspace, measure_workspace
from engine.cases import Case, Recording
from engine.checks.results import CheckResult
from engine.workspace import Workspace
from tests.fake_hub import FakeHub, no_ambient_credentials  # noqa: F401 - an autouse fixture
from tests.test_app_support import edited, session
from tests.test_server_routes import call, handlers, hub, page, visitor_template, visitor_values  # noqa: F401 - fixtures


def full_session() -> Session:
    """A session whose workspace holds the most cases and recordings it may, and is a few thousand
    characters under its size limit."""
    sess = session()
    ws = sess.workspace
    while len(ws.cases) < limits.MAX_CASES:
        ws.cases.append(Case(ws.unique_name("more"), [{"role": "user", "content": "hi"}]))
    first = ws.cases[0].name
    while len(ws.recordings) < limits.MAX_CASES:
        ws.recordings.append(Recording(f"recording {len(ws.recordings)}", first, "out", None, ""))
    padding = ws.cases[-1]
    room = limits.MAX_WORKSPACE_CHARS - measure_workspace(ws).bytes - 3_000
    ws.cases[-1] = Case(padding.name, [{"role": "user", "content": "x" * room}])
    assert check_workspace(ws) == [] and measure_workspace(ws).bytes > limits.MAX_WORKSPACE_CHARS - 3_100
    sess.checks = [CheckResult("round_trip.message", "warn", "differs", subject="case 'plain chat'")]
    sess.selected_check = 0
    return sess


def growing_values(sess: Session, tmp_path: Path) -> dict[str, Any]:
    """What a visitor sends to make the workspace grow: each box much longer than the room left."""
    template = sess.workspace.chat_template + "{# " + "g" * 20_000 + " #}"
    values = {**visitor_values(tmp_path, template), **edited(sess, chat=template)}
    values.update({
        "response_template": sess.workspace.response_template + " " * 20_000,
        "case_name": "a long name " * 2_000, "pasted": "p" * 100_000, "intend_why": "because " * 5_000,
        "special_tokens": json.dumps({"bos_token": "<s>" * 10_000}), "format_picker": "hermes",
        "messages": json.dumps([{"role": "user", "content": "m" * 50_000}]), "model": "org/" + "m" * 10_000,
        "remote_model": "r" * 10_000, "remote_url": "http://127.0.0.1:1/" + "u" * 10_000, "session": sess,
    })  # fmt: skip
    return values


@pytest.mark.slow  # every handler of the page, several rendering or checking in a worker
def test_no_handler_grows_a_workspace_past_its_budget(page: Any, hub: FakeHub, tmp_path: Path) -> None:
    over, crashed = [], []
    for name, block_fn, names in handlers(page):
        sess = full_session()
        try:
            call(block_fn, names, growing_values(sess, tmp_path))
        except Exception as e:  # noqa: BLE001 - every handler is tried; each failure is reported
            crashed.append(f"{name}: {type(e).__name__}: {e}")
        if problems := check_workspace(sess.workspace):
            over.append(f"{name}: {problems[0].message}")
    assert over == [], "\n".join(over)
    assert crashed == [], "\n".join(crashed)


def test_adding_a_format_s_examples_to_a_full_workspace_adds_nothing_and_says_why() -> None:
    from app.format_panel import add_examples

    sess = full_session()
    cases, recordings = list(sess.workspace.cases), list(sess.workspace.recordings)
    shown = add_examples(**edited(sess), format_picker="hermes")
    assert sess.workspace.cases == cases and sess.workspace.recordings == recordings
    assert "Too many cases" in shown["format_status"]


def test_a_share_link_of_many_small_tool_calls_is_refused_in_the_author_s_terms() -> None:
    calls = [{"type": "function", "function": {"name": "f", "arguments": {"a": 1}}}] * 6_000
    ws = Workspace(chat_template="{{ messages }}", cases=[Case("calls", [{"role": "assistant", "tool_calls": calls}])])
    workspace, problem = decode_workspace(encode_workspace(ws))
    assert workspace is None
    # What was measured, in the author's terms; not an estimate presented as the link's size.
    assert "it holds 6,000 tool calls, more than one session may hold" in problem.message, problem.message
    assert "characters one session may hold" not in problem.message


def test_a_workspace_of_long_texts_is_refused_in_characters() -> None:
    ws = Workspace(chat_template="{{ messages }}",
                   cases=[Case(f"c{i}", [{"role": "user", "content": "x" * 800_000}]) for i in range(4)])
    assert "it holds 3,2" in check_workspace(ws)[0].message and "characters" in check_workspace(ws)[0].message
