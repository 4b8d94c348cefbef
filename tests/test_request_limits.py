"""Issues 29 (items 3 and 4), 36 and 37, in process: the request limits in front of Gradio read a
request as the app will (its JSON body, its headers as one list, its sign-in), refuse the routes the
playground does not use before Gradio reads them, count every request a client has being answered,
and charge uploads per file. (On a served app: tests/test_gradio_routes.py and the attacks of
tests/test_public_server.py.)"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import gradio as gr
import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.sessions import SessionMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from app import request_limits
from app.clients import client_of, client_of_scope
from app.gradio_routes import allowed
from app.request_limits import Door, RequestLimits
from engine import limits
from engine.clients import Busy, Quota
from tests.test_visitors import _run


async def _ok(scope, receive, send) -> None:
    """What Gradio would do with a request that got through: read its body and answer 200."""
    while (await receive()).get("more_body"):
        pass
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b""})


async def _call(app, method: str, path: str, body: bytes = b"", headers: list | None = None,
                peer: str = "127.0.0.1") -> int:
    sent: list[dict] = []

    async def receive() -> dict:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {"type": "http", "method": method, "path": path, "client": (peer, 1), "query_string": b"",
             "headers": [(b"content-length", str(len(body)).encode()), *(headers or [])]}
    await app(scope, receive, send)
    return sent[0]["status"]


def join(session_key: str, page: str, peer: str = "127.0.0.1", headers: list | None = None) -> int:
    """A `queue/join` of page `page`, its session named under `session_key` as the JSON is written."""
    body = ('{"data": [1], "fn_index": 3, "%s": "%s"}' % (session_key, page)).encode()
    return _run(_call(RequestLimits(_ok), "POST", "/gradio_api/queue/join", body, headers, peer))


# ----- issue 29, item 3: limits read a request as the app will ----------------------------------


def test_an_escaped_session_key_is_the_same_key_and_is_refused_like_a_plain_one() -> None:
    # Gradio reads the body as JSON: "session\u005fhash" is "session_hash" (the regex on bytes missed it).
    allowed_sessions = int(limits.CLIENT_NEW_SESSIONS)
    statuses = [join("session\\u005fhash", f"escaped-{i}", peer="198.51.100.90") for i in range(allowed_sessions + 3)]
    assert statuses == [200] * allowed_sessions + [429] * 3
    assert join("\\u0073ession_hash", "escaped-0", peer="198.51.100.90") == 200  # a session it has is not new
    plain = [join("session_hash", f"plain-{i}", peer="198.51.100.91") for i in range(allowed_sessions + 3)]
    assert plain == statuses  # refused exactly like plain keys


def test_the_session_read_is_the_top_level_one_and_the_last_of_repeated_keys() -> None:
    body = json.dumps({"data": [{"session_hash": "known"}], "session_hash": "outer"}).encode()
    assert request_limits.session_named(body) == "outer"  # a nested key names nothing (the regex took the last)
    assert request_limits.session_named(b'{"session_hash": "a", "session_hash": "b"}') == "b"  # as json.loads
    assert request_limits.session_named(b'{"session_hash": 5}') is None  # Gradio refuses it
    assert request_limits.session_named(b"[" * 100_000) is None  # not JSON Gradio can read


# ----- issue 29, item 4: one reader of client addresses -------------------------------------------


def test_repeated_forwarded_headers_are_one_list_read_the_same_by_the_limits_and_the_handlers(monkeypatch) -> None:
    monkeypatch.setenv("PLAYGROUND_PROXY_HOPS", "1")
    headers = [(b"x-forwarded-for", b"6.6.6.6"), (b"x-forwarded-for", b"203.0.113.5")]  # the proxy added a line
    scope = {"type": "http", "method": "GET", "path": "/", "client": ("10.0.0.1", 1), "headers": headers}
    assert client_of_scope(scope) == "address:203.0.113.5"  # the last entry the proxy appended
    # The handlers read the very request Gradio hands them the same way (they read the first line before).
    assert client_of(gr.Request(request=Request(scope))) == "address:203.0.113.5"
    monkeypatch.setenv("PLAYGROUND_PROXY_HOPS", "0")
    assert client_of_scope(scope) == client_of(gr.Request(request=Request(scope))) == "address:10.0.0.1"


def test_forged_addresses_with_no_trusted_proxy_are_one_client(monkeypatch) -> None:
    monkeypatch.setenv("PLAYGROUND_PROXY_HOPS", "0")
    allowed_sessions = int(limits.CLIENT_NEW_SESSIONS)
    statuses = [join("session_hash", f"forged-{i}", peer="198.51.100.92",
                     headers=[(b"x-forwarded-for", f"192.0.2.{i}".encode())]) for i in range(25)]
    assert statuses == [200] * allowed_sessions + [429] * (25 - allowed_sessions)


def _signed_in_app() -> TestClient:
    """The request limits behind Starlette's session middleware, as Gradio's OAuth installs it, and a
    sign-in route writing the session as Gradio's OAuth callback does."""

    async def sign_in(request: Request) -> JSONResponse:
        request.session["oauth_info"] = {"userinfo": {"preferred_username": request.query_params["name"]},
                                         "expires_at": time.time() + float(request.query_params.get("for", 3600))}
        return JSONResponse({})

    async def join_route(request: Request) -> JSONResponse:
        await request.body()
        return JSONResponse({})

    app = Starlette(routes=[Route("/login/callback", sign_in), Route("/gradio_api/queue/join", join_route, methods=["POST"])],
                    middleware=[Middleware(SessionMiddleware, secret_key="test"), Middleware(RequestLimits)])
    return TestClient(app)


def test_a_signed_in_visitor_is_one_client_from_any_address(monkeypatch) -> None:
    monkeypatch.setenv("PLAYGROUND_PROXY_HOPS", "1")
    client = _signed_in_app()
    assert client.get("/login/callback", params={"name": "classroom-alice"}).status_code == 200
    allowed_sessions = int(limits.CLIENT_NEW_SESSIONS)
    statuses = [client.post("/gradio_api/queue/join", json={"data": [], "session_hash": f"alice-{i}"},
                            headers={"X-Forwarded-For": f"192.0.2.{i}"}).status_code for i in range(allowed_sessions + 3)]
    assert statuses == [200] * allowed_sessions + [429] * 3  # one client, wherever she comes from
    # Her classmates behind one address are each themselves once signed in.
    bob = _signed_in_app()
    bob.get("/login/callback", params={"name": "classroom-bob"})
    assert bob.post("/gradio_api/queue/join", json={"data": [], "session_hash": "bob-0"},
                    headers={"X-Forwarded-For": "192.0.2.1"}).status_code == 200
    # The handlers count her the same way.
    scope = {"type": "http", "client": ("10.0.0.1", 1), "headers": [],
             "session": {"oauth_info": {"userinfo": {"preferred_username": "classroom-alice"}}}}
    assert client_of(gr.Request(request=Request(scope))) == client_of_scope(scope) == "user:classroom-alice"


def test_an_expired_sign_in_counts_for_nothing(monkeypatch) -> None:
    monkeypatch.setenv("PLAYGROUND_PROXY_HOPS", "1")
    client = _signed_in_app()
    client.get("/login/callback", params={"name": "expired-eve", "for": "-10"})
    statuses = [client.post("/gradio_api/queue/join", json={"data": [], "session_hash": f"eve-{i}"},
                            headers={"X-Forwarded-For": f"192.0.2.{100 + i}"}).status_code for i in range(25)]
    assert statuses == [200] * 25  # each address its own client: the sign-in is not believed


# ----- issue 36: Gradio's routes the playground does not use ---------------------------------------


def test_routes_the_playground_does_not_use_are_refused_unread() -> None:
    read: list[str] = []

    async def gradio(scope, receive, send) -> None:
        read.append(scope["path"])
        await _ok(scope, receive, send)

    app = RequestLimits(gradio)
    for method, path in [("GET", "/gradio_api/deep_link"), ("POST", "/gradio_api/call/refresh"),
                         ("POST", "/gradio_api/process_recording"), ("POST", "/gradio_api/vibe-edit"),
                         ("GET", "/monitoring"), ("GET", "/gradio_api/openapi.json"), ("GET", "/no/such/route"),
                         ("POST", "/gradio_api/cancel"),  # its race lost the queue's places for good
                         ("POST", "/gradio_api/queue/data")]:  # a route's path with another method
        assert _run(_call(app, method, path, b"x" * 100)) == 404, (method, path)
    assert read == []
    for method, path in [("GET", "/"), ("POST", "/gradio_api/queue/join"), ("GET", "/assets/index.js"),
                         ("GET", "/gradio_api/file=/tmp/x"), ("POST", "/gradio_api/run/predict")]:
        assert allowed(method, path), (method, path)


# ----- issue 37: every request counts ---------------------------------------------------------------


def test_a_client_has_a_bounded_number_of_requests_answered_at_once_gets_included(monkeypatch) -> None:
    monkeypatch.setattr(request_limits, "DOOR", Door(2, waiting=1))

    async def scenario() -> tuple[list[int], list[int], int]:
        release = asyncio.Event()

        async def slow(scope, receive, send) -> None:
            await release.wait()
            await _ok(scope, receive, send)

        app = RequestLimits(slow)
        calls = [asyncio.ensure_future(_call(app, "GET", "/theme.css", peer="198.51.100.93")) for _ in range(4)]
        other = asyncio.ensure_future(_call(app, "GET", "/theme.css", peer="198.51.100.94"))
        await asyncio.sleep(0.05)
        early = [c.result() for c in calls if c.done()]
        release.set()
        return early, sorted([await c for c in calls]), await other

    early, answered, other = _run(scenario())
    # Two answered at once, one waiting its turn, the fourth refused at once; another client unaffected.
    assert early == [429] and answered == [200, 200, 200, 429] and other == 200


def test_a_request_waiting_its_turn_takes_the_place_of_one_that_ended() -> None:
    async def scenario() -> tuple[list[str], int, int, dict]:
        door = Door(1, waiting=2)
        log: list[str] = []
        first_done, release = asyncio.Event(), asyncio.Event()

        async def hold(name: str, until: asyncio.Event) -> None:
            async with door.entered("c"):
                log.append(name)
                await until.wait()

        first = asyncio.ensure_future(hold("first", first_done))
        await asyncio.sleep(0.01)
        second, gone = asyncio.ensure_future(hold("second", release)), asyncio.ensure_future(hold("gone", release))
        await asyncio.sleep(0.01)
        gone.cancel()  # it leaves the line while waiting
        first_done.set()
        await asyncio.sleep(0.01)
        inside = door.inside("c")
        release.set()
        await asyncio.gather(first, second)
        return log, inside, door.inside("c"), door._queues

    assert _run(scenario()) == (["first", "second"], 1, 0, {})

    async def full() -> None:
        door = Door(1, waiting=0)
        async with door.entered("c"), door.entered("c"):
            pass

    with pytest.raises(Busy):
        _run(full())


# ----- issue 37: uploads charged per file ---------------------------------------------------------


@pytest.fixture
def gradio_uploads(tmp_path: Path, monkeypatch) -> Iterator[tuple[TestClient, Path]]:
    """Gradio's own upload route behind the request limits, writing into `tmp_path`."""
    from gradio.routes import App

    monkeypatch.setattr(request_limits, "UPLOADS", Quota(limits.CLIENT_UPLOAD_BYTES, limits.UPLOAD_BYTES, 600))
    monkeypatch.setenv("PLAYGROUND_PROXY_HOPS", "1")
    with gr.Blocks() as blocks:
        gr.File()
    blocks.max_file_size = None  # (what `launch` sets)
    app = App.create_app(blocks, app_kwargs={"middleware": [Middleware(RequestLimits)]})
    app.uploaded_file_dir = str(tmp_path)
    yield TestClient(app), tmp_path


def _files(count: int, salt: int = 0) -> list:
    return [("files", (f"f{i}.json", b"[%d]" % salt, "application/json")) for i in range(count)]


def test_an_upload_of_more_files_than_the_page_sends_is_refused_and_leaves_nothing(gradio_uploads) -> None:
    client, folder = gradio_uploads
    refused = client.post("/gradio_api/upload", files=_files(limits.MAX_UPLOAD_FILES + 1),
                          headers={"X-Forwarded-For": "198.51.100.95"})
    assert refused.status_code == 413 and f"more than {limits.MAX_UPLOAD_FILES} files" in refused.json()["error"]
    assert list(folder.rglob("*")) == []  # Gradio deleted the files it had started
    accepted = client.post("/gradio_api/upload", files=_files(limits.MAX_UPLOAD_FILES),
                           headers={"X-Forwarded-For": "198.51.100.95"})
    assert accepted.status_code == 200 and len(accepted.json()) == limits.MAX_UPLOAD_FILES


def test_each_uploaded_file_counts_as_at_least_its_minimum(gradio_uploads) -> None:
    client, folder = gradio_uploads
    per_request = limits.MAX_UPLOAD_FILES * limits.UPLOAD_FILE_MIN_BYTES
    statuses = [client.post("/gradio_api/upload", files=_files(limits.MAX_UPLOAD_FILES, salt),
                            headers={"X-Forwarded-For": "198.51.100.96"}).status_code
                for salt in range(limits.CLIENT_UPLOAD_BYTES // per_request + 2)]
    fitted = limits.CLIENT_UPLOAD_BYTES // per_request
    assert statuses == [200] * fitted + [429] * 2  # 20 requests of 10 tiny files, not 10,000
    files = [f for f in folder.rglob("*") if f.is_file()]
    assert len(files) == fitted * limits.MAX_UPLOAD_FILES  # the refused ones left none


def test_the_sweep_deletes_cut_off_uploads_and_the_folders_gradio_leaves_empty(tmp_path: Path) -> None:
    old = time.time() - limits.TEMP_FILE_SECONDS - 60
    (tmp_path / "cut-off").write_bytes(b"half an upload")
    (tmp_path / "emptied").mkdir()  # an upload's folder whose file was read and deleted
    (tmp_path / "in-use").mkdir()
    (tmp_path / "in-use" / "tokenizer.json").write_bytes(b"{}")
    (tmp_path / "just-made").mkdir()
    for name in ("cut-off", "emptied", "in-use"):
        os.utime(tmp_path / name, (old, old))
    assert request_limits.delete_abandoned_uploads(str(tmp_path)) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in-use", "just-made"]


def test_the_sweep_deletes_old_uploads_whatever_became_of_gradios_own_timer(tmp_path: Path) -> None:
    """Gradio deletes an accepted upload at this age too, but from one background task that ends for
    good when an upload lands while it walks its set of files (seen under the tiny-files attack:
    200 accepted files stayed): the sweep does not depend on it."""
    old = time.time() - limits.TEMP_FILE_SECONDS - 60
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "f.json").write_bytes(b"{}")
    os.utime(tmp_path / "a" / "f.json", (old, old))  # a's file is past the age, b's was just uploaded
    assert request_limits.delete_abandoned_uploads(str(tmp_path)) == 2  # a's file, then its folder
    assert [str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")] == ["b", "b/f.json"]
