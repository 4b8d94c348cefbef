"""Which of Gradio's own routes the served playground answers, each with why.

Gradio serves far more than the page needs: a deep-link route that writes a session's every value to
disk on each call, a REST API that starts a new session per call, a screen-recording converter, an
editor that rewrites the app, a monitoring dashboard… Each answers whoever asks, and none is counted
by the playground's budgets. So every route is listed here, allowed or refused, and the request
limits (app.request_limits) refuse, before Gradio reads anything, every request that does not match
an allowed one: a route a future Gradio adds is refused until someone decides about it here
(tests/test_gradio_routes.py fails on a route this list does not name). Paths are Gradio's own
templates, matched the way its router matches them (`starlette.routing.compile_path`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from starlette.routing import compile_path


@dataclass(frozen=True)
class Route:
    methods: frozenset[str]
    path: str  # Gradio's template, e.g. "/gradio_api/file={path_or_url:path}"
    allowed: bool
    why: str
    pattern: re.Pattern = field(compare=False, repr=False, default=None)  # type: ignore[assignment]

    def matches(self, method: str, path: str) -> bool:
        return method in self.methods and self.pattern.match(path) is not None


def _route(methods: str, paths: str, allowed: bool, why: str) -> list[Route]:
    """Routes for each of `paths` (space-separated templates) answering `methods` ("GET HEAD")."""
    return [Route(frozenset(methods.split()), path, allowed, why, compile_path(path)[0]) for path in paths.split()]


ALLOW, REFUSE = True, False
API = "/gradio_api"
ROUTES: list[Route] = [
    # ----- what the page and its API clients (the browser's, gradio_client) use -----------------
    *_route("GET HEAD", "/", ALLOW, "the page (served from memory: app.shared_answers)"),
    *_route("GET", "/assets/{path:path}", ALLOW, "the page's scripts and styles (Gradio's own built files)"),
    *_route("GET", "/static/{path:path}", ALLOW, "the page's images and fonts (Gradio's own files)"),
    *_route("GET", "/theme.css /favicon.ico /robots.txt", ALLOW, "the page's theme, its icon, what crawlers may read: fixed texts"),
    *_route("GET", "/config /config/", ALLOW, "the page's layout, for API clients (served from memory)"),
    *_route("GET", f"{API}/info {API}/info/", ALLOW, "the API's description, for API clients (served from memory)"),
    *_route("POST", f"{API}/queue/join", ALLOW, "an event (an edit, a run, the checks): bounded by the request limits"),
    *_route("GET", f"{API}/queue/data", ALLOW, "the stream of an event's answers (a stream: counted as one)"),
    *_route("POST", f"{API}/run/{{api_name}} {API}/run/{{api_name}}/", ALLOW,
            "an event the page sends without the queue (a preset, Stop): bounded as the queued ones"),
    *_route("GET", f"{API}/heartbeat/{{session_hash}}", ALLOW, "keeps an open page's session (a stream: counted as one)"),
    *_route("POST", f"{API}/upload", ALLOW, "files the page uploads: counted per file and per byte against the disk budgets"),
    *_route("GET", f"{API}/upload_progress", ALLOW, "an upload's progress bar (a stream: counted as one)"),
    *_route("GET HEAD", f"{API}/file={{path_or_url:path}}", ALLOW,
            "a file shown on the page (an upload's link); Gradio serves only its own folders, nothing is written"),
    *_route("GET", f"{API}/startup-events", ALLOW, "Gradio starts its queue with it at launch (once; then a no-op)"),
    *_route("GET", "/logout /login/huggingface /login/callback", ALLOW,
            "“Sign in with Hugging Face” on a Space (OAuth; the sign-in a visitor is counted by)"),
    # ----- what nothing of the playground uses ---------------------------------------------------
    *_route("POST", f"{API}/cancel {API}/reset {API}/reset/", REFUSE,
            "Gradio's cancel: the page never sends it (its Stop is an event of its own), and an event it cancels "
            "just as it starts keeps one of the queue's places for good: 40 such and no event ran for anyone. An "
            "API client's events end when it goes away"),
    *_route("GET", f"{API}/deep_link", REFUSE, "writes the session's every value to disk on each call (issue 36); no deep links here"),
    *_route("POST", f"{API}/call/{{api_name}} {API}/call/{{api_name}}/ {API}/call/v2/{{api_name}} {API}/call/v2/{{api_name}}/",
            REFUSE, "the REST API: each call starts a new session, past the new-sessions limit; API clients use the queue"),
    *_route("GET", f"{API}/call/{{api_name}}/{{event_id}} {API}/call/v2/{{api_name}}/{{event_id}}", REFUSE, "the REST API's answers"),
    *_route("POST", f"{API}/api/{{api_name}} {API}/api/{{api_name}}/", REFUSE, "an old name of /run"),
    *_route("GET HEAD", f"/openapi.json {API}/openapi.json", REFUSE, "an OpenAPI schema, built from the API's description per call"),
    *_route("POST", f"{API}/process_recording", REFUSE, "converts an uploaded screen recording with ffmpeg: disk and CPU per call"),
    *_route("POST", f"{API}/vibe-edit {API}/vibe-edit/ {API}/undo-vibe-edit {API}/undo-vibe-edit/ {API}/vibe-code "
            f"{API}/vibe-code/ {API}/vibe-starter-queries {API}/vibe-starter-queries/", REFUSE,
            "Gradio's app editor (writes the app's source; off, but answered)"),
    *_route("GET", f"{API}/vibe-code {API}/vibe-code/", REFUSE, "Gradio's app editor"),
    *_route("GET", f"/monitoring /monitoring/summary /monitoring/{{key}}", REFUSE, "Gradio's monitoring dashboard"),
    *_route("GET", f"{API}/dev/reload", REFUSE, "reloading while developing with `gradio app.py`"),
    *_route("POST", "/login /login/", REFUSE, "a password sign-in; the playground has none"),
    *_route("GET", f"{API}/user {API}/user/ {API}/login_check {API}/login_check/ {API}/token {API}/token/ {API}/app_id "
            f"{API}/app_id/", REFUSE, "the password sign-in's state, and an id for run history: unused"),
    *_route("GET", f"{API}/runs {API}/runs/ {API}/run-history/buckets {API}/run-history/records "
            f"{API}/run-history/records/{{endpoint}}/{{record_id}}/assets/{{asset_id}}", REFUSE, "run history (off)"),
    *_route("POST", f"{API}/run-history/connect", REFUSE, "run history (off)"),
    *_route("GET", f"{API}/queue/status", REFUSE, "the queue's length: unused"),
    *_route("POST", f"{API}/component_server {API}/component_server/", REFUSE, "components' server functions: none on this page"),
    *_route("GET", f"{API}/custom_component/{{id}}/{{environment}}/{{type}}/{{file_name}}", REFUSE, "custom components: none"),
    *_route("GET HEAD", f"{API}/proxy={{url_path:path}}", REFUSE, "a proxy to other Spaces (for gr.load): none"),
    *_route("POST", f"{API}/stream/{{event_id}} {API}/stream/{{event_id}}/close", REFUSE, "media streaming: none"),
    *_route("GET", f"{API}/stream/{{session_hash}}/{{run}}/{{component_id}}/playlist.m3u8 "
            f"{API}/stream/{{session_hash}}/{{run}}/{{component_id}}/{{segment_id}}.{{ext}} "
            f"{API}/stream/{{session_hash}}/{{run}}/{{component_id}}/playlist-file", REFUSE, "media streaming: none"),
    *_route("GET", f"{API}/file/{{path:path}}", REFUSE, "an old name of /file="),
    *_route("GET", "/svelte/{path:path}", REFUSE, "Svelte's runtime for custom components: none"),
    *_route("GET", f"/manifest.json /pwa_icon /pwa_icon/{{size}} {API}/theme.css", REFUSE,
            "an installable-app manifest and its icons (off), a second copy of /theme.css: unused"),
    *_route("GET", f"{API}/profiling/traces {API}/profiling/summary", REFUSE, "Gradio's profiler (off)"),
    *_route("POST", f"{API}/profiling/clear", REFUSE, "Gradio's profiler (off)"),
]
# Long-lived answers that wait rather than work (they hold a connection, not the server): counted
# apart from the requests being answered (app.request_limits).
STREAMS = (f"{API}/queue/data", f"{API}/heartbeat/", f"{API}/upload_progress")


def allowed(method: str, path: str) -> bool:
    """Whether a request for `path` (as the router sees it: without the root path) is answered."""
    for route in ROUTES:
        if route.matches(method, path):
            return route.allowed
    return False


def is_stream(path: str) -> bool:
    return path.startswith(STREAMS)


def served_routes(app: Any) -> list[tuple[str, str]]:
    """Every (method, path template) the Starlette/FastAPI `app` answers, routers included in it
    walked (FastAPI keeps an included router whole), mounted apps named by their path."""
    found: list[tuple[str, str]] = []

    def walk(routes: list, prefix: str) -> None:
        for route in routes:
            inner = getattr(route, "original_router", None)
            if inner is not None:  # fastapi's included router
                walk(inner.routes, prefix + route.include_context.prefix)
            elif getattr(route, "methods", None):
                found.extend((method, prefix + route.path) for method in sorted(route.methods))
            else:  # a mount or a websocket: named by its path, answered by nothing listed here
                found.append(("*", prefix + getattr(route, "path", repr(route))))

    walk(list(app.router.routes), "")
    return found
