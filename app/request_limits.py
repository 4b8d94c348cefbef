"""Limits on every request, applied before Gradio reads it.

Gradio reads a request's whole body into memory before any handler can refuse it (and keeps the
last value of every input per session), sets up every new session (about 0.1 s of CPU), writes
every upload to disk, and answers many routes the playground never uses. So, in this order:

- a request for a route the playground does not use (`app.gradio_routes`: deep links, the REST API,
  Gradio's editor and dashboards…) is answered 404, unread;
- each client has `limits.CLIENT_REQUESTS` requests being answered at once (any request: the rest
  wait their turn, up to `limits.CLIENT_WAITING`, then 429) and `limits.CLIENT_STREAMS` streams open
  (an event's answers, a heartbeat: they wait rather than work);
- the page, its layout and the API's description are served from memory (`app.shared_answers`);
- the body of a request is bounded (`limits.MAX_REQUEST_BYTES`: a 40 MB "chat template" never reaches
  a handler); a client may start `limits.CLIENT_NEW_SESSIONS` sessions a minute (45 sessions a
  second of one client used to take the server's whole CPU), the session read from the body as JSON,
  as Gradio reads it (an escaped key is the same key);
- an upload is counted per file and per byte against what one client (and everyone) may upload per
  `limits.TEMP_FILE_SECONDS` (`app.upload_limits`): uploads stay on disk until they are deleted, at
  the latest that long after they arrive.

Clients are read by `app.clients`, as the handlers read them."""

from __future__ import annotations

import asyncio
import json
import os
import threading
import time
from collections import OrderedDict, deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from starlette._utils import get_route_path

from engine import limits
from engine.clients import Busy, Quota

from .clients import client_of_scope
from .gradio_routes import allowed, is_stream
from .shared_answers import SharedAnswers
from .upload_limits import Refused, UploadCharge, answered_by, counted

UPLOADS = Quota(limits.CLIENT_UPLOAD_BYTES, limits.UPLOAD_BYTES, limits.TEMP_FILE_SECONDS)
# New sessions per client per minute (Gradio sets each up, at ~0.1 s of CPU, before a handler runs).
NEW_SESSIONS = Quota(limits.CLIENT_NEW_SESSIONS, 1e12, 60)
_sessions: OrderedDict[str, float] = OrderedDict()  # session hashes seen -> when (the newest 100,000)
_sessions_lock = threading.Lock()
# An upload request may hold a few files (a tokenizer.json with its config, template files).
MAX_UPLOAD_REQUEST_BYTES = 3 * limits.MAX_TOKENIZER_BYTES


class Door:
    """At most `limit` requests of one client being answered at once; up to `waiting` more wait their
    turn (a page's scripts arrive by the dozen), first come first served; past that, Busy. All on the
    server's event loop, so no lock is needed."""

    def __init__(self, limit: int, waiting: int = 0):
        self.limit, self.waiting = limit, waiting
        self._inside: dict[str, int] = {}
        self._queues: dict[str, deque[asyncio.Future]] = {}

    @asynccontextmanager
    async def entered(self, client: str) -> AsyncIterator[None]:
        """Hold one of `client`'s places while the request is answered (waiting for one if need be)."""
        queue = self._queues.get(client)
        if self._inside.get(client, 0) < self.limit and not queue:
            self._inside[client] = self._inside.get(client, 0) + 1
        elif len(queue or ()) >= self.waiting:
            raise Busy(f"{self._inside.get(client, 0)} being answered, {len(queue or ())} waiting")
        else:
            turn = asyncio.get_running_loop().create_future()
            self._queues.setdefault(client, deque()).append(turn)
            try:
                await turn  # a request that ended hands its place over
            except BaseException:
                if turn.done() and not turn.cancelled():
                    self._leave(client)  # handed a place as it went away: hand it on
                elif turn in self._queues.get(client, ()):
                    self._queues[client].remove(turn)
                    if not self._queues[client]:
                        del self._queues[client]
                raise
        try:
            yield
        finally:
            self._leave(client)

    def _leave(self, client: str) -> None:
        queue = self._queues.get(client)
        while queue:
            turn = queue.popleft()
            if not queue:
                del self._queues[client]
            if not turn.done():  # the first still waiting takes this place
                turn.set_result(None)
                return
        self._inside[client] -= 1
        if not self._inside[client]:
            del self._inside[client]

    def inside(self, client: str) -> int:
        return self._inside.get(client, 0)


DOOR = Door(limits.CLIENT_REQUESTS, limits.CLIENT_WAITING)
STREAMS = Door(limits.CLIENT_STREAMS)
SHARED = SharedAnswers()


class RequestLimits:
    """ASGI middleware: refuse what the playground does not serve (404), a body over its limit (413),
    a client past its requests, sessions or uploads (429), before the body is read; answer what is
    the same for everyone from memory."""

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        path = get_route_path(scope)
        if not allowed(scope.get("method", ""), path):
            await _refuse(send, 404, "Not Found")
            return
        client = client_of_scope(scope)
        door, inside = (STREAMS if is_stream(path) else DOOR), False
        try:
            async with door.entered(client):
                inside = True
                await self._answer(scope, receive, send, path, client)
        except Busy as e:
            if inside:
                raise
            what = "streams open" if door is STREAMS else "requests at once"
            await _refuse(send, 429, f"Too many {what} from you ({e}); wait for them, or close other tabs.")

    async def _answer(self, scope: dict, receive: Any, send: Any, path: str, client: str) -> None:
        key = SHARED.key(scope, path)
        if key is not None and await SHARED.serve(key, self.app, scope, receive, send):
            return
        if scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        headers = scope.get("headers") or []
        upload = path.rstrip("/").endswith("/upload")
        limit = MAX_UPLOAD_REQUEST_BYTES if upload else limits.MAX_REQUEST_BYTES
        length = _length(headers)
        if length > limit:
            await _refuse(send, 413, f"The request is {length / 1e6:.1f} MB, over the {limit / 1e6:.0f} MB limit.")
            return
        if upload:
            content_type = next((v for k, v in headers if k.lower() == b"content-type"), b"").decode("latin-1")
            charge = UploadCharge(content_type, client, UPLOADS, length, limit)
            try:
                charge.start()
            except Refused as refused:
                await _refuse(send, refused.status, str(refused))
                return
            refusals: list[Refused] = []
            await self.app(scope, counted(receive, charge, refusals), answered_by(send, refusals, _refuse))
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


def _length(headers: list[tuple[bytes, bytes]]) -> int:
    """The request's Content-Length (0 when absent or not a number; the body is bounded as it comes)."""
    values = [v for k, v in headers if k.lower() == b"content-length"]
    try:
        return max(int(v) for v in values) if values else 0
    except ValueError:
        return 0


def session_named(body: bytes) -> str | None:
    """The session an event's body names, read as Gradio reads it: the body as JSON (escapes decoded,
    the last of repeated keys), its top-level `session_hash`. None when there is none (or the body is
    not JSON, which Gradio refuses too)."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return None
    page = data.get("session_hash") if isinstance(data, dict) else None
    return page if isinstance(page, str) else None


def _new_session(client: str, body: bytes) -> str | None:
    """Why the session this body names may not start (None when it is known, or may start)."""
    page = session_named(body)
    if page is None:
        return None
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
        return _sessions.get(page, float("-inf"))


def delete_abandoned_uploads(folder: str | None = None) -> int:
    """Delete what Gradio leaves in its upload folder: uploads cut off midway (Gradio writes an
    upload to a file at the top of the folder and moves it into a folder of its own only once it is
    whole, so a cut-off one is never handed to a handler nor put on Gradio's deletion timer), the
    files in those folders (Gradio's timer deletes them at the same age, but it is one background
    task that a race ends for good: it walks its set of files while an upload adds to it), and the
    folders left empty (Gradio deletes a file, never its folder, and a folder is a block of disk of
    its own). Those untouched for `limits.TEMP_FILE_SECONDS` go (the page keeps no file of its own
    there: no component has `keep_in_cache`). Returns how many entries were deleted."""
    from gradio.utils import get_upload_folder

    deleted, oldest = 0, time.time() - limits.TEMP_FILE_SECONDS
    try:
        entries = list(os.scandir(folder or get_upload_folder()))
    except OSError:  # not created yet: nothing was uploaded
        return 0
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                removed = _delete_old_files(entry.path, oldest)
                deleted += removed
                # An upload's folder, its files gone (not one just made, that Gradio is moving a file into).
                if removed or entry.stat(follow_symlinks=False).st_mtime < oldest:
                    os.rmdir(entry.path)  # only when empty
                    deleted += 1
                continue
            deleted += _delete_if_old(entry, oldest)
        except OSError:  # not empty, or gone meanwhile
            continue
    return deleted


def _delete_old_files(folder: str, oldest: float) -> int:
    """The files directly in `folder` (an upload's) untouched since `oldest`, deleted; how many."""
    with os.scandir(folder) as entries:
        files = list(entries)
    deleted = 0
    for entry in files:
        try:
            deleted += _delete_if_old(entry, oldest)
        except OSError:  # gone meanwhile
            continue
    return deleted


def _delete_if_old(entry: os.DirEntry, oldest: float) -> int:
    """1 when `entry` is a file untouched since `oldest` and is now deleted, else 0."""
    if not entry.is_file(follow_symlinks=False) or entry.stat(follow_symlinks=False).st_mtime >= oldest:
        return 0
    Path(entry.path).unlink(missing_ok=True)
    return 1


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


async def _refuse(send: Any, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
