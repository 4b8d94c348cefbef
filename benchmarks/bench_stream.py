"""Server-side cost of streaming a long output through the app's streaming callback.

`stream_scaling` (target ≤ 2.2): a 10,000- and a 20,000-token recording streamed with no pace (as
fast as the server can) through `app.run_stream.stream_run`, the loop behind the Run button, with
Gradio's own diff of each update against the previous one (what it computes to send the browser).
Work per update must follow the new text, so the 20k stream should take about twice the 10k one.
Measured as the app runs (updates coalesced to at most 15 a second) and, for context, in the worst
case of one update per token, where any per-update cost that grows with the output would show as a
ratio well above 2. The callback includes the engine's trace, which includes transformers'
`ResponseParser` (itself superlinear in the length of one region): the trace alone is timed on the
same chunks, side by side, and the app's own share (callback minus trace) is reported too.
Times are CPU seconds of this process (`time.process_time`, all threads), best of several
interleaved runs, so other work on a shared machine disturbs them less than wall-clock time.

`stream_updates_per_s` (targets ≤ 15 updates/s, lag ≤ 100 ms): a recording replayed at a
model-like 200 tokens/s through the same loop; the updates per second while tokens arrive, and how
long after the last token the final update (the parsed message, the stats) is ready.
Run: `python -m benchmarks.bench_stream [--quick]`."""

from __future__ import annotations

import json
import statistics
import sys
import time
from typing import Any

from gradio.utils import diff

from app import run_stream
from app.state import Session
from engine.cases import Case, Recording
from engine.runners import split_tokens
from engine.workspace import RunSettings, Workspace
from tests.test_app_support import CHATML, RESPONSE

WORDS = ("the model considers each option carefully before it answers and checks the units twice "
         "so that nothing is lost in the final explanation of the result").split()  # fmt: skip
PROMPT = "<|im_start|>user\nTell me everything about the weather in Paris.<|im_end|>\n<|im_start|>assistant\n"


def recording(tokens: int) -> str:
    """A realistic output of exactly `tokens` pieces (the recorded runner's tokens without a
    tokenizer): reasoning, a tool call, then a long answer in paragraphs."""
    reasoning = "<think>\n" + " ".join(WORDS[i % len(WORDS)] for i in range(tokens * 2 // 5)) + "\n</think>\n"
    call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}\n</tool_call>\n'
    head = reasoning + call
    budget = tokens - len(split_tokens(head)) - 1
    words = [WORDS[i % len(WORDS)] + (".\n\n" if i % 60 == 59 else "") for i in range(budget)]
    body = " ".join(words)
    while len(split_tokens(head + body + "<|im_end|>")) > tokens:
        body = body.rsplit(" ", 1)[0]
    return head + body + "<|im_end|>"


def session_for(output: str) -> Session:
    case = Case("long answer", [{"role": "user", "content": "Tell me everything about the weather in Paris."}])
    workspace = Workspace(
        chat_template=CHATML, response_template=RESPONSE, special_tokens={"eos_token": "<|im_end|>"},
        stop_tokens=["<|im_end|>"], cases=[case], case_name=case.name, recordings=[Recording("long", case.name, output)],
    )  # fmt: skip
    return Session(workspace)


def sent(previous: dict[str, Any], update: run_stream.RunUpdate) -> int:
    """Gradio's diff of each output against its last value, encoded as it is sent; its size."""
    size = 0
    for name, value in update.outputs().items():
        if isinstance(value, dict) and "__type__" in value:  # gr.update(...): sent as it is
            size += len(json.dumps(value, default=str))
            continue
        size += len(json.dumps(diff(previous.get(name), value)))
        previous[name] = value
    return size


def stream_once(output: str, interval: float | None) -> tuple[float, int]:
    """CPU seconds to stream `output` through `stream_run` (with Gradio's diffs), and the update count."""
    session = session_for(output)
    settings = RunSettings(runner="recorded", recording="long", tokens_per_second=0)
    previous: dict[str, Any] = {}
    updates = 0
    start = time.process_time()
    for update in run_stream.stream_run(session, settings, interval=interval):
        sent(previous, update)
        updates += 1
    elapsed = time.process_time() - start
    assert session.last_run is not None and len(session.last_run.chunks) == len(split_tokens(output)), "the whole output streamed"
    return elapsed, updates


def trace_once(output: str) -> float:
    """CPU seconds for the engine's trace alone over the same chunks (transformers' parser included)."""
    from engine.trace import Trace

    chunks = split_tokens(output)
    start = time.process_time()
    trace = Trace(json.loads(RESPONSE), prompt=PROMPT)
    for chunk in chunks:
        trace.feed(chunk)
    trace.finalize()
    return time.process_time() - start


def scaling(outputs: dict[int, str], interval: float | None, repeats: int) -> dict:
    """Best CPU seconds of the callback and of the trace for each output, interleaved."""
    best: dict[int, float] = {}
    best_trace: dict[int, float] = {}
    counts: dict[int, int] = {}
    for _ in range(repeats):
        for n, output in outputs.items():  # interleaved so machine noise hits both alike
            seconds, counts[n] = stream_once(output, interval)
            best[n] = min(best.get(n, float("inf")), seconds)
            best_trace[n] = min(best_trace.get(n, float("inf")), trace_once(output))
    small, large = sorted(outputs)
    app_share = {n: best[n] - best_trace[n] for n in outputs}
    return {
        "seconds": best, "trace_seconds": best_trace, "updates": counts,
        "ratio": best[large] / best[small], "trace_ratio": best_trace[large] / best_trace[small],
        "app_ratio": app_share[large] / app_share[small] if app_share[small] > 0 else float("nan"),
    }  # fmt: skip


class TimedRunner:
    """A runner that notes when each chunk was produced (to measure the lag of the last update)."""

    def __init__(self, runner: Any):
        self.runner = runner
        self.times: list[float] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.runner, name)

    def stream(self, prompt: str, **kwargs: Any):
        for chunk in self.runner.stream(prompt, **kwargs):
            self.times.append(time.monotonic())
            yield chunk


def paced(tokens: int, pace: float = 200.0) -> dict:
    """Updates per second while `tokens` tokens arrive at `pace` tokens/s, and the lag (ms) from the
    last token to the final update."""
    session = session_for(recording(tokens))
    settings = RunSettings(runner="recorded", recording="long", tokens_per_second=pace)
    built: list[TimedRunner] = []
    original = run_stream.build_runner

    def timed_runner(*args: Any, **kwargs: Any) -> TimedRunner:
        built.append(TimedRunner(original(*args, **kwargs)))
        return built[-1]

    run_stream.build_runner = timed_runner
    try:
        stamps = [time.monotonic() for _ in run_stream.stream_run(session, settings)]
    finally:
        run_stream.build_runner = original
    chunks = built[0].times
    first, last = chunks[0], chunks[-1]
    during = [t for t in stamps[1:-1] if first <= t <= last]  # the updates while tokens arrive
    return {"updates_per_s": len(during) / (last - first), "lag_ms": (stamps[-1] - last) * 1000,
            "tokens": len(chunks), "seconds": last - first, "updates": len(stamps)}  # fmt: skip


def main(quick: bool = False, repeats: int = 5) -> dict:
    """{"stream_scaling": ratio, "stream_updates_per_s": {...}, "detail": {...}}, and a table."""
    sizes = (2_000, 4_000) if quick else (10_000, 20_000)
    outputs = {n: recording(n) for n in sizes}
    modes = [("as the app runs (<=15 updates/s)", None)] + ([] if quick else [("one update per token", 0.0)])
    detail = {}
    print(f"{'mode':<34}{'tokens':>8}{'updates':>9}{'callback':>10}{'per token':>11}{'trace':>9}{'app share':>11}")
    for label, interval in modes:
        result = scaling(outputs, interval, 2 if quick else repeats)
        detail[label] = result
        for n in sizes:
            total, traced = result["seconds"][n], result["trace_seconds"][n]
            print(f"{label:<34}{n:>8,}{result['updates'][n]:>9,}{total:>9.2f}s{total / n * 1e6:>8.0f} µs{traced:>8.2f}s{total - traced:>10.2f}s")
        print(f"{'':<34}{sizes[1] // 1000}k/{sizes[0] // 1000}k: callback {result['ratio']:.2f}x, trace "
              f"{result['trace_ratio']:.2f}x, app share {result['app_ratio']:.2f}x")  # fmt: skip
    runs = [paced(300 if quick else 1_000) for _ in range(1 if quick else 3)]
    pace = {"updates_per_s": statistics.median(r["updates_per_s"] for r in runs), "lag_ms": statistics.median(r["lag_ms"] for r in runs)}
    print(f"at 200 tokens/s ({runs[0]['tokens']} tokens, {len(runs)} runs, medians): {pace['updates_per_s']:.1f} updates/s, "
          f"final update {pace['lag_ms']:.0f} ms after the last token")  # fmt: skip
    return {"stream_scaling": detail[modes[0][0]]["ratio"], "stream_updates_per_s": pace, "detail": detail}


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
