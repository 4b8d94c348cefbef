"""Issue 11, item 1: a response-template regex can no longer freeze the server. Every author regex
(start anchor, open/close patterns, an xml-inline tag_pattern) runs with a time budget wherever
transformers or the trace runs it, ends as a diagnostic naming its key, and leaves the rest of the
process (other threads) running; a pattern too costly to compile is refused at its key."""

from __future__ import annotations

import json
import threading
import time

import pytest
import regex
from transformers.utils.chat_parsing import parse_response

from engine import limits, load_response_spec
from engine.checks import run_checks
from engine.regex_bounds import BoundedPattern, RegexBudget, RegexTimeout, compile_problem
from engine.trace import Trace, trace_text

# What the issue used: a pattern that backtracks (polynomially, in the regex module) over a long run of `a`s.
EVIL = "(a+)+$"
ATTACK = "a" * 3000 + "!"


def spec(**fields: dict) -> dict:
    return {"version": 1, "start_anchor": "<|im_start|>assistant\n", "fields": fields}


def test_a_backtracking_start_anchor_ends_the_trace_with_a_message_on_its_key() -> None:
    hostile = {"version": 1, "start_anchor_pattern": EVIL, "fields": {"content": {}}}
    started = time.monotonic()
    trace = Trace(hostile, prompt=ATTACK, regex_seconds=0.3)
    trace.feed("hello")
    trace.finalize()
    assert time.monotonic() - started < 5  # the budget, not hours
    [error] = [d for d in trace.diagnostics if d.severity == "error"]
    assert error.source == "response_template" and "start_anchor_pattern" in error.message
    assert "took longer than 0.3 s" in error.message and "(a+)+" in error.hint
    # Everything fed is still accounted for (shown as dropped), and the trace never raised.
    assert "".join(trace.output[s.start : s.end] for s in trace.segments()) == "hello"


def test_a_backtracking_close_pattern_stops_a_stream_where_it_is_and_keeps_the_message() -> None:
    hostile = spec(reasoning_content={"open": "<think>", "close": "</think>"}, content={"close_pattern": EVIL})
    trace = Trace(hostile, prompt="<|im_start|>assistant\n", regex_seconds=0.3)
    trace.feed("<think>plan</think>")
    for _ in range(100):
        trace.feed("a" * 30)
    trace.feed("!")
    trace.finalize()
    [error] = [d for d in trace.diagnostics if d.severity == "error"]
    assert error.message.startswith("Field 'content': close_pattern '(a+)+$' took longer than 0.3 s")
    assert trace.message["reasoning_content"] == "plan"  # what closed before the stop stays
    assert trace.finished and error.span is not None


def test_a_backtracking_tag_pattern_inside_a_content_parser_is_bounded_too() -> None:
    hostile = spec(content={}, tool_calls={"open": "<tool>", "close": "</tool>", "content": "xml-inline",
                                           "content_args": {"tag_pattern": "(?P<key>(a+)+$)"}})
    result = trace_text(hostile, "<tool>" + ATTACK + "</tool>", prompt="<|im_start|>assistant\n", regex_seconds=0.3)
    [error] = [d for d in result.diagnostics if d.severity == "error"]
    assert error.message.startswith("Field 'tool_calls': tag_pattern")


def test_transformers_own_entry_points_are_bounded_as_well() -> None:
    """parse_response on a plain dict compiles through the bounds: no path around them."""
    hostile = {"version": 1, "start_anchor_pattern": EVIL, "fields": {"content": {}}}
    with RegexBudget(0.3).active(), pytest.raises(RegexTimeout, match=r"\(a\+\)\+\$"):
        parse_response("x", hostile, prefix=ATTACK)


def test_the_budget_is_summed_over_every_call_of_a_parse() -> None:
    """Each call alone is quick; together they run out (the per-call slice is not the bound)."""
    slow = spec(content={"close_pattern": "(a|aa)+b"})  # each search over a run of a's takes milliseconds
    trace = Trace(slow, prompt="<|im_start|>assistant\n", regex_seconds=0.2)
    fed = 0
    while not trace.diagnostics and fed < 400:
        trace.feed("a" * 24 + " ")
        fed += 1
    assert trace.diagnostics and "took longer than 0.2 s" in trace.diagnostics[0].message
    assert fed < 400


def test_a_slow_regex_does_not_hold_the_other_threads() -> None:
    """The regex runs with the GIL released after a short slice, so another thread keeps working:
    it finishes a small job while the hostile parse is still running."""
    hostile = {"version": 1, "start_anchor_pattern": EVIL, "fields": {"content": {}}}
    attacker = threading.Thread(target=lambda: Trace(hostile, prompt=ATTACK, regex_seconds=2))
    attacker.start()
    time.sleep(0.1)
    total = sum(i * i for i in range(20_000))  # a few milliseconds of Python work
    assert total > 0 and attacker.is_alive()
    attacker.join()


def test_literal_delimiters_stay_plain_compiled_patterns() -> None:
    """Escaped literals cannot backtrack, so they pay no timeout (the common case stays fast)."""
    template = load_response_spec(json.dumps(spec(content={"close": ["<|im_end|>", "<|endoftext|>"]}))).template
    assert not isinstance(template.fields["content"].close_re, BoundedPattern)
    assert isinstance(load_response_spec(json.dumps(spec(content={"close_pattern": r"<\|im_end\|>\s*"}))).template
                      .fields["content"].close_re, BoundedPattern)


@pytest.mark.parametrize("pattern", ["(?:a{3000}){3000}", "a{4000000000}", "(?:(?:a{100}){100}){100}"])
def test_a_pattern_too_costly_to_compile_is_refused_at_its_key(pattern: str) -> None:
    text = json.dumps(spec(content={"close": "x"}, tool={"open_pattern": pattern, "close": "y"}), indent=2)
    loaded = load_response_spec(text)
    [error] = loaded.diagnostics
    assert not loaded.ok and "open_pattern" in error.message and "to compile" in error.message
    assert error.snippet is not None and '"open_pattern"' in error.snippet
    started = time.monotonic()
    assert compile_problem(pattern, regex.DOTALL) is not None  # cached: no second worker
    assert time.monotonic() - started < 0.1


def test_counted_repeats_that_are_fine_still_compile() -> None:
    loaded = load_response_spec(json.dumps(spec(content={"close_pattern": r"<end>\n{1,2}"})))
    assert loaded.ok, loaded.diagnostics
    assert parse_response("hi<end>\n", loaded.template, prefix="") == {"content": "hi"}


def test_the_checks_stop_on_a_backtracking_regex_with_its_message(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every chunking of every output shares one budget: the checks end quickly, saying why."""
    from engine.cases import Case, Recording

    monkeypatch.setattr(limits, "REGEX_SECONDS", 0.2)
    template = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}<|im_start|>assistant\n"
    hostile = json.dumps(spec(content={"close_pattern": EVIL}))
    case = Case("plain", [{"role": "user", "content": "hi"}])
    started = time.monotonic()
    report = run_checks(template, hostile, [case], [Recording("attack", "plain", ATTACK)])
    assert time.monotonic() - started < 60
    stopped = [c for c in report.checks if "took longer than" in c.details]
    assert stopped and all(c.status == "fail" for c in stopped)
    assert any("(a+)+" in c.details for c in stopped)
