"""Limits on what a request may carry, applied before Gradio reads it.

Gradio reads a request's whole body into memory before any handler can refuse it (and keeps the
last value of every input per session), and writes every upload to disk. So the body of a request
is bounded here (`limits.MAX_REQUEST_BYTES`: a 40 MB "chat template" never reaches a handler), an
upload by Gradio's own per-file cap and by what one client (and everyone) may upload per
`limits.TEMP_FILE_SECONDS` (engine.clients.Quota): uploads stay on disk until they are deleted, at
the latest that long after they arrive. Client addresses are read as engine.clients decides."""

from __future__ import annotations

import json
from typing import Any

from engine import limits
from engine.clients import Quota, client_key

UPLOADS = Quota(limits.CLIENT_UPLOAD_BYTES, limits.UPLOAD_BYTES, limits.TEMP_FILE_SECONDS)
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
        if upload:
            peer = (scope.get("client") or ("", 0))[0]
            forwarded = headers.get(b"x-forwarded-for", b"").decode("latin-1") or None
            why = UPLOADS.take(client_key(None, peer, forwarded), length)
            if why is not None:
                await _refuse(send, 429, f"Upload refused: {why}. Try again later.")
                return
        await self.app(scope, _bounded(receive, limit), send)


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
