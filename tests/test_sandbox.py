"""Issue 11, item 2: one visitor's slow template never waits in front of another's. The render pool
skips busy workers (starting another, up to its maximum), counts the wait against the caller's time
limit, and lets each visitor (owner) run one call at a time."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import types
from pathlib import Path

import pytest

from engine import render
from engine.sandbox import Pool, SandboxBusy, SandboxTimeout, Worker
from tests.sandbox_jobs import hold, nap

ROOT = Path(__file__).resolve().parent.parent

MESSAGES = [{"role": "user", "content": "hi"}]
LOOP = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"


@pytest.fixture
def pool():
    pool = Pool(size=1, max_size=2)
    pool.warm()
    yield pool
    for worker in pool._idle:
        worker.stop()


def in_background(function, *args, **kwargs) -> tuple[threading.Thread, dict]:
    out: dict = {}

    def run() -> None:
        try:
            out["value"] = function(*args, **kwargs)
        except Exception as e:  # noqa: BLE001
            out["error"] = e

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def test_a_busy_worker_is_skipped_and_another_visitor_is_served_at_once(pool: Pool) -> None:
    slow, slow_out = in_background(pool.call, nap, {"seconds": 1.5}, 30, owner="attacker")
    time.sleep(0.2)
    other = pool.call(nap, {"seconds": 0}, 30, owner="visitor")
    assert slow.is_alive(), "the visitor was answered while the slow call still ran"
    slow.join()
    assert other != slow_out["value"]  # a different worker process
    assert pool.stats()["workers"] == 1  # the extra worker went away after the burst


def test_the_wait_counts_against_the_time_limit(pool: Pool) -> None:
    """Both workers busy: a third call is answered (busy) within its own limit, not after the others."""
    first, _ = in_background(pool.call, nap, {"seconds": 1.5}, 30, owner="a")
    second, _ = in_background(pool.call, nap, {"seconds": 1.5}, 30, owner="b")
    time.sleep(0.2)
    with pytest.raises(SandboxBusy, match="every worker is busy"):
        pool.call(nap, {"seconds": 0}, 0.5, owner="c")
    assert first.is_alive() and second.is_alive()
    first.join()
    second.join()


def test_one_visitor_runs_one_call_at_a_time(pool: Pool) -> None:
    """A visitor's second call waits for their first (so six hostile edits hold one worker, not all)."""
    first, _ = in_background(pool.call, nap, {"seconds": 1.5}, 30, owner="attacker")
    time.sleep(0.2)
    with pytest.raises(SandboxBusy, match="previous request"):
        pool.call(nap, {"seconds": 0}, 0.5, owner="attacker")
    assert pool.call(nap, {"seconds": 0}, 30, owner="visitor")  # a worker was free for someone else
    first.join()


def test_a_timeout_kills_the_worker_and_the_next_call_gets_a_fresh_one(pool: Pool) -> None:
    with pytest.raises(SandboxTimeout, match="took longer than 0.5 s"):
        pool.call(nap, {"seconds": 10}, 0.5, owner="a")
    assert pool.call(nap, {"seconds": 0}, 30, owner="a")


def test_a_looping_template_is_stopped_within_its_limit_while_others_render() -> None:
    """The shared pool, as the app uses it: a looping render is answered at its limit, and an
    innocent render made meanwhile is not held up by it."""
    hostile, out = in_background(render, LOOP, MESSAGES, timeout=2, owner="attacker")
    time.sleep(0.2)
    innocent = render("{{ messages[0].content }}", MESSAGES, timeout=30, owner="visitor")
    assert innocent.prompt == "hi" and hostile.is_alive()
    hostile.join()
    [d] = out["value"].diagnostics
    assert "took longer than 2 s" in d.message


def test_workers_never_import_the_callers_script(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A script that calls `render(timeout=…)` without `if __name__ == "__main__":` must not run
    again in the worker (multiprocessing re-imports the main script in its children otherwise)."""
    marker = tmp_path / "ran-again"
    script = tmp_path / "script.py"
    script.write_text(f"open({str(marker)!r}, 'w').write('the script ran in a worker')\n")
    main = types.ModuleType("__main__")
    main.__file__ = str(script)
    main.__spec__ = None
    monkeypatch.setitem(sys.modules, "__main__", main)
    worker = Worker()
    try:
        assert worker.call(nap, {"seconds": 0}, 60)
    finally:
        worker.stop()
    assert sys.modules["__main__"] is main and not marker.exists()


def test_two_threads_stopping_one_worker_close_each_pipe_once() -> None:
    """A worker whose call failed is stopped by its caller while another thread (the pool's recycle,
    a test) may stop it too. Each pipe must be closed once: a second close of the same descriptor
    fails (EBADF, as CI saw) or closes a file the process has opened since."""
    worker = Worker()
    worker.start()
    closes: list[int] = []
    for end in (worker._connection, worker._alive):
        def slow_close(close=end._close, handle: int = end._handle) -> None:
            closes.append(handle)
            close()
            time.sleep(0.2)  # both threads are inside stop() while the handle is still set
        end._close = slow_close
    first, out = in_background(worker.stop)
    worker.stop()
    first.join(timeout=10)
    assert "error" not in out, out.get("error")
    assert len(closes) == 2 and len(set(closes)) == 2
    worker.stop()  # and a third time, with nothing left to stop


def test_a_busy_worker_ends_when_the_server_goes_away() -> None:
    """A worker stuck in a runaway template never reads its pipe; when the server process is gone
    (here: its end of the liveness pipe closed, as the kernel does when it dies), the worker ends
    rather than run on with no one to kill it."""
    worker = Worker()
    busy, _ = in_background(worker.call, nap, {"seconds": 30}, 60)
    deadline = time.monotonic() + 30
    while (worker._process is None or not worker._process.is_alive()) and time.monotonic() < deadline:
        time.sleep(0.05)
    process = worker._process
    time.sleep(0.3)
    worker._alive.close()
    process.join(timeout=10)
    assert not process.is_alive()
    worker.stop()
    busy.join(timeout=10)


@pytest.mark.slow  # a real server process and its workers
@pytest.mark.parametrize("end", ["exits", "is killed"])
def test_a_server_that_ends_without_stopping_its_workers_leaves_no_folder_behind(end: str) -> None:
    """A server that ends with its workers still running (as a pool's idle workers are) leaves none
    of their temporary folders: on a normal exit the server removes them (multiprocessing ends the
    workers by a signal they cannot clean up after); killed, each worker removes its own as it ends."""
    script = ("import os\nfrom engine.sandbox import Worker\nfrom tests.sandbox_jobs import nap\n"
              "worker = Worker()\nworker.call(nap, {'seconds': 0}, 60)\nprint(worker._temp, flush=True)\n")
    if end == "is killed":
        script += "os.kill(os.getpid(), 9)\n"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == (0 if end == "exits" else -9), done.stderr
    temp = Path(done.stdout.strip())
    assert temp.name.startswith("playground-worker-")
    deadline = time.monotonic() + 10  # a killed server's worker notices within moments
    while temp.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not temp.exists()


def test_the_sweep_restarts_idle_workers_that_grew_or_were_left_holding_caches() -> None:
    """`recycle` stops an idle worker above its bound at once, and one holding caches (more than a
    fresh worker) once it has been unused for the idle time; a worker used since, or a fresh one, stays."""
    pool = Pool(size=2, max_size=2)
    pool.warm()
    mb = 1_000_000
    try:
        holder = pool.call(hold, {"megabytes": 120}, 60)
        assert sorted(worker.memory() > 150 * mb for worker in pool._idle) == [False, True]
        assert pool.recycle(above=2_000 * mb, idle=3600, idle_above=100 * mb) == 0  # used just now
        time.sleep(0.3)
        assert pool.recycle(above=2_000 * mb, idle=0.2, idle_above=100 * mb) == 1  # the fresh one stays
        assert sorted(worker.memory() > 0 for worker in pool._idle) == [False, True]
        again = pool.call(hold, {"megabytes": 120}, 60)
        assert pool.recycle(above=100 * mb) == 1  # above the bound: restarted, however recently used
        assert pool.call(nap, {"seconds": 0}, 60) not in (holder, again)
    finally:
        for worker in pool._idle:
            worker.stop()


def test_warming_a_pool_prepares_each_idle_worker_once():
    """The app's workers compile its presets when it starts (`Pool.warm(prepare=...)`): each idle
    worker runs `prepare` once, in its own process, before any visitor's call; a failing `prepare`
    leaves the worker working."""
    from tests import sandbox_jobs

    warmed = Pool(size=2, max_size=2)
    try:
        warmed.warm(prepare=sandbox_jobs.prepare)
        workers = list(warmed._idle)
        seen = [worker.call(sandbox_jobs.prepared, {}, 30) for worker in workers]
        pids = [worker.call(sandbox_jobs.nap, {"seconds": 0}, 30) for worker in workers]
        assert seen == [[pid] for pid in pids] and len(set(pids)) == 2
        warmed.warm(prepare=sandbox_jobs.fail)  # logged, not raised
        assert warmed.call(sandbox_jobs.nap, {"seconds": 0}, 30) in pids
    finally:
        for worker in warmed._idle:
            worker.stop()
