"""Limits on what a request may carry, applied before Gradio reads it.

Gradio reads a request's whole body into memory before any handler can refuse it (and keeps the
last value of every input per session), sets up every new session (about 0.1 s of CPU), and writes
every upload to disk. So the body of a request is bounded here (`limits.MAX_REQUEST_BYTES`: a 40 MB
"chat template" never reaches a handler); a client may start `limits.CLIENT_NEW_SESSIONS` sessions
a minute (45 sessions a second of one client used to take the server's whole CPU); an upload is
bounded by Gradio's own per-file cap and by what one client (and everyone) may upload per
`limits.TEMP_FILE_SECONDS` (engine.clients.Quota): uploads stay on disk until they are deleted, at
the latest that long after they arrive. Client addresses are read as engine.clients decides."""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

from engine import limits
from engine.clients import Quota, client_key

UPLOADS = Quota(limits.CLIENT_UPLOAD_BYTES, limits.UPLOAD_BYTES, limits.TEMP_FILE_SECONDS)
# New sessions per client per minute (Gradio sets each up, at ~0.1 s of CPU, before a handler runs).
NEW_SESSIONS = Quota(limits.CLIENT_NEW_SESSIONS, 1e12, 60)
_SESSION_HASH = re.compile(rb'"session_hash"\s*:\s*"([^"]{1,100})"')
_sessions: OrderedDict[bytes, float] = OrderedDict()  # session hashes seen -> when (the newest 100,000)
_sessions_lock = threading.Lock()
# An upload request may hold a few files (a tokenizer.json with its config, template files).
MAX_UPLOAD_REQUEST_BYTES = 3 * limits.MAX_TOKENIZER_BYTES


class RequestLimits:
    """ASGI middleware: refuse a POST whose body is over its limit (413), or an upload past the
    client's quota (429), before the body is read."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope.get("type") != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        headers = {k.lower(): v for k, v in scope.get("headers") or []}
        upload = scope.get("path", "").rstrip("/").endswith("/upload")
        limit = MAX_UPLOAD_REQUEST_BYTES if upload else limits.MAX_REQUEST_BYTES
        try:
            length = int(headers.get(b"content-length", b"0") or 0)
        except ValueError:
            length = 0
        if length > limit:
            await _refuse(send, 413, f"The request is {length / 1e6:.1f} MB, over the {limit / 1e6:.0f} MB limit.")
            return
        peer = (scope.get("client") or ("", 0))[0]
        client = client_key(None, peer, headers.get(b"x-forwarded-for", b"").decode("latin-1") or None)
        if upload:
            why = UPLOADS.take(client, length)
            if why is not None:
                await _refuse(send, 429, f"Upload refused: {why}. Try again later.")
                return
            await self.app(scope, _bounded(receive, limit), send)
            return
        # An event: read its body (bounded) to see whether it starts a session this client may not start.
        body = await _body(receive, limit)
        if body is None:
            await _refuse(send, 413, f"The request is over the {limit / 1e6:.0f} MB limit.")
            return
        if (why := _new_session(client, body)) is not None:
            await _refuse(send, 429, f"Too many new sessions from you ({why}); wait a minute, or reuse an open tab.")
            return
        await self.app(scope, _replay(body, receive), send)


def _new_session(client: str, body: bytes) -> str | None:
    """Why the session this body names may not start (None when it is known, or may start)."""
    found = _SESSION_HASH.search(body, max(0, body.rfind(b'"session_hash"')))
    if found is None:
        return None
    page = found.group(1)
    with _sessions_lock:
        if page in _sessions:
            _sessions[page] = time.monotonic()
            _sessions.move_to_end(page)
            return None
    if NEW_SESSIONS.take(client, 1) is not None:
        return f"more than {limits.CLIENT_NEW_SESSIONS:.0f} a minute"
    with _sessions_lock:
        _sessions[page] = time.monotonic()
        while len(_sessions) > 100_000:
            _sessions.popitem(last=False)
    return None


def last_request(page: str) -> float:
    """When a request of Gradio page `page` last arrived (monotonic; -inf if none was seen, since
    the monotonic clock starts at boot and a machine up for less than the idle limit would
    otherwise count every session as just used): a request waiting in Gradio's queue keeps its
    session in use (app.visitors)."""
    with _sessions_lock:
        return _sessions.get(page.encode(), float("-inf"))


def delete_abandoned_uploads(folder: str | None = None) -> int:
    """Delete uploads cut off midway (the client went away, or `_bounded` ended the body): Gradio
    writes an upload to a file at the top of its upload folder and moves it into a folder of its own
    only once it is whole, so a cut-off one is never handed to a handler nor put on Gradio's
    deletion timer. Top-level files older than `limits.TEMP_FILE_SECONDS` are those. Returns how
    many were deleted."""
    from gradio.utils import get_upload_folder

    deleted, oldest = 0, time.time() - limits.TEMP_FILE_SECONDS
    try:
        entries = list(os.scandir(folder or get_upload_folder()))
    except OSError:  # not created yet: nothing was uploaded
        return 0
    for entry in entries:
        try:
            if entry.is_file(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_mtime < oldest:
                Path(entry.path).unlink(missing_ok=True)
                deleted += 1
        except OSError:
            continue
    return deleted


async def _body(receive: Any, limit: int) -> bytes | None:
    """The whole body of a request, or None past `limit` bytes."""
    parts, size = [], 0
    while True:
        message = await receive()
        if message.get("type") != "http.request":
            return b"".join(parts)
        parts.append(message.get("body", b""))
        size += len(parts[-1])
        if size > limit:
            return None
        if not message.get("more_body"):
            return b"".join(parts)


def _replay(body: bytes, receive: Any) -> Any:
    """A `receive` that hands the app the body already read, then the connection's own messages
    (a disconnect, when the client goes away)."""
    sent = False

    async def replayed() -> dict:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


def _bounded(receive: Any, limit: int) -> Any:
    """`receive`, ending the request when the body grows past `limit` (a body sent without a length)."""
    seen = 0

    async def bounded() -> dict:
        nonlocal seen
        message = await receive()
        if message.get("type") == "http.request":
            seen += len(message.get("body", b""))
            if seen > limit:
                return {"type": "http.disconnect"}
        return message

    return bounded


async def _refuse(send: Any, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
