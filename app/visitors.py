"""Who each request is for, and what their sessions may hold.

Every handler runs inside `attending` (app.wiring wraps them all): the request's client
(app.clients: the signed-in user, else the address, read as the request limits read it) is named; the client has a bounded number of
requests running at once (each holds a server thread); the wiring runs the work under
`server_guard.serving`, so the workers count it against the client and the guard can see it; and afterwards the session's
memory is counted, and the client's longest-idle sessions (or anyone's, when the server's budget is
reached) are released (engine.budget). `sweep` releases idle ones, gives the memory back to the
system and restarts workers that grew.

A released session is gone for good on the server, with Gradio's own copy of its values: its page
is told to reload, and the browser's saved copy (or the share link) brings the work back."""

from __future__ import annotations

import ctypes
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import gradio as gr

from engine import limits
from engine.budget import Held, to_release
from engine.clients import Busy, Gate
from engine.regex_bounds import RegexAllowance
from engine.sandbox import shared_pool

from .clients import client_of
from .request_limits import last_request
from .state import Session, live_sessions, release_unless_busy

LOG = logging.getLogger("playground")
GATE = Gate()
EXPIRED = ("This tab was idle, so the server let go of its work. Reload the page: your templates and cases come back "
           "from this browser's saved copy (or open your share link again).")
# Gradio page ids seen (-> the session that served them), so a page whose session was released is
# told to reload instead of silently starting over from the default preset. Bounded: the oldest go.
_pages: OrderedDict[str, str] = OrderedDict()
_PAGES_KEPT = 100_000
# Each client's share of regex time, shared by all its sessions (bounded like the pages).
_allowances: OrderedDict[str, RegexAllowance] = OrderedDict()
_lock = threading.Lock()
# Drops Gradio's own copy of a session's values (every input and output it last saw); set by app.py.
forget_page: Callable[[str], None] = lambda page: None


@contextmanager
def attending(request: Any, session: Session | None) -> Iterator[str]:
    """Handle one request: refuse it when its session was released or its client has too many
    running; count it against its client; count the session's memory when it ends."""
    client = client_of(request)
    if session is not None:
        _attach(session, client, getattr(request, "session_hash", None) or "")
    try:
        with GATE.entered(client):
            yield client
    except Busy as e:
        raise gr.Error(f"Too many requests at once from you ({e}); wait for them, or close other tabs.") from None
    finally:
        if session is not None:
            session.touch()  # idle counts from the end of its last request, not the start
            account(session)


def _attach(session: Session, client: str, page: str) -> None:
    with _lock:
        known = _pages.get(page) if page else None
        if session.released or (known is not None and known != session.id):
            raise gr.Error(EXPIRED)
        if page:
            _pages[page] = session.id
            _pages.move_to_end(page)
            while len(_pages) > _PAGES_KEPT:
                _pages.popitem(last=False)
        allowance = _allowances.get(client)
        if allowance is None:
            allowance = _allowances[client] = RegexAllowance()
            while len(_allowances) > _PAGES_KEPT:
                _allowances.popitem(last=False)
        _allowances.move_to_end(client)
    session.client, session.page, session.regex = client, page, allowance
    session.touch()


def note_shown(session: Session, values: dict[str, Any]) -> None:
    """Count the values Gradio keeps for the session (the last of each input and output)."""
    for name, value in values.items():
        if name != "session":
            session.shown[name] = _chars(value)


def _chars(value: Any) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return sum(_chars(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(_chars(v) for v in value)
    return 0


def account(session: Session) -> None:
    """Count what the session holds now; release sessions past the client's or the server's budget."""
    session.held = session.held_bytes()
    sessions = live_sessions()
    mine = session.client
    total = sum(s.held for s in sessions)
    if total <= limits.SESSIONS_BYTES and sum(s.held for s in sessions if s.client == mine) <= limits.CLIENT_BYTES:
        return
    _release(sessions, idle_seconds=float("inf"), current=session)


def sweep() -> int:
    """Release idle sessions (and any past a budget), give freed memory back to the system, and
    restart idle workers that grew (or that hold caches and have been unused as long as a session
    may be idle). Returns how many sessions were released."""
    for session in live_sessions():
        if session.client and not session.released:
            session.held = session.held_bytes()
    released = _release(live_sessions(), idle_seconds=limits.IDLE_SECONDS)
    if released:
        _trim()
    shared_pool().recycle(limits.WORKER_RECYCLE_BYTES, idle=limits.IDLE_SECONDS, idle_above=limits.WORKER_IDLE_KEEP_BYTES)
    return released


def _release(sessions: list[Session], idle_seconds: float, current: Session | None = None) -> int:
    now = time.monotonic()
    # Only sessions a request came for: the page's own template session (which Gradio copies for each
    # new visitor) and the first view's are never released.
    held = [Held(s.id, s.client, s.held, now - max(s.last_used, last_request(s.page)), bool(s.busy) or s is current)
            for s in sessions if s.client and not s.released]
    chosen = set(to_release(held, idle_seconds=idle_seconds))
    count = 0
    for session in sessions:
        if session.id in chosen and release_unless_busy(session):
            count += 1
            if session.page:
                forget_page(session.page)
    if count:
        LOG.info("Released %d session(s) (idle, or over a memory budget).", count)
    return count


def _trim() -> None:
    """Hand memory freed by released sessions back to the system (glibc keeps freed heap otherwise)."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


def forget_gradio_pages(state_holder: Any) -> None:
    """Let `sweep` drop Gradio's copy of a released session (its `SessionState`: the last value of
    every component, which this Gradio keeps until 2,000 newer sessions push it out)."""
    global forget_page

    def forget(page: str) -> None:
        with state_holder.lock:
            state_holder.session_data.pop(page, None)
            state_holder.time_last_used.pop(page, None)

    forget_page = forget
