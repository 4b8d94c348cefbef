"""Long pasted outputs through the app's run callback (issue 11, item 6): time per size, the bare
`ResponseParser.feed` loop on the same chunks (transformers' share), what happens over the cap, and
how long Stop takes to end a run with everything already queued.

Run: `python -m benchmarks.bench_long_outputs` (add `--sizes 0.4,0.8,1.6` to choose MB)."""

from __future__ import annotations

import argparse
import time

from transformers.utils.chat_parsing import ResponseParser

from app.run_stream import stream_run
from engine import limits
from engine.runners.recorded import split_tokens
from engine.workspace import PASTED, RunSettings
from tests.test_app_support import session
from tests.trace_cases import CHATML_PROMPT, SMOL


def pasted(megabytes: float) -> str:
    """A reply of about `megabytes` MB: reasoning, then an answer, in word-sized tokens."""
    words = int(megabytes * 1_000_000 / 6)
    half = words // 2
    return "<think>\n" + "step " * half + "\n</think>\n" + "word " * (words - half) + "<|im_end|>"


def run_seconds(text: str) -> tuple[float, str]:
    started = time.perf_counter()
    final = None
    for final in stream_run(session(), RunSettings(recording=PASTED, pasted=text, tokens_per_second=0)):
        pass
    state = final.stats.split("status</span><b>")[1].split("<")[0] if final and final.stats else "?"
    return time.perf_counter() - started, state


def bare_parser_seconds(text: str) -> float:
    chunks = split_tokens(text)
    started = time.perf_counter()
    parser = ResponseParser(SMOL, prefix=CHATML_PROMPT)
    for chunk in chunks:
        parser.feed(chunk)
    parser.finalize()
    return time.perf_counter() - started


def stop_seconds(text: str, after_chunks: int = 2000) -> tuple[float, int]:
    """Seconds from Stop to the run's last update, with the rest of `text` already queued."""
    sess = session()
    updates = stream_run(sess, RunSettings(recording=PASTED, pasted=text, tokens_per_second=0), interval=0)
    pressed = None
    for update in updates:
        if pressed is None and update.stats and "chunks</span><b>" in update.stats:
            count = int(update.stats.split("chunks</span><b>")[1].split("<")[0].replace(",", ""))
            if count >= after_chunks:
                pressed = time.perf_counter()
                sess.stop.set()
    return time.perf_counter() - (pressed or time.perf_counter()), len(sess.last_run or [])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="0.1,0.2,0.4,0.8,1.6,10")
    args = parser.parse_args()
    print(f"output cap: {limits.MAX_OUTPUT_CHARS:,} characters")
    print(f"{'size':>8} {'run (app)':>12} {'state':>8} {'bare parser':>12}")
    for size in (float(s) for s in args.sizes.split(",")):
        text = pasted(size)
        seconds, state = run_seconds(text)
        bare = bare_parser_seconds(text) if len(text) <= limits.MAX_OUTPUT_CHARS else float("nan")
        print(f"{size:>6g}MB {seconds:>11.2f}s {state:>8} {bare:>11.2f}s", flush=True)
    latency, parsed = stop_seconds(pasted(0.45))
    print(f"Stop with ~{0.45:g} MB queued: the run ended {latency * 1000:.0f} ms after Stop ({parsed:,} chunks parsed)")


if __name__ == "__main__":
    main()
