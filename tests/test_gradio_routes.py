"""Issues 36, 37 and 29 (item 4) on the page served as app.py serves it (app.serving.launch, in this
process, on a free 127.0.0.1 port): every route the running app answers is one app/gradio_routes.py
decides about (a Gradio upgrade cannot open one silently), every API endpoint is an event the page
wires, what is answered from memory is exactly what Gradio answers, Gradio's deep link is refused and
writes nothing, and uvicorn does not rewrite the client's address from a header it did not check."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import orjson
import pytest

from app.gradio_routes import ROUTES, served_routes
from app.request_limits import RequestLimits
from app.serving import launch, remove_unused_folders
from engine import limits
from tests.servers import free_port

pytestmark = pytest.mark.slow  # the page built and served (about 10 s)


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[Any, str]]:
    from app.page import build

    saved = os.environ.get("FORWARDED_ALLOW_IPS")
    page = build().queue(default_concurrency_limit=8)
    port = free_port()
    launch(page, "127.0.0.1", port)
    try:
        yield page, f"http://127.0.0.1:{port}"
    finally:
        page.close()
        if saved is None:
            os.environ.pop("FORWARDED_ALLOW_IPS", None)
        else:
            os.environ["FORWARDED_ALLOW_IPS"] = saved


def get(url: str, headers: dict | None = None, method: str = "GET", body: bytes | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers=headers or {}, method=method, data=body)
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_every_route_the_app_answers_is_listed_allowed_or_refused(served) -> None:
    page, _ = served
    listed = {(method, route.path) for route in ROUTES for method in route.methods}
    unknown = [f"{method} {path}" for method, path in served_routes(page.app) if (method, path) not in listed]
    assert unknown == [], ("Gradio answers routes app/gradio_routes.py does not decide about; add each, allowed "
                           "(with why the playground needs it) or refused:\n" + "\n".join(unknown))
    assert all(route.why for route in ROUTES)


def test_every_endpoint_of_the_api_is_an_event_the_page_wires(served) -> None:
    page, url = served
    status, body = get(f"{url}/gradio_api/info")
    assert status == 200
    wired = {f"/{fn.api_name}" for fn in page.fns.values() if getattr(fn.fn, "input_names", None) is not None}
    named = set(json.loads(body)["named_endpoints"])
    assert named and named <= wired, sorted(named - wired)


def _inner(page: Any) -> Any:
    """The app behind the request limits: what Gradio itself answers."""
    layer = page.app.middleware_stack
    while not isinstance(layer, RequestLimits):
        layer = layer.app
    return layer.app


def _gradio_answer(page: Any, path: str, query: str, headers: dict) -> tuple[int, bytes]:
    """Gradio's own answer to this request, asked directly (no request limits, no shared answers)."""
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
             "path": path, "raw_path": path.encode(), "query_string": query.encode(), "root_path": "",
             "server": ("127.0.0.1", 80), "client": ("127.0.0.1", 1), "app": page.app, "state": {},
             "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()]}
    start: dict = {}
    parts: list[bytes] = []

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict) -> None:
        if message["type"] == "http.response.start":
            start.update(message)
        else:
            parts.append(message.get("body", b""))

    with ThreadPoolExecutor(1) as thread:
        thread.submit(asyncio.run, _inner(page)(scope, receive, send)).result()
    return start["status"], b"".join(parts)


@pytest.mark.parametrize("headers", [
    {}, {"Host": "example.org:8443"}, {"X-Forwarded-Host": "space.hf.space", "X-Forwarded-Proto": "https"},
    {"X-Forwarded-Host": 'evil"><script>\'&'},  # written into JSON and into the page's HTML, escaped as Gradio does
], ids=["plain", "host", "behind-a-proxy", "hostile-host"])
def test_answers_served_from_memory_are_gradio_s_own_for_every_root(served, headers: dict) -> None:
    page, url = served
    asked = {"Host": url.split("//", 1)[1], **headers}
    root = json.loads(_gradio_answer(page, "/config", "", asked)[1])["root"]  # Gradio's root for this request
    for path, query in [("/", ""), ("/config", ""), ("/config", "page="), ("/gradio_api/info", ""),
                        ("/gradio_api/info", "all_endpoints=True"), ("/gradio_api/info", "page=")]:
        status, shared = get(f"{url}{path}?{query}", asked)
        expected_status, expected = _gradio_answer(page, path, query, asked)
        assert (status, expected_status) == (200, 200), (path, query)
        if path == "/gradio_api/info" and not query:
            # Gradio keeps the description it built first, with that request's root, for everyone;
            # the shared one writes each request's own root where Gradio wrote that one.
            expected = expected.replace(orjson.dumps(_root_of(expected))[1:-1], orjson.dumps(root)[1:-1])
        if path == "/":
            assert shared == expected, (path, query)
        else:
            assert json.loads(shared) == json.loads(expected), (path, query)
    status, head = get(f"{url}/", asked, method="HEAD")
    assert status == 200 and head == b""
    status, zipped = get(f"{url}/", {**asked, "Accept-Encoding": "gzip, deflate, br"})  # as a browser asks
    assert status == 200 and gzip.decompress(zipped) == get(f"{url}/", asked)[1]


def _root_of(info: bytes) -> str:
    """The root Gradio wrote into the API's description (its Python example connects to it)."""
    snippet = next(iter(json.loads(info)["named_endpoints"].values()))["code_snippets"]["python"]
    return snippet.split('Client("', 1)[1].split('"', 1)[0].replace('\\"', '"')


def test_the_deep_link_route_is_refused_and_writes_nothing(served) -> None:
    page, url = served
    session = next(iter(page.state_holder.session_data), "no-session")
    folder = Path(page.app.uploaded_file_dir) / "deep_links"
    before = sorted(folder.rglob("*")) if folder.exists() else []
    for _ in range(5):
        status, _ = get(f"{url}/gradio_api/deep_link?session_hash={session}")
        assert status == 404
    assert (sorted(folder.rglob("*")) if folder.exists() else []) == before
    assert get(f"{url}/gradio_api/call/refresh", method="POST", body=b'{"data": []}')[0] == 404
    assert get(f"{url}/?deep_link=anything")[0] == 200  # the page, as without one


def test_gradio_s_unused_app_editor_folder_is_removed(tmp_path: Path, monkeypatch) -> None:
    import gradio.route_utils

    monkeypatch.setattr(gradio.route_utils, "DEFAULT_TEMP_DIR", str(tmp_path))
    (tmp_path / "vibe_edit_history").mkdir()
    remove_unused_folders()
    assert list(tmp_path.iterdir()) == []


def _join(url: str, page: str, headers: dict, key: str = "session_hash") -> tuple[int, bytes]:
    body = ('{"data": [], "fn_index": 100000, "%s": "%s"}' % (key, page)).encode()
    return get(f"{url}/gradio_api/queue/join", {"Content-Type": "application/json", **headers}, "POST", body)


def test_forged_addresses_from_loopback_are_one_client_when_no_proxy_is_trusted(served, monkeypatch) -> None:
    """A local proxy or tunnel: uvicorn trusted 127.0.0.1's X-Forwarded-For and made it the address
    (25 forged addresses were 25 clients). Now the app's hop counting is the one reader."""
    _, url = served
    monkeypatch.setenv("PLAYGROUND_PROXY_HOPS", "0")
    started = time.monotonic()
    answers = [_join(url, f"loopback-forged-{i}", {"X-Forwarded-For": f"192.0.2.{i}"}) for i in range(25)]
    accepted = [status for status, body in answers if not (status == 429 and b"Too many new sessions" in body)]
    assert len(accepted) <= _sessions_allowed(time.monotonic() - started)  # were 25: each address its own client


def _sessions_allowed(seconds: float) -> int:
    """New sessions one client may start in `seconds` from a full allowance (it refills evenly)."""
    return int(limits.CLIENT_NEW_SESSIONS * (1 + seconds / 60))


def test_escaped_session_keys_are_refused_like_plain_ones_by_the_served_app(served, monkeypatch) -> None:
    _, url = served
    monkeypatch.setenv("PLAYGROUND_PROXY_HOPS", "1")
    started = time.monotonic()
    escaped = [_join(url, f"escaped-served-{i}", {"X-Forwarded-For": "198.51.100.97"}, "session\\u005fhash")[0]
               for i in range(25)]
    assert 25 - escaped.count(429) <= _sessions_allowed(time.monotonic() - started)  # were 25
