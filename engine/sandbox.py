"""Run untrusted template code in a child process that can be killed.

transformers' sandboxed Jinja stops a template from escaping, but not from running for hours
(`{% for i in range(100000) %}{% for j in range(100000) %}…`) or from filling memory. The app
renders through here: a long-lived worker process (so transformers is imported once) with a memory
cap; a call that overruns its time is answered with a diagnostic and the worker is killed and
replaced. Calls are serialised per worker; the app keeps a few workers for concurrent users.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

# Address-space cap of a worker. Rendering needs tens of MB; 1.5 GB leaves room for big prompts.
MEMORY_LIMIT_BYTES = 1536 * 1024 * 1024


class SandboxTimeout(Exception):
    """The call did not finish in time; the worker running it was killed."""


class SandboxCrashed(Exception):
    """The worker died (e.g. it hit the memory cap)."""


def _serve(connection: Connection, memory_limit: int | None) -> None:
    """The worker's loop: receive (function, kwargs), send back ("ok", result) or ("error", exception)."""
    if memory_limit:
        try:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
        except (ImportError, ValueError, OSError):  # not on every platform; the time bound still holds
            pass
    while True:
        try:
            function, kwargs = connection.recv()
        except EOFError:
            return
        try:
            connection.send(("ok", function(**kwargs)))
        except MemoryError:
            connection.send(("error", SandboxCrashed("the template used more memory than allowed")))
        except Exception as e:  # noqa: BLE001 - returned to the caller as it is
            connection.send(("error", e))


class Worker:
    """One killable child process. `call` runs a module-level function in it with a time limit."""

    def __init__(self, memory_limit: int | None = MEMORY_LIMIT_BYTES):
        self._memory_limit = memory_limit
        self._lock = threading.Lock()
        self._process: multiprocessing.Process | None = None
        self._connection: Connection | None = None

    def _start(self) -> None:
        context = _context()
        parent, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(child, self._memory_limit), daemon=True)
        self._process.start()
        child.close()
        self._connection = parent

    def call(self, function: Callable[..., Any], kwargs: dict, timeout: float) -> Any:
        with self._lock:
            if self._process is None or not self._process.is_alive():
                self._start()
            assert self._connection is not None
            self._connection.send((function, kwargs))
            # The first call also waits for the worker to import transformers (about a second).
            if not self._connection.poll(timeout):
                self.stop()
                raise SandboxTimeout(f"took longer than {timeout:g} s")
            try:
                status, value = self._connection.recv()
            except EOFError:
                self.stop()
                raise SandboxCrashed("the worker stopped unexpectedly (memory limit?)") from None
            if status == "error":
                raise value
            return value

    def start(self) -> None:
        """Start the worker now if it is not running (so the first call does not wait for it)."""
        with self._lock:
            if self._process is None or not self._process.is_alive():
                self._start()

    def stop(self) -> None:
        if self._process is not None:
            self._process.kill()
            self._process.join(timeout=5)
        if self._connection is not None:
            self._connection.close()
        self._process = self._connection = None


def _context() -> Any:
    """forkserver (or spawn), not fork: the app runs threads, and forking a threaded process is
    unsafe. The fork server imports the renderer once, so a new worker (the first, or one replacing
    a killed worker) starts in milliseconds instead of importing transformers again."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["__main__", "engine.render", "engine.checks"])
    return context


class Pool:
    """A few workers, so concurrent users do not wait on each other's renders."""

    def __init__(self, size: int = 2):
        self._workers = [Worker() for _ in range(size)]
        self._next = 0
        self._lock = threading.Lock()

    def warm(self) -> None:
        """Start every worker (the app calls this at launch, in the background)."""
        for worker in self._workers:
            worker.start()

    def call(self, function: Callable[..., Any], kwargs: dict, timeout: float) -> Any:
        with self._lock:
            worker = self._workers[self._next % len(self._workers)]
            self._next += 1
        return worker.call(function, kwargs, timeout)


_pool: Pool | None = None
_pool_lock = threading.Lock()


def shared_pool() -> Pool:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = Pool(size=int(os.environ.get("PLAYGROUND_RENDER_WORKERS", "2")))
        return _pool
