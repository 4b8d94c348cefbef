"""The answers that are the same for every visitor, built once and served from memory: the page
(`GET /`, 2 MB: the layout and the API's description inside it), its layout (`/config`) and the
API's description (`/gradio_api/info`). Gradio rebuilds each on every request: 67, 19 and 38 ms of
the server's CPU (measured), so a client asking for them in a loop kept a core busy.

What they depend on, read from Gradio's handlers: the address the page is served at (its "root",
from the request's Host and X-Forwarded-Host/-Proto headers), the signed-in user of a password login
(the playground has none: with one, nothing here is shared), and the `page`, `all_endpoints` and
`deep_link` query parameters. So each is built once per page and variant by asking Gradio itself
with a placeholder root, and served with the request's own root written where Gradio writes it,
escaped as Gradio escapes it there (kept as sent for the last few roots, and gzipped for clients
that take it: Gradio's own compression leaves these paths out). `deep_link` is ignored (the playground has no deep links: its
route is refused, app.gradio_routes). tests/test_gradio_routes.py checks each answer against
Gradio's own for several roots."""

from __future__ import annotations

import asyncio
import gzip
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

import orjson
from gradio import route_utils
from starlette.requests import Request

PLACEHOLDER_HOST = "playground-shared-answer.invalid"
BODIES_KEPT = 32  # answers as sent (per root, and gzipped or not), the most recently built
# Roots whose answers are gzipped (compressing the page costs ~30 ms, once per root: a Space has one
# root, and a client inventing Host headers must not buy a compression per request).
GZIP_ROOTS = 4
API_INFO = ("/gradio_api/info", "/gradio_api/info/")
CONFIG = ("/config", "/config/")


@dataclass(frozen=True)
class Answer:
    status: int
    headers: list[tuple[bytes, bytes]]  # without content-length
    body: bytes
    root: str  # the placeholder root written in it
    html: bool  # the root is written as Gradio's templates write JSON into HTML


class SharedAnswers:
    """Answers `GET /` (and `HEAD /`), `/config` and `/gradio_api/info` from memory."""

    def __init__(self) -> None:
        self._answers: dict[tuple, Answer] = {}
        self._bodies: OrderedDict[tuple, bytes] = OrderedDict()  # (key, root, gzipped) -> what is sent
        self._zipped_roots: set[str] = set()
        self._building: dict[tuple, asyncio.Lock] = {}

    @staticmethod
    def key(scope: dict, path: str) -> tuple | None:
        """Which shared answer a request is for (None: it is not one of them)."""
        method = scope.get("method")
        app = scope.get("app")
        if method not in ("GET", "HEAD") or not hasattr(app, "get_blocks") or app.auth or app.auth_dependency:
            return None
        if path == "/":
            return ("page",)
        if method != "GET" or path not in (*API_INFO, *CONFIG):
            return None
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        page = query.get("page", [None])[-1]
        page = page if page is not None and page in app.get_blocks().config["page"] else None
        if path in CONFIG:
            return ("config", page)
        return ("info", page, bool(query.get("all_endpoints", [""])[-1]))

    async def serve(self, key: tuple, app: Any, scope: dict, receive: Any, send: Any) -> bool:
        """Send the shared answer `key` for this request; False if there is none (Gradio could not
        build it: then Gradio answers the request itself)."""
        try:
            root = _root(key, scope)
        except Exception:  # noqa: BLE001 - a Host header no URL holds: Gradio would fail on it too (500)
            body = b'{"error": "The request\'s Host or X-Forwarded-Host header is not an address."}'
            await send({"type": "http.response.start", "status": 400,
                        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return True
        answer = await self._built(key, app, scope)
        if answer is None:
            return False
        zipped = _accepts_gzip(scope) and (root in self._zipped_roots or len(self._zipped_roots) < GZIP_ROOTS)
        if zipped:
            self._zipped_roots.add(root)
        body = self._bodies.get((key, root, zipped))
        if body is None:  # (kept for the last few roots: on a Space, every visitor has the same)
            body = answer.body.replace(_escaped(answer.root, answer.html), _escaped(root, answer.html))
            body = gzip.compress(body, 6, mtime=0) if zipped else body
            self._bodies[(key, root, zipped)] = body
            while len(self._bodies) > BODIES_KEPT:
                self._bodies.popitem(last=False)
        headers = [*answer.headers, (b"content-length", str(len(body)).encode()), (b"vary", b"Accept-Encoding"),
                   *([(b"content-encoding", b"gzip")] if zipped else [])]
        await send({"type": "http.response.start", "status": answer.status, "headers": headers})
        await send({"type": "http.response.body", "body": b"" if scope.get("method") == "HEAD" else body})
        return True

    async def _built(self, key: tuple, app: Any, scope: dict) -> Answer | None:
        if key in self._answers:
            return self._answers[key]
        lock = self._building.setdefault(key, asyncio.Lock())
        async with lock:
            if key not in self._answers:
                answer = await _ask_gradio(key, app, scope)
                if answer is None:
                    return None
                self._answers[key] = answer
        return self._answers[key]


def _placeholder_scope(key: tuple, scope: dict) -> dict:
    """The request Gradio builds a shared answer for: this one's route, from nobody in particular."""
    query = {"page": key[1]} if len(key) > 1 and key[1] is not None else {}
    if key[0] == "info" and key[2]:
        query["all_endpoints"] = "True"
    path = {"page": "/", "config": "/config", "info": "/gradio_api/info"}[key[0]]
    return {**{k: v for k, v in scope.items() if k not in ("headers", "query_string", "client", "session")},
            "method": "GET", "path": path, "raw_path": path.encode(), "scheme": "http", "server": (PLACEHOLDER_HOST, 80),
            "query_string": "&".join(f"{k}={v}" for k, v in query.items()).encode(),
            "headers": [(b"host", PLACEHOLDER_HOST.encode())], "client": ("127.0.0.1", 0)}


async def _ask_gradio(key: tuple, app: Any, scope: dict) -> Answer | None:
    """Gradio's own answer to the placeholder request (None unless it answered 200)."""
    asked = _placeholder_scope(key, scope)
    start: dict = {}
    parts: list[bytes] = []

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict) -> None:
        if message["type"] == "http.response.start":
            start.update(message)
        elif message["type"] == "http.response.body":
            parts.append(message.get("body", b""))

    await app(asked, receive, send)
    if start.get("status") != 200:
        return None
    headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
    return Answer(200, headers, b"".join(parts), _root(key, asked), key[0] == "page")


def _root(key: tuple, scope: dict) -> str:
    """The root Gradio writes into this answer for this request (route_utils.get_root_url, called
    with the arguments its handler passes)."""
    app = scope["app"]
    blocks = app.get_blocks()
    request = Request(scope)
    if key[0] == "info":
        return route_utils.get_root_url(request=request, route_path="/gradio_api/info", root_path=app.root_path)
    route_path = "/config" if key[0] == "config" else "/"
    root_path = app.root_path or scope.get("root_path") or blocks.custom_mount_path
    return route_utils.get_root_url(request=request, route_path=route_path, root_path=root_path)


def _accepts_gzip(scope: dict) -> bool:
    """Whether the client takes gzip (a browser: the 2 MB page is then 0.3 MB on the wire)."""
    for name, value in scope.get("headers") or []:
        if name.lower() == b"accept-encoding":
            codings = {part.split(b";")[0].strip().lower(): part for part in value.split(b",")}
            return b"gzip" in codings and not codings[b"gzip"].replace(b" ", b"").endswith(b"q=0")
    return False


def _escaped(root: str, html: bool) -> bytes:
    """`root` as Gradio writes it inside a JSON string: orjson's escaping, and in the page's HTML its
    template's too (`toorjson`)."""
    text = orjson.dumps(root)[1:-1]
    if html:
        for char, escape in ((b"<", b"\\u003c"), (b">", b"\\u003e"), (b"&", b"\\u0026"), (b"'", b"\\u0027")):
            text = text.replace(char, escape)
    return text
