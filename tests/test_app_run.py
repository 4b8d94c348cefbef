"""The run panel's streaming callback, driven directly (no browser): recorded and simulated runs,
incremental highlighting, coalesced updates, Stop, errors on the region where they happened, bad
input as messages, and sessions that never share a run."""

from __future__ import annotations

import html
import json
import re
import threading
import time

import pytest

from app.live_views import PagedHtml, view_html, view_parts
from app.run_panel import request_stop, run_callback
from app.run_stream import RunUpdate, stream_run
from app.state import Session
from engine.workspace import PASTED, RunSettings
from tests.test_app_support import EXPECTED, OUTPUT, edited, session, settings_values


def visible_text(fragment: str) -> str:
    fragment = re.sub(r'<span class="error-badge"[^>]*>.*?</span>', "", fragment)
    return html.unescape(re.sub(r"<[^>]+>", "", fragment)).replace("↵", "")


def run_all(sess, settings: RunSettings, interval: float = 0) -> list[RunUpdate]:
    return list(stream_run(sess, settings, interval=interval))


def test_recorded_run_streams_regions_events_and_the_message():
    sess = session()
    updates = run_all(sess, RunSettings(recording="think then answer", tokens_per_second=0))
    final = RunUpdate.shown(updates)
    assert json.loads(final.message) == EXPECTED
    stream = view_html(final.stream)
    assert visible_text(stream) == OUTPUT
    assert '<span class="seg delim open f1" title="open: reasoning_content">&lt;think&gt;</span>' in stream
    assert 'class="seg body f0"' in stream and 'class="seg delim close f0"' in stream
    assert "equals the recording’s expected message" in final.stats
    assert "reasoning_content" in updates[0].legend and "content" in updates[0].legend
    events = view_html(final.events)
    assert events.count("<tr") >= 6  # open, chunks, close for both regions
    assert "region_close" in events and "Hello there! How can I help?" in events
    assert final.step["visible"] is True and final.step["maximum"] == len(sess.last_run.chunks) + 1
    assert final.running is False and updates[0].running is True
    assert "".join(sess.last_run.chunks) == OUTPUT


def test_stream_updates_only_append_and_render_each_character_once():
    sess = session()
    long_output = "<think>\n" + "Let me think about it. " * 200 + "\n</think>\n" + "Answer line.\n" * 200 + "<|im_end|>"
    sess.workspace.recordings[0].output = long_output
    sess.workspace.recordings[0].expected = None
    updates = run_all(sess, RunSettings(recording="think then answer", tokens_per_second=0))
    streams = [u.stream for u in updates if u.stream is not None]
    assert len(streams) > 100  # interval 0: an update after every chunk
    previous: list[str] = []
    for value in streams:
        pages = view_parts(value)["pages"]
        # Only the last page grows, or new pages follow: nothing already shown is rewritten.
        assert pages[: max(len(previous) - 1, 0)] == previous[:-1] and len(pages) >= len(previous)
        if previous:
            assert pages[len(previous) - 1].startswith(previous[-1]), "a streaming update rewrote text already shown"
        assert all(len(page) <= PagedHtml.PAGE + 2000 for page in pages)
        previous = pages
    assert len(previous) > 1  # the long output spans several pages
    assert visible_text(view_html(streams[-1])) == long_output
    # The message JSON is rebuilt only when a region closes, not on every chunk.
    messages = [u.message for u in updates if u.message is not None]
    assert len(set(messages)) <= 4


def test_pending_text_is_dimmed_at_the_tail_while_it_may_be_a_delimiter():
    sess = session()
    sess.workspace.run = RunSettings(recording=PASTED, pasted="Hello <|im_end|>")
    from app.highlight import field_classes
    from app.live_views import StreamView
    from engine.trace import Trace

    trace = Trace(json.loads(sess.workspace.response_template), prompt="<|im_start|>assistant\n")
    view = StreamView("r", field_classes(trace.template.fields))
    trace.feed("Hello <|im")
    value = view_parts(view.update(trace.output, trace.segments()))
    assert 'class="seg pending f0"' in value["tail"] and "&lt;|im" in value["tail"]
    assert "Hello " in value["pages"][-1] and "&lt;|im" not in "".join(value["pages"])
    trace.feed("_end|>")
    value = view_parts(view.update(trace.output, trace.segments()))
    assert value["tail"] == "" and "seg delim close f0" in value["pages"][-1]


def test_updates_are_coalesced_to_about_fifteen_per_second():
    sess = session()
    words = " ".join(f"w{i}" for i in range(300))
    sess.workspace.recordings[0].output = words + "<|im_end|>"
    sess.workspace.recordings[0].expected = None
    start = time.monotonic()
    updates = list(stream_run(sess, RunSettings(recording="think then answer", tokens_per_second=600)))
    elapsed = time.monotonic() - start
    assert len(sess.last_run.chunks) > 250
    streaming = [u for u in updates if u.running is None]
    assert len(streaming) <= elapsed * 15 + 2, f"{len(streaming)} updates in {elapsed:.2f}s"
    assert visible_text(view_html(RunUpdate.shown(updates).stream)) == words + "<|im_end|>"


def test_a_run_ends_with_an_update_that_holds_no_long_view():
    """When a run ends, Gradio sends the values of its last update again, whole: the output, its
    events and the parsed message must be sent before it (as diffs), not in it."""
    updates = run_all(session(), RunSettings(recording="think then answer", tokens_per_second=0), interval=None)
    last = updates[-1]
    assert last.stream is None and last.events is None and last.message is None
    assert last.running is False and "done" in last.stats
    shown = RunUpdate.shown(updates)
    assert visible_text(view_html(shown.stream)) == OUTPUT and json.loads(shown.message) == EXPECTED


def test_stop_ends_a_slow_run_with_the_partial_output():
    sess = session()
    sess.workspace.recordings[0].output = " ".join(f"word{i}" for i in range(400)) + "<|im_end|>"
    sess.workspace.recordings[0].expected = None
    updates: list[RunUpdate] = []
    worker = threading.Thread(target=lambda: updates.extend(stream_run(sess, RunSettings(recording="think then answer", tokens_per_second=40))))
    start = time.monotonic()
    worker.start()
    while sess.stop is None and time.monotonic() - start < 5:
        time.sleep(0.01)
    time.sleep(0.4)
    assert request_stop(sess) is True
    worker.join(timeout=5)
    assert not worker.is_alive()
    assert time.monotonic() - start < 8  # the whole replay would take 10 s
    final = updates[-1]
    assert "stopped" in final.stats
    assert 0 < len(sess.last_run.chunks) < 400
    assert sess.stop is None
    assert request_stop(sess) is False  # nothing running any more


def test_a_region_that_fails_to_parse_is_marked_where_it_happened():
    sess = session()
    bad = "Calling.<tool_call>{not json}</tool_call><|im_end|>"
    sess.workspace.run = RunSettings(recording=PASTED, pasted=bad)
    final = RunUpdate.shown(run_all(sess, RunSettings(recording=PASTED, pasted=bad)))
    stream = view_html(final.stream)
    errored = re.findall(r'<span class="error-span"[^>]*>(.*?)</span></span>(?=<span class="(?:error-span|error-badge))', stream, re.S)
    assert visible_text("".join(errored)) == "<tool_call>{not json}</tool_call>"  # the whole failed region
    # ... and in it, the character where the JSON stopped (issue 35): the `n` of `not`.
    assert re.findall(r'<span class="error-char"[^>]*><span class="seg body f2">(.)</span></span>', stream) == ["n"]
    # The badge follows the failed region; the text after it is shown as dropped.
    assert re.search(r"&lt;/tool_call&gt;</span></span><span class=\"error-badge\" title=\"Field &#x27;tool_calls&#x27; "
                     r"\(content &quot;json&quot;, response template line \d+\) could not parse its region as JSON[^>]*>⚠ Field", stream)
    assert stream.endswith('<span class="seg discarded" title="discarded: no region">&lt;|im_end|&gt;</span>')
    assert "could not parse its region" in final.diagnostics and 'class="diag error"' in final.diagnostics
    assert "at output line 1, column 21 (character 21 of the output)" in final.diagnostics


def test_simulated_run_parses_back_to_a_message():
    sess = session()
    final = RunUpdate.shown(run_all(sess, RunSettings(runner="simulated", tokens_per_second=0)))
    message = json.loads(final.message)
    assert message["role"] == "assistant" and message.get("content")
    assert "Parsed without problems" in final.diagnostics


@pytest.mark.parametrize(
    "settings, expected",
    [
        (RunSettings(recording=PASTED, pasted=""), "Nothing to replay"),
        (RunSettings(recording="no such recording"), "No recording named"),
        (RunSettings(runner="local", model=""), "Which model?"),
        (RunSettings(runner="remote", remote_url="not a url", remote_model="m"), "Not a server URL"),
    ],
)
def test_bad_settings_become_messages(settings, expected):
    updates = run_all(session(), settings)
    assert len(updates) == 1 and expected in html.unescape(updates[0].diagnostics)


def test_a_remote_server_that_is_down_is_a_message_in_the_run_panel():
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    final = run_all(session(), RunSettings(runner="remote", remote_url=f"http://127.0.0.1:{port}", remote_model="m"))[-1]
    assert 'class="diag error"' in final.diagnostics and "failed" in final.stats


def test_a_local_model_that_cannot_load_is_a_message(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    final = run_all(session(), RunSettings(runner="local", model="nobody/no-such-model-here", max_new_tokens=4))[-1]
    assert 'class="diag error"' in final.diagnostics and "failed" in final.stats


def test_broken_templates_refuse_to_run_and_keep_the_last_run():
    sess = session()
    run_all(sess, RunSettings(recording="think then answer"))
    last = sess.last_run
    sess.workspace.response_template = "{"
    updates = run_all(sess, RunSettings(recording="think then answer"))
    assert len(updates) == 1 and updates[0].stream is None and "response template has errors" in updates[0].diagnostics
    sess.workspace.response_template = session().workspace.response_template
    sess.workspace.chat_template = "{{ raise_exception('no') }}"
    updates = run_all(sess, RunSettings(recording="think then answer"))
    assert len(updates) == 1 and updates[0].stream is None and "does not render" in updates[0].diagnostics
    assert sess.last_run is last


def test_run_callback_syncs_the_editors_and_reports_case_errors():
    sess = session()
    settings = settings_values(RunSettings(recording="think then answer", tokens_per_second=0))
    outputs = list(run_callback(**edited(sess), **settings, api_key=""))
    assert set().union(*outputs) == {"stream", "legend", "stats", "run_diagnostics", "message", "events", "step", "step_view", "run", "stop",
                                     "run_note"}
    assert json.loads([o["message"] for o in outputs if "message" in o][-1]) == EXPECTED
    outputs = list(run_callback(**edited(sess, messages="[broken"), **settings, api_key=""))
    assert len(outputs) == 1 and "The case has errors" in outputs[0]["run_diagnostics"]


def test_two_sessions_run_at_once_without_seeing_each_other():
    first, second = session(), session()
    second.workspace.recordings[0].output = "Only the second session says this.<|im_end|>"
    results: dict[str, list[RunUpdate]] = {}

    def go(name, sess):
        results[name] = run_all(sess, RunSettings(recording="think then answer", tokens_per_second=200))

    threads = [threading.Thread(target=go, args=("a", first)), threading.Thread(target=go, args=("b", second))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert json.loads(RunUpdate.shown(results["a"]).message) == EXPECTED
    assert json.loads(RunUpdate.shown(results["b"]).message)["content"] == "Only the second session says this."
    assert "second session" not in "".join(first.last_run.chunks)
    assert first.workspace.recordings[0].output == OUTPUT


def test_a_fresh_session_can_run_before_the_page_load_fills_it():
    """Gradio may hand an event that races the page load its own fresh copy of the session state:
    that copy holds the default preset (what the page shows), so a run works instead of failing."""
    from app.state import DEFAULT_PRESET

    fresh = Session.empty()
    assert fresh.workspace.preset == DEFAULT_PRESET and fresh.workspace.recordings
    final = list(stream_run(fresh, RunSettings(recording=fresh.workspace.recordings[0].name, tokens_per_second=0)))[-1]
    assert "done" in final.stats


def test_a_run_that_cannot_start_says_failed():
    sess = session()
    updates = list(stream_run(sess, RunSettings(recording="no such recording", tokens_per_second=0)))
    assert len(updates) == 1 and "failed" in updates[0].stats and "No recording named" in updates[0].diagnostics


class Words:
    """A stand-in tokenizer that cuts at spaces (offsets included, as a fast tokenizer gives)."""

    def __call__(self, text, add_special_tokens=False, return_offsets_mapping=False):
        offsets, start = [], 0
        for word in text.split(" "):
            offsets.append((start, start + len(word) + 1))
            start += len(word) + 1
        return {"input_ids": list(range(len(offsets))), "offset_mapping": offsets}


def test_a_replay_is_split_by_the_sessions_own_tokenizer_only():
    """A visitor who ran a local model replays in that model's tokens; another visitor's replays
    are not touched by it (they use the word-sized fallback)."""
    with_model, without = session(), session()
    with_model.tokenizer = Words()
    split = run_all(with_model, RunSettings(recording="think then answer", tokens_per_second=0))
    plain = run_all(without, RunSettings(recording="think then answer", tokens_per_second=0))
    assert "".join(with_model.last_run.chunks) == "".join(without.last_run.chunks) == OUTPUT
    words = OUTPUT.split(" ")
    assert with_model.last_run.chunks == [w + " " for w in words[:-1]] + [words[-1]]
    assert without.last_run.chunks != with_model.last_run.chunks
    assert json.loads(RunUpdate.shown(split).message) == json.loads(RunUpdate.shown(plain).message) == EXPECTED


def test_pace_zero_is_reported_as_an_instant_replay():
    final = run_all(session(), RunSettings(recording="think then answer", tokens_per_second=0))[-1]
    assert "instant replay" in final.stats and "tokens/s" in final.stats
    paced = run_all(session(), RunSettings(recording="think then answer", tokens_per_second=500))[-1]
    assert "instant replay" not in paced.stats


def test_an_edit_while_a_run_streams_leaves_that_run_stale():
    """The run belongs to the templates it started with, not to what the editors hold when it ends."""
    sess = session()
    updates = stream_run(sess, RunSettings(recording="think then answer", tokens_per_second=0), interval=0)
    next(updates)
    sess.workspace.chat_template += "{# edited during the run #}"
    list(updates)
    assert sess.last_run is not None and sess.run_is_stale()


def test_a_refused_case_action_after_a_template_edit_keeps_the_run():
    """A template edit marks the run stale (it stays on screen); only another case clears it, and a
    refused rename switches nothing."""
    from app import case_panel as cases
    from tests.test_app_support import form_values

    sess = session()
    run_all(sess, RunSettings(recording="think then answer", tokens_per_second=0))
    sess.workspace.chat_template += "{# edited #}"
    name = sess.workspace.case_name
    out = cases.rename_case(sess, "", name, **form_values(sess))
    assert "needs a name" in str(out) and sess.last_run is not None and sess.run_is_stale()
    out = cases.select_case(sess, name, name, **form_values(sess))
    assert sess.last_run is not None  # the same case: the run stays, stale
    other = next(c.name for c in sess.workspace.cases if c.name != name)
    out = cases.select_case(sess, other, name, **form_values(sess))
    assert sess.last_run is None and out["stream"]  # another case: cleared
