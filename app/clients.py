"""Who a request is from, read one way for every request: the request limits (before Gradio reads
it) and the handlers (app.visitors) both ask `client_of_scope`, so a client cannot be one client to
one of them and another to the other.

- A visitor signed in with "Sign in with Hugging Face" (a Space's OAuth) is the client
  `user:<their Hub name>`, from whatever address: the name comes from the session cookie Gradio's
  OAuth sets (`oauth_info`, the `gr.OAuthProfile` handlers can ask for), signed with the Space's
  OAuth secret, so it cannot be written by the visitor. An expired sign-in counts for nothing.
- Anyone else is their address, read by `engine.clients.client_key`: the peer, or the entry the
  trusted proxies appended to `X-Forwarded-For` (every line of the header, in order).

uvicorn, which Gradio starts, would otherwise rewrite the peer from `X-Forwarded-For` itself when the
connection comes from 127.0.0.1 (a local proxy or tunnel): a forged header then became the address
before the app could read it. `trust_no_proxy_headers` turns that off before the server starts."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

from engine.clients import client_key

# uvicorn reads the addresses it trusts to set the client from `X-Forwarded-For` here when Gradio
# creates its server (default "127.0.0.1,::1"); empty trusts none.
UVICORN_TRUSTED = "FORWARDED_ALLOW_IPS"


def trust_no_proxy_headers() -> None:
    """Make uvicorn leave the peer address alone (call before `launch`): the app's hop counting
    (engine.clients) is the one reader of `X-Forwarded-For`."""
    os.environ[UVICORN_TRUSTED] = ""


def signed_in(session: Any) -> str | None:
    """The Hub name of the visitor signed in with OAuth in this (Starlette) session, if the sign-in
    has not expired."""
    if not isinstance(session, Mapping):
        return None
    info = session.get("oauth_info")
    if not isinstance(info, Mapping):
        return None
    expires = info.get("expires_at")
    if isinstance(expires, (int, float)) and expires < time.time():
        return None
    profile = info.get("userinfo")
    name = profile.get("preferred_username") if isinstance(profile, Mapping) else None
    return name if isinstance(name, str) and name else None


def forwarded_for(headers: list[tuple[bytes, bytes]]) -> list[str]:
    """Every `X-Forwarded-For` line of a request, in order."""
    return [value.decode("latin-1") for name, value in headers if name.lower() == b"x-forwarded-for"]


def client_of_scope(scope: Mapping[str, Any]) -> str:
    """The client an ASGI request counts against."""
    peer = (scope.get("client") or ("", 0))[0]
    return client_key(signed_in(scope.get("session")), peer, forwarded_for(scope.get("headers") or []))


def client_of(request: Any) -> str:
    """The client a Gradio request (`gr.Request`) counts against: read from the request it wraps, as
    `client_of_scope` reads it; "local" for a call made without one (a test, the page's own load)."""
    if request is None:
        return "local"
    scope = getattr(getattr(request, "request", None), "scope", None)
    if isinstance(scope, Mapping):
        return client_of_scope(scope)
    # A request Gradio rebuilt from its saved fields (no scope): its headers and peer as saved.
    headers = getattr(request, "headers", None) or {}
    lines = headers.getlist("x-forwarded-for") if hasattr(headers, "getlist") else [headers.get("x-forwarded-for") or ""]
    peer = getattr(getattr(request, "client", None), "host", None)
    return client_key(None, peer, [line for line in lines if line])
