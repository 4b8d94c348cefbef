"""Cost of tracing vs the bare `ResponseParser.feed` loop, measured side by side in one run.

Target (issue 2): tracing costs at most 1.5x the bare loop for 100 KB in 1-character chunks and
400 KB in 4- and 16-character chunks. Run: `python -m benchmarks.bench_trace`."""

from __future__ import annotations

import time

from transformers.utils.chat_parsing import ResponseParser

from engine.trace import Trace
from tests.trace_cases import CHATML_PROMPT, SMOL, WEATHER_TOOLS, realistic_output


def bare(chunks: list[str]) -> None:
    parser = ResponseParser(SMOL, prefix=CHATML_PROMPT, tools=WEATHER_TOOLS)
    for chunk in chunks:
        parser.feed(chunk)
    parser.finalize()


def traced(chunks: list[str]) -> None:
    trace = Trace(SMOL, prompt=CHATML_PROMPT, tools=WEATHER_TOOLS)
    for chunk in chunks:
        trace.feed(chunk)
    trace.finalize()
    assert not trace.diagnostics


def best_of(fn, chunks: list[str], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn(chunks)
        times.append(time.perf_counter() - start)
    return min(times)


def main(repeats: int = 3) -> list[tuple[str, float, float, float]]:
    rows = []
    for size, chunk in ((100_000, 1), (400_000, 4), (400_000, 16)):
        text = realistic_output(size)
        chunks = [text[i : i + chunk] for i in range(0, len(text), chunk)]
        # Interleave the two so machine noise hits both alike.
        bare_t = traced_t = float("inf")
        for _ in range(repeats):
            bare_t = min(bare_t, best_of(bare, chunks, 1))
            traced_t = min(traced_t, best_of(traced, chunks, 1))
        rows.append((f"{size // 1000} KB in {chunk}-char chunks", bare_t, traced_t, traced_t / bare_t))
    print(f"{'input':<28}{'bare feed':>12}{'trace':>12}{'ratio':>8}")
    for label, b, t, r in rows:
        print(f"{label:<28}{b:>11.3f}s{t:>11.3f}s{r:>7.2f}x")
    return rows


if __name__ == "__main__":
    main()
