"""Run untrusted template code in a child process that can be killed.

transformers' sandboxed Jinja stops a template from escaping, but not from running for hours
(`{% for i in range(100000) %}{% for j in range(100000) %}…`) or from filling memory. The app
renders through here: long-lived worker processes (so transformers is imported once) with a memory
cap; a call that overruns its time is answered with a diagnostic and the worker is killed and
replaced.

The pool is fair to concurrent visitors: a call takes an idle worker or starts a new one (up to a
maximum), never queues behind a busy worker while another could serve it, and its time limit
counts from the moment it was made, waiting included, so a call is answered within its limit
whatever else is running. Each caller (`owner`, e.g. a browser session) has at most
`per_owner` calls running at once: one visitor's slow templates wait behind each other, not in
front of everyone else's.
"""

from __future__ import annotations

import atexit
import multiprocessing
import os
import shutil
import sys
import tempfile
import threading
import time
import types
from collections.abc import Callable, Hashable
from multiprocessing.connection import Connection
from typing import Any

from . import limits, process_role
from .diagnostics import Diagnostic
from .errors import log_failure, quoted


class SandboxTimeout(Exception):
    """The call did not finish in time; the worker running it was killed."""


class SandboxBusy(SandboxTimeout):
    """No worker became free within the call's time limit (the server is busy)."""


class SandboxCrashed(Exception):
    """The worker died (e.g. it hit the memory cap)."""


# Workers run at a lower scheduling priority than the server: when templates keep the CPU busy,
# the server still answers pages and short requests first.
WORKER_NICENESS = 10


def _serve(connection: Connection, memory_limit: int | None, alive: Connection | None = None,
           temp: str | None = None) -> None:
    """The worker's loop: receive (function, kwargs), send back ("ok", result) or ("error", exception).
    Files the work writes go to `temp`, the worker's own folder, which the server removes with the
    worker (a worker killed half-way through writing a tokenizer's files leaves nothing behind)."""
    process_role.IN_WORKER = True
    if temp is not None:
        os.environ["TMPDIR"] = tempfile.tempdir = temp
    if alive is not None:
        threading.Thread(target=_exit_with_server, args=(alive, temp), daemon=True).start()
    try:
        os.nice(WORKER_NICENESS)
    except (AttributeError, OSError):  # not on every platform
        pass
    if memory_limit:
        try:
            import resource

            resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))
        except (ImportError, ValueError, OSError):  # not on every platform; the time bound still holds
            pass
    while True:
        try:
            function, kwargs = connection.recv()
        except EOFError:  # the server closed its end without stopping the worker
            _remove(temp)
            return
        try:
            connection.send(("ok", function(**kwargs)))
        except MemoryError:
            connection.send(("error", SandboxCrashed("the template used more memory than allowed")))
        except RecursionError:
            connection.send(("error", SandboxCrashed("the input is nested too deeply")))
        except Exception as e:  # noqa: BLE001 - returned to the caller as it is
            try:
                connection.send(("error", e))
            except Exception:  # noqa: BLE001 - an exception that cannot be pickled
                connection.send(("error", RuntimeError(f"{type(e).__name__}: {e}")))


def _exit_with_server(alive: Connection, temp: str | None = None) -> None:
    """A worker busy with a runaway template never reads its pipe again; if the server goes away
    (stopped, crashed), this ends the worker rather than leave it running with no one to kill it.
    The worker removes its own folder first: no server is left to remove it."""
    try:
        alive.recv()
    except (EOFError, OSError):
        pass
    _remove(temp)
    os._exit(1)


def _remove(temp: str | None) -> None:
    if temp is not None:
        shutil.rmtree(temp, ignore_errors=True)


# The folders of the workers this process started and has not stopped. At exit, multiprocessing
# ends the (daemonic) workers with a signal they cannot clean up after, so the server removes them.
_FOLDERS: set[str] = set()


@atexit.register
def _remove_folders() -> None:
    for temp in list(_FOLDERS):
        _remove(temp)


class Worker:
    """One killable child process. `call` runs a module-level function in it with a time limit."""

    def __init__(self, memory_limit: int | None = limits.WORKER_MEMORY_BYTES):
        self._memory_limit = memory_limit
        self._lock = threading.Lock()  # one call at a time
        self._ends = threading.Lock()  # taking the process and its pipes to stop them (any thread)
        self._process: multiprocessing.Process | None = None
        self._connection: Connection | None = None
        self._alive: Connection | None = None  # held open while the worker should live
        self._temp: str | None = None  # the worker's own temporary folder
        self.used_at = time.monotonic()  # when its last call ended

    def _start(self) -> None:
        context = _context()
        parent, child = context.Pipe()
        watched, self._alive = context.Pipe(duplex=False)
        self._temp = tempfile.mkdtemp(prefix="playground-worker-")
        _FOLDERS.add(self._temp)
        self._process = context.Process(target=_serve, args=(child, self._memory_limit, watched, self._temp), daemon=True)
        with _without_main_module():
            self._process.start()
        child.close()
        watched.close()
        self._connection = parent

    def call(self, function: Callable[..., Any], kwargs: dict, timeout: float, limit: float | None = None) -> Any:
        """`function(**kwargs)` here, within `timeout` seconds; `limit` is the bound the caller was
        given (named in the message; `timeout` may be what is left of it after waiting for a worker)."""
        with self._lock:
            if self._process is None or not self._process.is_alive():
                self._start()
            connection = self._connection
            assert connection is not None
            try:
                connection.send((function, kwargs))
                # A fresh worker also waits here for the fork server (started once per process).
                if not connection.poll(max(timeout, 0)):
                    self.stop()
                    raise SandboxTimeout(f"took longer than {_seconds(timeout if limit is None else limit)}")
                status, value = connection.recv()
            except (EOFError, OSError):  # the worker died, or another thread stopped it
                self.stop()
                raise SandboxCrashed("the worker stopped unexpectedly (memory limit?)") from None
            finally:
                self.used_at = time.monotonic()
            if status == "error":
                raise value
            return value

    def start(self) -> None:
        """Start the worker now if it is not running (so the first call does not wait for it)."""
        with self._lock:
            if self._process is None or not self._process.is_alive():
                self._start()

    def stop(self) -> None:
        """Kill the worker and close its pipes. Safe from any thread, and twice: whoever takes the
        process and pipes first stops them (two threads closing one pipe could close a file
        descriptor the process has since reused)."""
        with self._ends:
            process, ends, temp = self._process, (self._connection, self._alive), self._temp
            self._process = self._connection = self._alive = self._temp = None
        if process is not None:
            process.kill()
            process.join(timeout=5)
        for end in ends:
            if end is not None:
                end.close()
        if temp is not None:
            _remove(temp)
            _FOLDERS.discard(temp)

    def memory(self) -> int:
        """The worker's resident memory in bytes (0 when it is not running)."""
        process = self._process
        if process is None or process.pid is None:
            return 0
        try:
            with open(f"/proc/{process.pid}/statm") as statm:
                return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            return 0


def _seconds(value: float) -> str:
    return f"{value:.3g} s"


def _context() -> Any:
    """forkserver (or spawn), not fork: the app runs threads, and forking a threaded process is
    unsafe. The fork server imports the renderer once, so a new worker (the first, or one replacing
    a killed worker) starts in milliseconds instead of importing transformers again."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["engine.render", "engine.checks", "engine.regex_bounds"])
    return context


_MAIN_LOCK = threading.Lock()


class _without_main_module:
    """Start a worker without it importing the caller's `__main__`. multiprocessing re-imports the
    main script in its children (and in the fork server), so a script that calls
    `render(timeout=…)` without an `if __name__ == "__main__":` guard would run again in each of
    them. Workers only run engine functions, so they never need the script: while a worker
    starts, `__main__` is a blank module (which multiprocessing skips)."""

    def __enter__(self) -> None:
        _MAIN_LOCK.acquire()
        self._main = sys.modules.get("__main__")
        blank = types.ModuleType("__main__")
        blank.__spec__ = None
        sys.modules["__main__"] = blank

    def __exit__(self, *exc: Any) -> None:
        if self._main is not None:
            sys.modules["__main__"] = self._main
        _MAIN_LOCK.release()


class Pool:
    """Workers for concurrent callers. `call` takes an idle worker, or starts one while there are
    fewer than `max_size`; else it waits, and the wait counts against its time limit.

    Fair per owner (a client, see `engine.clients`): an owner runs at most one short call (a render)
    and one long call (the checks, a draft) at a time, however many sessions it opens, and long calls
    never take the last `reserved` places, so a render always finds a worker however many clients
    run checks."""

    def __init__(self, size: int = 2, max_size: int | None = None, reserved: int = 2):
        self._size = max(1, size)
        self._max = max(self._size, max_size or self._size)
        self._long_max = max(1, self._max - reserved)
        self._idle: list[Worker] = [Worker() for _ in range(self._size)]
        self._count = self._size  # workers that exist (idle or busy)
        self._running: set[tuple[Hashable, bool]] = set()  # (owner, long) of the calls running
        self._busy = self._long = 0
        self._changed = threading.Condition()

    def warm(self, prepare: Callable[[], Any] | None = None, timeout: float = 60) -> None:
        """Start the idle workers (the app calls this at launch, in the background), and have each run
        `prepare()` once (a module-level function: what every worker should have done before the first
        visitor asks, such as compiling the app's own templates). A failed `prepare` is logged, never raised."""
        with self._changed:
            idle = list(self._idle)
        for worker in idle:
            worker.start()
        for worker in idle if prepare is not None else ():
            try:
                worker.call(prepare, {}, timeout)
            except Exception as e:  # noqa: BLE001 - warming is an optimisation: the workers work without it
                log_failure("Preparing a render worker failed", e)

    def stats(self) -> dict[str, int]:
        """Workers that exist, are idle, and calls running (for tests and the logs)."""
        with self._changed:
            return {"workers": self._count, "idle": len(self._idle), "running": self._busy, "long": self._long}

    def recycle(self, above: int, idle: float = float("inf"), idle_above: int = 0) -> int:
        """Stop idle workers holding more than `above` bytes (memory a hostile template grew, large
        tokenizers in their cache), or unused for `idle` seconds and holding more than `idle_above`
        (what they cache served visitors who have left since): they start afresh when next needed.
        Returns how many."""
        stopped = 0
        now = time.monotonic()
        with self._changed:
            for worker in self._idle:
                memory = worker.memory()
                if memory > above or (now - worker.used_at >= idle and memory > idle_above):
                    worker.stop()
                    stopped += 1
        return stopped

    def call(self, function: Callable[..., Any], kwargs: dict, timeout: float, owner: Hashable = None,
             long: bool = False) -> Any:
        """Run `function(**kwargs)` in a worker; the answer comes within `timeout` seconds of this
        call, or SandboxBusy (no worker became free) / SandboxTimeout (the worker was killed).
        `long`: work that may take its whole limit (the checks), which may not take the last places."""
        deadline = time.monotonic() + timeout
        worker = self._acquire(owner, long, deadline, timeout)
        try:
            return worker.call(function, kwargs, deadline - time.monotonic(), limit=timeout)
        finally:
            self._release(worker, owner, long)

    def _acquire(self, owner: Hashable, long: bool, deadline: float, timeout: float) -> Worker:
        with self._changed:
            while True:
                mine = owner is not None and (owner, long) in self._running
                if mine and long:  # a client's second long call would hold a server thread a minute: answer now
                    raise SandboxBusy("could not start: your previous long request (the checks, a draft) is still running")
                crowded = long and self._long >= self._long_max
                if not mine and not crowded and (self._idle or self._count < self._max):
                    if self._idle:
                        worker = self._idle.pop()
                    else:
                        worker, self._count = Worker(), self._count + 1
                    if owner is not None:
                        self._running.add((owner, long))
                    self._busy += 1
                    self._long += long
                    return worker
                left = deadline - time.monotonic()
                if left <= 0:
                    why = ("your previous request is still running" if mine else
                           "every worker for long work is busy" if crowded else "every worker is busy")
                    raise SandboxBusy(f"could not start within {_seconds(timeout)}: {why}")
                self._changed.wait(left)

    def _release(self, worker: Worker, owner: Hashable, long: bool) -> None:
        with self._changed:
            self._busy -= 1
            self._long -= long
            if owner is not None:
                self._running.discard((owner, long))
            # Keep `size` workers; a worker started for a burst goes away when it is done.
            if len(self._idle) < self._size:
                self._idle.append(worker)
                worker = None  # type: ignore[assignment]
            else:
                self._count -= 1
            self._changed.notify_all()
        if worker is not None:
            worker.stop()


_pool: Pool | None = None
_pool_lock = threading.Lock()


def shared_pool() -> Pool:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = Pool(size=limits.RENDER_WORKERS, max_size=limits.MAX_RENDER_WORKERS)
        return _pool


def run_bounded(function: Callable[..., Any], kwargs: dict, timeout: float, owner: Hashable = None,
                long: bool = False) -> Any:
    """`function(**kwargs)` in the shared pool: the one way to run a visitor's work (compile, render,
    parse, build a tokenizer, decode large JSON). `owner` is who it counts against: by default the
    client whose request is being handled (`engine.process_role.serving`). Inside a worker already,
    it runs in place (the worker is itself killable and memory-capped)."""
    if process_role.IN_WORKER:
        return function(**kwargs)
    return shared_pool().call(function, kwargs, timeout, owner if owner is not None else process_role.serving_now(), long)


def bounded_or_why(function: Callable[..., Any], kwargs: dict, timeout: float, owner: Hashable = None, *,
                   doing: str, hint: str, it: str = "it", long: bool = False) -> tuple[Any, Diagnostic | None]:
    """`run_bounded`, with every way it can end early said in a person's words: `(result, None)`, or
    `(None, diagnostic)` when no worker became free, the work ran out of time or memory, or its inputs
    could not be sent. `doing` names the work ("Rendering", "The checks", "Drafting") and `it` what
    stands for it ("they" for the checks); `hint` says what to look for when it was stopped."""
    try:
        return run_bounded(function, kwargs, timeout, owner, long), None
    except SandboxBusy as e:
        message, advice = f"{doing} {e}.", "The server is busy; try again in a moment."
    except SandboxTimeout as e:
        message, advice = f"{doing} stopped: {it} {e}.", hint
    except SandboxCrashed as e:
        message, advice = f"{doing} stopped: {e}.", "Look for loops that build very large strings or lists."
    except Exception as e:  # noqa: BLE001 - e.g. inputs that cannot be sent to the worker
        log_failure(f"{doing} in the worker failed", e)
        message, advice = f"{doing} failed ({quoted(e)}).", None
    return None, Diagnostic("error", message, "chat_template", hint=advice)


def bounded_if_large(function: Callable[..., Any], kwargs: dict, size: int, *, doing: str,
                     timeout: float = limits.RENDER_SECONDS) -> tuple[Any, Diagnostic | None]:
    """`function(**kwargs)` (a decode of untrusted data, `size` bytes of it) here when it is small,
    in a worker past `limits.DECODE_IN_SERVER_BYTES`: what `bounded_or_why` returns either way."""
    if size <= limits.DECODE_IN_SERVER_BYTES:
        return function(**kwargs), None
    return bounded_or_why(function, kwargs, timeout, doing=doing, hint="The data may be far larger than it looks.")
