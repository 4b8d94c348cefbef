"""Cost of tracing vs the bare `ResponseParser.feed` loop, measured side by side in one run.

`trace_overhead` (target ≤ 1.3): the engine's `Trace` over the bare loop on the same chunks, for
100 KB in 1-character chunks and 400 KB in 4- and 16-character chunks, in each preset's own format
(a preset recording with reasoning, calls or an answer, its text regions repeated to the size; the
recording's prompt as the prefix, its case's tools). `parser_scaling` (reported, for context): the
bare parser's time for 400 KB over 100 KB at 4-character chunks; transformers grows a region's
text with `+=` on an attribute, so its own cost is not linear, and the trace inherits that.

Each pair is timed interleaved (bare, trace, bare, trace, …) so machine noise hits both alike, best
of `repeats`. Run: `python -m benchmarks.bench_trace [--quick]`."""

from __future__ import annotations

import sys
import time
from functools import cache

from transformers.utils.chat_parsing import ResponseParser

from engine.presets import load_preset, preset_names
from engine.response_spec import load_response_spec
from engine.trace import Trace
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


def bare(spec: dict, prompt: str, tools: list | None, chunks: list[str]) -> float:
    start = time.perf_counter()
    parser = ResponseParser(spec, prefix=prompt, tools=tools)
    for chunk in chunks:
        parser.feed(chunk)
    parser.finalize()
    return time.perf_counter() - start


def traced(spec: dict, prompt: str, tools: list | None, chunks: list[str]) -> float:
    start = time.perf_counter()
    trace = Trace(spec, prompt=prompt, tools=tools)
    for chunk in chunks:
        trace.feed(chunk)
    trace.finalize()
    elapsed = time.perf_counter() - start
    assert not trace.diagnostics
    return elapsed


def side_by_side(name: str, size: int, chunk: int, repeats: int) -> tuple[float, float]:
    """Best bare and best traced seconds for the preset's output of `size` in `chunk`-character chunks."""
    spec, prompt, tools, _ = preset_sample(name)
    chunks = chunked(sized_output(name, size), chunk)
    bare_t = traced_t = float("inf")
    for _ in range(repeats):
        bare_t = min(bare_t, bare(spec, prompt, tools, chunks))
        traced_t = min(traced_t, traced(spec, prompt, tools, chunks))
    return bare_t, traced_t


def main(quick: bool = False, repeats: int = 3) -> dict:
    """{"trace_overhead": {"max", case: ratio}, "parser_scaling": ratio, "rows": [...]} and a table."""
    scale = 10 if quick else 1  # --quick: 10 and 40 KB
    repeats = 1 if quick else repeats
    sizes = ((100 * KB // scale, 1), (400 * KB // scale, 4), (400 * KB // scale, 16))
    rows, ratios = [], {}
    print(f"{'preset':<13}{'input':<26}{'bare feed':>11}{'trace':>10}{'ratio':>8}")
    for name in preset_names():
        for size, chunk in sizes:
            b, t = side_by_side(name, size, chunk, repeats)
            label = f"{size // KB} KB in {chunk}-char chunks"
            ratios[f"{name}, {label}"] = t / b
            rows.append({"preset": name, "input": label, "bare_s": b, "trace_s": t, "ratio": t / b})
            print(f"{name:<13}{label:<26}{b:>10.3f}s{t:>9.3f}s{t / b:>7.2f}x")
    # transformers' own growth: 4x the text at 4-character chunks, in the default preset's format.
    spec, prompt, tools, _ = preset_sample("smollm3")
    small, large = (100 * KB // scale, 400 * KB // scale)
    small_t = min(bare(spec, prompt, tools, chunked(sized_output("smollm3", small), 4)) for _ in range(repeats))
    large_t = next(r["bare_s"] for r in rows if r["preset"] == "smollm3" and r["input"].startswith(f"{large // KB} KB in 4"))
    print(f"bare parser, {large // KB} KB / {small // KB} KB at 4-char chunks: {large_t:.3f}s / {small_t:.3f}s = {large_t / small_t:.2f}x")
    return {"trace_overhead": {"max": max(ratios.values()), **ratios}, "parser_scaling": large_t / small_t, "rows": rows}


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
