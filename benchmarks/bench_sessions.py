"""Memory a session keeps after running a long output (issue 11, item 7), and what letting go of
idle sessions gives back. Sessions run a pasted output at the size cap through the app's run
callback; Python's allocations are measured with tracemalloc (the process's RSS is shown too, but
CPython rarely hands freed memory back to the OS, so it is not the measure).

Run: `python -m benchmarks.bench_sessions [--sessions 4] [--megabytes 0.45]`."""

from __future__ import annotations

import argparse
import gc
import resource
import tracemalloc

from app.run_stream import stream_run
from benchmarks.bench_long_outputs import pasted
from engine.workspace import PASTED, RunSettings
from tests.test_app_support import session


def rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize() / 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=4)
    parser.add_argument("--megabytes", type=float, default=0.45)
    args = parser.parse_args()
    text = pasted(args.megabytes)
    for _ in stream_run(session(), RunSettings(recording=PASTED, pasted="warm up<|im_end|>", tokens_per_second=0)):
        pass
    gc.collect()
    tracemalloc.start()
    base, rss0 = tracemalloc.get_traced_memory()[0], rss_mb()
    sessions = [session() for _ in range(args.sessions)]
    for sess in sessions:
        for _ in stream_run(sess, RunSettings(recording=PASTED, pasted=text, tokens_per_second=0)):
            pass
    gc.collect()
    held, rss1 = tracemalloc.get_traced_memory()[0], rss_mb()
    peak = tracemalloc.get_traced_memory()[1]
    for sess in sessions:  # what app.state.drop_idle does to a session idle for 30 minutes
        sess.release()
    gc.collect()
    released, rss2 = tracemalloc.get_traced_memory()[0], rss_mb()
    tracemalloc.stop()
    per = (held - base) / args.sessions / 1e6
    print(f"{args.sessions} sessions ran a {len(text):,}-character output each")
    print(f"kept after the runs: {(held - base) / 1e6:.1f} MB ({per:.1f} MB per session; peak during runs "
          f"{(peak - base) / 1e6:.1f} MB); RSS {rss0:.0f} -> {rss1:.0f} MB")
    print(f"after idle sessions let go: {(released - base) / 1e6:.1f} MB kept; RSS {rss2:.0f} MB")


if __name__ == "__main__":
    main()
