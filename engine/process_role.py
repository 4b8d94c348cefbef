"""Whose work this process is doing: a bounded worker's (`IN_WORKER`), or the server's, handling one
client's request (`serving`, `serving_now`).

Both `engine.sandbox` (which runs a visitor's work in a worker, counted against the client being
served) and `engine.server_guard` (which refuses that work in the server while a client is served)
ask it, so it lives below both."""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# Set in a worker process (`engine.sandbox`'s worker loop): code that would otherwise hand work to a
# worker runs it in place. Read as `process_role.IN_WORKER`, never imported by name: the worker changes it.
IN_WORKER = False

# The client a request is handled for, while the app handles it (None outside a handler).
_serving: contextvars.ContextVar[Any] = contextvars.ContextVar("playground_serving", default=None)


@contextmanager
def serving(client: Any) -> Iterator[None]:
    """The app is handling a request of `client` (any non-None value) in this thread."""
    token = _serving.set(client if client is not None else "anonymous")
    try:
        yield
    finally:
        _serving.reset(token)


def serving_now() -> Any:
    """The client whose request this thread is handling, or None."""
    return _serving.get()
