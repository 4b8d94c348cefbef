"""Cost of tracing vs the bare `ResponseParser.feed` loop, measured side by side in one run.

`trace_overhead` (target ≤ 1.3): the engine's `Trace` over the bare loop on the same chunks, for
100 KB in 1-character chunks and 400 KB in 4- and 16-character chunks, in each preset's own format
(a preset recording with reasoning, calls or an answer, its text regions repeated to the size; the
recording's prompt as the prefix, its case's tools). `parser_scaling` (reported, for context): the
bare parser's time for 400 KB over 100 KB at 4-character chunks; transformers grows a region's
text with `+=` on an attribute, so its own cost is not linear, and the trace inherits that.

The reference is transformers' own parser as it ships: the engine makes transformers' parsing
modules match author regexes with time bounds (`transformers_compat.install_regex_bounds`, which
every trace and run uses); the bare loop runs with those modules' own `regex` put back, so the
ratio counts everything the engine adds (the spans, and the bounds on a template with patterns).
The bare loop with the bounds is timed too, to tell the two apart.

Side by side at the finest grain: the three are fed each chunk in turn and every call is timed, so
whatever else the shared machine does lands on all three alike; of `repeats` such runs, the one
with the median ratio is reported. Run: `python -m benchmarks.bench_trace [--quick]`."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

import regex

from transformers.utils.chat_parsing import ResponseParser

from engine.presets import load_preset, preset_names
from engine.response_spec import load_response_spec
from engine.trace import Trace
from engine.transformers_compat import REGEX_USERS, install_regex_bounds
from engine.workspace import Workspace

FIELDS = ("reasoning_content", "tool_calls", "content")
TEXT_FIELDS = ("reasoning_content", "content")
KB = 1000


@cache
def preset_sample(name: str) -> tuple[dict, str, list | None, str]:
    """A preset's format: (response template, prompt, tools, recording output). The recording that
    shows the most fields (the longest among those)."""
    workspace = Workspace.from_preset(load_preset(name))
    usable = [r for r in workspace.recordings if workspace.find_case(r.case) is not None]
    recording = max(usable, key=lambda r: (sum(f in (r.expected or {}) for f in FIELDS), len(r.output)))
    case = workspace.find_case(recording.case)
    prompt = workspace.render(case).prompt
    assert prompt is not None, name
    spec = load_response_spec(workspace.response_template).spec
    return spec, prompt, case.tools, recording.output


def sized_output(name: str, size: int) -> str:
    """About `size` characters in the preset's format: its recording with the text of every
    reasoning and answer region repeated (delimiters and calls kept as the model wrote them)."""
    spec, prompt, tools, output = preset_sample(name)
    trace = Trace(spec, prompt=prompt, tools=tools)
    trace.feed(output)
    trace.finalize()
    bodies = [s for s in trace.segments() if s.kind == "body" and s.field in TEXT_FIELDS and s.end > s.start]
    grow = sum(s.end - s.start for s in bodies)
    times = max(1, -(-(size - (len(output) - grow)) // max(grow, 1)))
    out, cut = [], 0
    for s in bodies:
        out += [output[cut : s.start], output[s.start : s.end] * times]
        cut = s.end
    sized = "".join(out) + output[cut:]
    check = Trace(spec, prompt=prompt, tools=tools)
    check.feed(sized)
    check.finalize()
    assert not check.diagnostics and set(check.message) == set(trace.message), f"{name}: the sized output parses alike"
    return sized


def chunked(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


@contextmanager
def transformers_as_shipped() -> Iterator[None]:
    """transformers' parsing modules with their own `regex` (not the engine's bounded stand-in)."""
    for module in REGEX_USERS:
        module.re = regex
    try:
        yield
    finally:
        install_regex_bounds()


def parsers(spec: dict, prompt: str, tools: list | None) -> tuple[ResponseParser, ResponseParser, Trace]:
    """transformers' parser as shipped, the same with the engine's regex bounds, and a trace."""
    with transformers_as_shipped():
        shipped = ResponseParser(spec, prefix=prompt, tools=tools)
    return shipped, ResponseParser(spec, prefix=prompt, tools=tools), Trace(spec, prompt=prompt, tools=tools)


def side_by_side(name: str, size: int, chunk: int, repeats: int) -> tuple[float, float, float]:
    """Seconds of the bare parser (as shipped, and with the bounds) and of the trace for the preset's
    output of `size` in `chunk`-character chunks. The three are fed each chunk in turn, each call
    timed, so whatever else the machine does lands on all three alike; the run with the median
    trace/bare ratio of `repeats` is kept."""
    spec, prompt, tools, _ = preset_sample(name)
    chunks = chunked(sized_output(name, size), chunk)
    clock = time.perf_counter_ns
    runs = []
    for _ in range(repeats):
        shipped, bounded, trace = parsers(spec, prompt, tools)
        spent = [0, 0, 0]
        for piece in chunks:
            t0 = clock()
            shipped.feed(piece)
            t1 = clock()
            bounded.feed(piece)
            t2 = clock()
            trace.feed(piece)
            t3 = clock()
            spent[0] += t1 - t0
            spent[1] += t2 - t1
            spent[2] += t3 - t2
        t0 = clock()
        shipped.finalize()
        t1 = clock()
        bounded.finalize()
        t2 = clock()
        trace.finalize()
        t3 = clock()
        assert not trace.diagnostics
        runs.append(((spent[0] + t1 - t0) / 1e9, (spent[1] + t2 - t1) / 1e9, (spent[2] + t3 - t2) / 1e9))
    runs.sort(key=lambda r: r[2] / r[0])
    return runs[len(runs) // 2]


def bare_seconds(spec: dict, prompt: str, tools: list | None, chunks: list[str], repeats: int) -> float:
    """Best CPU seconds of transformers' parser as shipped over `chunks`."""
    best = float("inf")
    for _ in range(repeats):
        with transformers_as_shipped():
            parser = ResponseParser(spec, prefix=prompt, tools=tools)
        start = time.process_time()
        for piece in chunks:
            parser.feed(piece)
        parser.finalize()
        best = min(best, time.process_time() - start)
    return best


def main(quick: bool = False, repeats: int = 3) -> dict:
    """{"trace_overhead": {"max", case: ratio}, "parser_scaling": ratio, "rows": [...]} and a table."""
    scale = 10 if quick else 1  # --quick: 10 and 40 KB
    repeats = 1 if quick else repeats
    sizes = ((100 * KB // scale, 1), (400 * KB // scale, 4), (400 * KB // scale, 16))
    rows, ratios = [], {}
    print(f"{'preset':<13}{'input':<26}{'bare feed':>11}{'+ bounds':>10}{'trace':>10}{'ratio':>8}")
    for name in preset_names():
        for size, chunk in sizes:
            b, bb, t = side_by_side(name, size, chunk, repeats)
            label = f"{size // KB} KB in {chunk}-char chunks"
            ratios[f"{name}, {label}"] = t / b
            rows.append({"preset": name, "input": label, "bare_s": b, "bounded_s": bb, "trace_s": t, "ratio": t / b})
            print(f"{name:<13}{label:<26}{b:>10.3f}s{bb:>9.3f}s{t:>9.3f}s{t / b:>7.2f}x")
    # transformers' own growth: 4x the text at 4-character chunks, in the default preset's format.
    spec, prompt, tools, _ = preset_sample("smollm3")
    small, large = (100 * KB // scale, 400 * KB // scale)
    small_t = bare_seconds(spec, prompt, tools, chunked(sized_output("smollm3", small), 4), repeats)
    large_t = bare_seconds(spec, prompt, tools, chunked(sized_output("smollm3", large), 4), repeats)
    print(f"bare parser, {large // KB} KB / {small // KB} KB at 4-char chunks: {large_t:.3f}s / {small_t:.3f}s = {large_t / small_t:.2f}x")
    return {"trace_overhead": {"max": max(ratios.values()), **ratios}, "parser_scaling": large_t / small_t, "rows": rows}


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
