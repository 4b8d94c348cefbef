"""Issue 29: every answer to the page has a byte budget (`limits.MAX_ANSWER_BYTES`, 1 MB), and the
server never does work that grows with what a visitor sent: a worker's answer arrives counted and cut
to what the page shows, and each view bounds itself, with a note where it is cut. Each hostile input
here once made an answer of megabytes (or minutes of the server's time); the sizes are deterministic,
so they are asserted. The times are measured in benchmarks/ (bench_public), not here."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import gradio as gr
import pytest

from app.check_list import checks_html
from app.checks_panel import pick_check
from app.highlight import diagnostics_html, prompt_html
from app.live_views import EventsView, view_html
from app.state import LastRun
from app.step_panel import step_through
from app.wiring import answer_size, within_budget
from app.workbench import edit_chat_template, explain_view
from engine import limits
from engine.checks import CheckResult, Location
from engine.diagnostics import Diagnostic
from tests.test_app_support import RESPONSE, session
from tests.token_support import tiny

BUDGET = limits.MAX_ANSWER_BYTES
# The outputs of an edit that are views (the saved copy is the visitor's own workspace, bounded by it).
EDIT_VIEWS = ("chat_diagnostics", "response_diagnostics", "case_diagnostics", "prompt", "prompt_info", "run_note")


def recursing(depth: int, width: int) -> str:
    """Issue 29's template: a macro that calls itself `depth` levels deep, then writes `width` pieces."""
    return ("{%- macro r(n) -%}{%- if n > 0 -%}{{- r(n - 1) -}}{%- else -%}"
            "{%- for i in range(" + str(width) + ") -%}{{- 'x' -}}{%- endfor -%}{%- endif -%}{%- endmacro -%}"
            "{{- r(" + str(depth) + ") -}}")


def views(answer: dict) -> int:
    return sum(len(answer[name]) for name in EDIT_VIEWS if isinstance(answer.get(name), str))


@pytest.mark.parametrize("depth, width, note", [
    pytest.param(50, 99_000, "more than 20,000 pieces, the most the page shows", marks=pytest.mark.slow),  # the attack: the server built 99,000 rows of 51 call sites
    pytest.param(120, 19_900, "take more than the 300 kB the page gives them", marks=pytest.mark.slow),  # under the piece cap: 6.5 MB an answer
    (120, 2_000, None),  # a deep chain the page shows: its chains once, each piece a fixed-size row
])
def test_a_deep_recursion_is_explained_within_the_budget(depth: int, width: int, note: str | None) -> None:
    sess = session()
    answered = edit_chat_template(sess, recursing(depth, width), False)
    explained = explain_view(sess, False)
    assert views(answered) <= BUDGET and len(explained["prompt"]) + len(explained["prompt_info"]) <= BUDGET
    assert re.sub(r"<[^>]+>", "", explained["prompt"]).startswith("x" * 100)  # the prompt is shown either way
    if note:  # (on a loaded machine the explanation may stop at its time limit first: nothing is sent either way)
        assert note in explained["prompt_info"] or "longer than its time limit" in explained["prompt_info"]
        assert "data-pieces" not in explained["prompt"]
    else:
        assert explained["prompt"].count("data-p=") == width and "data-chains" in explained["prompt"]


def test_forty_thousand_special_tokens_in_a_prompt() -> None:
    """Each special token is boxed: 40,000 of them were 40,000 layers tested at each of 80,000 cuts
    (about a minute of the server's time); now one pass, and the view cut at its budget."""
    sess = session()
    answered = edit_chat_template(sess, "{% for i in range(40000) %}<|a|>{% endfor %}", False)
    assert views(answered) <= BUDGET
    assert "view-cut" in answered["prompt"] and "an answer may carry" in answered["prompt"]


def test_a_prompt_of_newlines_with_visible_whitespace() -> None:
    """200,000 newlines drawn as ↵ were 5 MB of HTML; the view stops at its budget with a note."""
    sess = session()
    answered = edit_chat_template(sess, "{{ '\\n' * 199000 }}", True)
    assert views(answered) <= BUDGET and "view-cut" in answered["prompt"]
    assert len(prompt_html("\n" * 4_000_000, show_whitespace=True)) <= limits.PROMPT_VIEW_BYTES + 1_000


@pytest.mark.slow  # (the worker builds the tokenizer first)
def test_the_token_view_of_a_long_prompt_is_cut_in_the_worker() -> None:
    """A prompt of 60,000 one-character tokens (the tiny vocabulary does not merge "7" and " "): the
    worker sends only the tokens the page shows (about 11,000), with the counts whole."""
    sess = session()
    sess.tokenizer = tiny()
    sess.show_tokens = True
    answered = edit_chat_template(sess, "{{ '7 ' * 30000 }}", False)
    assert views(answered) <= BUDGET
    assert "Tokens are shown up to character" in answered["prompt"]
    assert "60,000 tokens" in answered["prompt_info"]


def test_diagnostics_of_a_long_line_show_a_window_around_their_place() -> None:
    """A one-line template of 150,000 characters with an error at its end: the snippet is the line
    around the error, not the line (20 of them were 3 MB)."""
    line = "{{ '" + "a" * 150_000 + "' | nosuchfilter }}"
    sess = session()
    answered = edit_chat_template(sess, line, False)
    assert views(answered) <= BUDGET and "No filter named" in answered["chat_diagnostics"]
    assert len(answered["chat_diagnostics"]) < 2_000
    many = [Diagnostic("error", "m" * 10_000, "chat_template", line=1, column=140_000, snippet="s" * 150_000,
                       hint="<" * 10_000)] * 25
    assert len(diagnostics_html(many)) <= BUDGET // 20 + 6_000  # (the last row that went past it)


def test_any_answer_over_its_budget_has_its_largest_views_replaced_by_a_note() -> None:
    """The net under every view: a handler's answer whose views are over the budget (a view written
    tomorrow that forgot to bound itself) reaches the page with its largest views as a note."""
    outputs = {"big": gr.HTML(), "small": gr.HTML(), "editor": gr.Textbox()}
    result = {"big": "b" * (BUDGET + 10), "small": "s" * 100, "editor": "e" * (2 * BUDGET)}
    kept = within_budget("test", result, outputs)
    assert answer_size(kept, outputs) <= BUDGET
    assert kept["small"] == result["small"] and kept["editor"] == result["editor"]  # the visitor's own text stays
    assert "This view is not shown" in kept["big"] and "over the 1,000 kB" in kept["big"]
    assert within_budget("test", {"small": "s"}, outputs) == {"small": "s"}


def long_run(chunk: int) -> LastRun:
    """A run of 31,000 short regions (half a million characters, the output cap), in chunks of `chunk`
    characters, with newlines (each drawn as a mark) in every region."""
    output = "<think>\n\n\nx\n\n\n</think>\n" * 20_000
    chunks = [output[i : i + chunk] for i in range(0, len(output), chunk)]
    return LastRun(prompt="<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n", tools=None,
                   response_spec=json.loads(RESPONSE), chunks=chunks, tokens=list(range(1, len(chunks) + 1)),
                   seconds=[0.0] * len(chunks))


@pytest.mark.slow  # (three steps of a run of 70,000 chunks, each traced again from its start)
def test_each_step_of_a_long_run_is_within_the_budget() -> None:
    """Step-through re-traces the run to the slider's position and shows the state there: the output
    before it, the events and segments so far, the message so far. An output of 20,000 regions was
    megabytes per slider move (every segment and event a row); now each part has its share. (Its
    parse is bounded by the visitor's regex allowance, as the handler runs it.)"""
    sess = session()
    sess.last_run = long_run(7)
    total = len(sess.last_run.chunks)
    for position in (1, total // 2, total + 1):
        shown = step_through(sess, position)["step_view"]
        assert len(shown) <= BUDGET, (position, len(shown))
        if position > total // 3:
            assert "characters before these" in shown and "segments before these" in shown
    assert "rows before these, not drawn" in shown


def test_the_events_table_of_a_run_draws_a_bounded_number_of_rows() -> None:
    """The run's events view appends rows as the run streams: 60,000 regions were 180,000 rows in the
    page. It draws the first EventsView.MAX_ROWS, then one row counts the rest."""
    events = EventsView("r", {"reasoning_content": "f1"})
    for _ in range(30_000):
        events.add([{"type": "region_open", "field": "reasoning_content"},
                    {"type": "region_chunk", "field": "reasoning_content", "text": "x\n" * 40},
                    {"type": "region_close", "field": "reasoning_content", "value": "x"}])
    shown = view_html(events.value())
    assert events.count == 90_000 and shown.count("<tr") == EventsView.MAX_ROWS + 1
    assert "89,000 more rows after these, not drawn" in shown and len(shown) <= BUDGET


def test_the_checks_list_and_a_picked_result_are_within_the_budget() -> None:
    """Results whose details quote long texts, and a result on a line of 200,000 characters: the list
    shortens each result's details and counts what it leaves out; a picked result shows its lines as
    a window around its column (the lines around it were sent whole, and a caret of 150,000 spaces)."""
    results = [CheckResult(f"round_trip.c{i}", "fail", "<" * 100_000, Location("chat_template", 1, 150_000))
               for i in range(300)]
    listed = checks_html(results)
    assert len(listed) <= BUDGET and "more results, not shown" in listed
    sess = session()
    sess.workspace.chat_template = "{{ messages }}" + " " * 200_000
    sess.checks = results
    detail = pick_check(sess, SimpleNamespace(_data={"index": 0}))["check_detail"]
    assert len(detail) < 3_000 and "column 150000" in detail and "^" in detail
