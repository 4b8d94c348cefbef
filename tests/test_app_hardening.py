"""Issue 11 at the app's callbacks (no browser): each hostile input gets its message in the right
place, one visitor's events never pile up or hold up another's, Stop ends a run at once whatever is
queued, bad share links open the page, idle sessions let go of memory, and public mode keeps
visitors off the server's disk and credentials."""

from __future__ import annotations

import base64
import json
import re
import threading
import time
import zlib

import pytest

from app.checks_panel import run_all_checks
from app.page import first_view, restore_page
from app.run_stream import stream_run
from app.sources import from_hub
from app.state import IDLE_SECONDS, LastRun, decode_workspace, encode_workspace
from engine.workspace import PASTED, RunSettings
from tests.test_app_support import edited, refresh_with, session

HOSTILE_ANCHOR = json.dumps({"version": 1, "start_anchor_pattern": "(a+)+$", "fields": {"content": {}}})
LOOP = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"


def in_background(function, *args, **kwargs) -> tuple[threading.Thread, dict]:
    out: dict = {}

    def run() -> None:
        out["value"] = function(*args, **kwargs)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


# ----- item 1: a backtracking regex ----------------------------------------------------------------


def test_a_backtracking_regex_is_a_message_on_the_response_editor_and_others_are_served(monkeypatch) -> None:
    from engine import limits

    monkeypatch.setattr(limits, "REGEX_SECONDS", 1.0)
    attacker = session()
    attack = '[{"role": "user", "content": "' + "a" * 3000 + '!"}]'
    hostile, out = in_background(refresh_with, attacker, response=HOSTILE_ANCHOR, messages=attack)
    time.sleep(0.1)
    innocent = refresh_with(session())  # meanwhile, another visitor edits
    assert "im_start" in innocent["prompt"] and hostile.is_alive()
    hostile.join(timeout=60)
    shown = out["value"]
    assert "start_anchor_pattern" in shown["response_diagnostics"] and "took longer than 1 s" in shown["response_diagnostics"]
    assert "Chat template renders this case" in shown["chat_diagnostics"]  # the right editor is blamed


def test_a_visitors_edits_never_pile_up_and_the_page_ends_on_the_latest() -> None:
    """One refresh per session at a time: edits that arrive meanwhile are answered at once, and the
    running refresh renders again with the latest one."""
    sess = session()
    loop = "{% for i in range(10000) %}{% for j in range(1000) %}{% set x = i * j %}{% endfor %}{% endfor %}"  # a second or so
    chat = sess.workspace.chat_template
    first, out = in_background(refresh_with, sess, chat=loop + chat)
    time.sleep(0.3)
    answers = [refresh_with(sess, chat=f"edit {n}" + chat) for n in range(20)]
    assert answers == [{}] * 20  # answered at once, no server thread held
    first.join(timeout=60)
    # (each piece of the prompt in a span saying where it came from: see test_app_provenance.py)
    assert re.match(r'<div class="prompt-text"[^>]*><span class="pm-" data-p="0">edit 19', out["value"]["prompt"])
    assert sess.busy == set()


# ----- item 2: one visitor's slow template ----------------------------------------------------------


def test_a_looping_check_run_does_not_hold_up_another_visitors_edit(monkeypatch) -> None:
    import app.checks_panel

    monkeypatch.setattr(app.checks_panel, "CHECKS_TIMEOUT", 4.0)
    attacker = session()
    checks, out = in_background(run_all_checks, **edited(attacker, chat=LOOP))
    time.sleep(0.3)
    again = run_all_checks(**edited(attacker, chat=LOOP))
    assert "already running" in again["checks_summary"]  # a second click is answered at once
    innocent = refresh_with(session())
    assert "im_start" in innocent["prompt"] and checks.is_alive()
    checks.join(timeout=120)
    assert "took longer than 4 s" in out["value"]["checks_summary"]


# ----- item 6: Stop --------------------------------------------------------------------------------


def test_stop_ends_a_run_at_once_whatever_is_queued() -> None:
    sess = session()
    text = "<think>\n" + "word " * 90_000 + "</think>\nDone.<|im_end|>"  # ~450k characters, at once
    settings = RunSettings(recording=PASTED, pasted=text, tokens_per_second=0)
    updates = stream_run(sess, settings, interval=0)
    parsed_at_stop = None
    for update in updates:
        if sess.stop is not None and parsed_at_stop is None and update.stream is not None:
            count = int(update.stats.split("chunks</span><b>")[1].split("<")[0].replace(",", ""))
            if count > 1000:
                sess.stop.set()
                parsed_at_stop = count
    assert parsed_at_stop is not None
    assert "stopped" in update.stats and len(sess.last_run) == parsed_at_stop  # nothing parsed after Stop
    assert len(sess.last_run) < 90_000 // 2


def test_a_second_run_in_the_same_tab_is_refused_while_one_runs() -> None:
    sess = session()
    slow = RunSettings(recording="think then answer", tokens_per_second=20)
    running = stream_run(sess, slow, interval=0)
    next(running)
    [refused] = list(stream_run(sess, slow))
    assert "already going" in refused.diagnostics
    sess.stop.set()
    list(running)


def test_an_output_over_the_cap_is_refused_before_it_runs() -> None:
    from engine import limits

    [update] = list(stream_run(session(), RunSettings(recording=PASTED, pasted="x" * (limits.MAX_OUTPUT_CHARS + 1))))
    assert "over the playground" in update.diagnostics and "failed" in update.stats


# ----- item 7: memory ------------------------------------------------------------------------------


def test_a_last_run_is_kept_compact_and_idle_sessions_let_go_of_it() -> None:
    from app.visitors import sweep

    chunks = ["word "] * 10_000
    run = LastRun("p", None, {}, chunks, list(range(10_000)), [0.1] * 10_000)
    assert run.chunks == chunks and run.output == "word " * 10_000 and len(run) == 10_000
    sess = session()
    sess.last_run, sess.last_prompt_html = run, "<div>prompt</div>"
    sess.client = "address:192.0.2.1"  # a request came for it (app.visitors.attending)
    sweep()
    assert sess.last_run is run  # in use: kept
    sess.last_used -= IDLE_SECONDS + 1
    assert sweep() >= 1
    # Issue 25: the whole session goes (the browser's saved copy and the share link bring the work back).
    assert sess.released and sess.last_run is None and sess.last_prompt_html == "" and not sess.workspace.cases


# ----- items 8 and 9: deep JSON, lone surrogates, bad share links ------------------------------------


def test_deep_json_and_lone_surrogates_are_messages_where_they_belong() -> None:
    sess = session()
    deep = '{"version": 1, "start_anchor": "x", "fields": {"c": {"transform": ' + "[" * 1000 + "]" * 1000 + "}}}"
    shown = refresh_with(sess, response=deep)
    assert "Nested too deeply" in shown["response_diagnostics"] and "Chat template renders" in shown["chat_diagnostics"]
    shown = refresh_with(sess, messages='[{"role": "user", "content": "' + "[" * 1000 + '"}]')  # a string: fine
    assert "Case OK" in shown["case_diagnostics"]
    shown = refresh_with(sess, messages='[{"role": "user", "content": "half an emoji \\ud83d"}]')
    assert "Lone surrogate" in shown["case_diagnostics"]
    shown = refresh_with(sess, chat="{{ messages[0].content }}\ud800")  # as an API caller could send it
    assert "Lone surrogate" in shown["chat_diagnostics"]
    json.dumps(shown, ensure_ascii=False).encode("utf-8")  # everything shown can be sent to a browser
    assert decode_workspace(shown["saved_code"])[0].chat_template.endswith("\ufffd")  # saved, and shown safely


def code(data: object) -> str:
    raw = json.dumps(data, ensure_ascii=True).encode()
    return base64.urlsafe_b64encode(zlib.compress(raw)).decode().rstrip("=")


@pytest.mark.parametrize(
    "link, reason",
    [
        (code({"v": 99}), "newer version"),
        (code({"v": "1"}), "not a playground state"),
        (code([1, 2]), "not a playground state"),
        (code({"v": 1, "cases": "[" * 5000}), None),
        ("!!!", "damaged"),
        (base64.urlsafe_b64encode(zlib.compress(b"[" * 100_000 + b"]" * 100_000)).decode(), "damaged"),
        (code({"v": 1, "cases": [{"name": "<img src=x onerror=alert(1)>", "messages": [], "nope": 1}]}), None),
    ],
)
def test_a_bad_share_link_loads_the_page_with_a_message(link: str, reason: str | None) -> None:
    sess = session()
    shown = restore_page(sess, json.dumps({"hash": "#s=" + link, "saved": None}))
    assert "⚠" in shown["status"] and "<img" not in shown["status"]  # escaped
    if reason:
        assert reason in shown["status"]
    # The default preset, ready to edit (the page was served showing it; only what differs is sent).
    assert sess.workspace.preset == "smollm3" and {**first_view(), **shown}["chat_template"]
    assert refresh_with(sess)["prompt"]


def test_encoding_a_workspace_never_fails_and_decoding_gives_text_a_browser_can_show() -> None:
    sess = session()
    sess.workspace.chat_template = "x\ud800"
    sess.workspace.cases[0].messages[0]["content"] = "\udfff"
    restored, problem = decode_workspace(encode_workspace(sess.workspace))
    assert problem is None and restored.chat_template == "x\ufffd" and restored.cases[0].messages[0]["content"] == "\ufffd"


# ----- items 3 and 4: public mode in the app -------------------------------------------------------


@pytest.fixture
def public(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ("PLAYGROUND_PUBLIC", "PLAYGROUND_MODELS", "PLAYGROUND_REMOTE", "PLAYGROUND_REMOTE_HOSTS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SPACE_ID", "owner/playground")
    return monkeypatch


def test_a_visitor_cannot_load_or_run_from_the_servers_disk(public, tmp_path) -> None:
    (tmp_path / "chat_template.jinja").write_text("SERVER FILE")
    (tmp_path / "model.safetensors").write_bytes(b"x")
    workspace, problems = from_hub(session().workspace, str(tmp_path), "")
    assert workspace is None and "SERVER FILE" not in json.dumps([p.message for p in problems])
    public.setenv("PLAYGROUND_MODELS", "HuggingFaceTB/SmolLM2-135M-Instruct")
    [update] = list(stream_run(session(), RunSettings(runner="local", model=str(tmp_path))))
    assert "only the models its owner listed" in update.diagnostics
    assert "safetensors" not in update.diagnostics and str(tmp_path) not in update.diagnostics


def test_the_local_runner_never_fetches_with_the_servers_token(public) -> None:
    """A listed model is looked up anonymously (token=False), even with HF_TOKEN set."""
    import huggingface_hub

    from engine.runners import LocalRunner, RunnerError

    seen: list = []

    def model_info(self, *args, **kwargs):
        seen.append(self.token)
        raise huggingface_hub.errors.HFValidationError("stop here")

    public.setenv("HF_TOKEN", "hf_owner_secret_token_000000")
    public.setenv("PLAYGROUND_MODELS", "owner/model")
    public.setattr(huggingface_hub.HfApi, "model_info", model_info)
    with pytest.raises(RunnerError, match="not a valid Hub id|neither"):
        list(LocalRunner("owner/model").stream("hi"))
    assert seen == [False]


def test_the_runners_offered_follow_the_owners_settings(public) -> None:
    from app.run_panel import runner_choices

    assert [v for _, v in runner_choices()] == ["recorded", "simulated"]
    public.setenv("PLAYGROUND_MODELS", "owner/model")
    public.setenv("PLAYGROUND_REMOTE", "1")
    assert [v for _, v in runner_choices()] == ["recorded", "simulated", "local", "remote"]


def test_the_hub_status_is_escaped() -> None:
    from app.page import load_hub

    shown = load_hub(session(), "<img src=x onerror=alert(1)>", "")
    assert "<img" not in shown["status"]


def test_values_of_the_wrong_type_from_an_api_caller_are_messages_not_crashes():
    """The edit events skip Gradio's preprocessing (speed), so a caller can send a number or a list
    where the page sends text: each becomes a diagnostic where it belongs."""
    from app.workbench import edit_chat_template
    from tests.test_app_support import refresh_with, session

    sess = session()
    out = refresh_with(sess, messages=123, tools=["not", "text"])
    assert 'class="diag error"' in out["case_diagnostics"]
    out = edit_chat_template(sess, 42, False)
    assert sess.workspace.chat_template == "" and "chat_diagnostics" in out
