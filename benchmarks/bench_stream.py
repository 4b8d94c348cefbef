"""Server-side cost of streaming a long recorded output through the app's streaming callback.

Streams a 10,000- and a 20,000-token recording (pace 0: as fast as the server can) through
`app.run_panel.run_callback`, the function the Run button calls, including Gradio's own diff of
each update against the previous one (what it sends the browser). Work per update must be
proportional to the new text, so the 20k stream should take about twice the 10k one (ratio ~2).

Two modes: the app as it runs (updates coalesced to at most 15 per second), and the worst case of
one update per token, where any per-update cost that grows with the output would show up as a
ratio well above 2.

The callback's time includes the engine's trace, which includes transformers' `ResponseParser`;
that parser is itself superlinear in the length of one region (it grows its buffers with
`self._body += text`, which CPython cannot do in place on an attribute), so the benchmark also
times the engine's trace alone on the same chunks, side by side, and reports the app's own share
(callback minus trace): that is the part this app controls, and it should be linear.
Times are CPU seconds of this process (`time.process_time`, all threads), best of several
interleaved runs, so other work on a shared machine disturbs them less than wall-clock time.
Run: `python -m benchmarks.bench_stream`."""

from __future__ import annotations

import json
import time

from gradio.utils import diff

from app import run_panel, run_stream
from app.state import Session
from engine.workspace import RunSettings, Workspace
from engine.cases import Case, Recording
from engine.runners import split_tokens
from tests.test_app_support import CHATML, RESPONSE

WORDS = ("the model considers each option carefully before it answers and checks the units twice "
         "so that nothing is lost in the final explanation of the result").split()  # fmt: skip


def recording(tokens: int) -> str:
    """A realistic output of about `tokens` tokens (the recorded runner's pieces): reasoning, a tool
    call, then a long answer in paragraphs."""
    reasoning = "<think>\n" + " ".join(WORDS[i % len(WORDS)] for i in range(tokens * 2 // 5)) + "\n</think>\n"
    call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}\n</tool_call>\n'
    words = []
    i = 0
    text = reasoning + call
    budget = tokens - len(split_tokens(text)) - 1
    while len(words) < budget:
        words.append(WORDS[i % len(WORDS)] + (".\n\n" if i % 60 == 59 else ""))
        i += 1
    body = " ".join(words)
    output = text + body + "<|im_end|>"
    # Trim or pad to the exact token count.
    pieces = split_tokens(output)
    while len(pieces) > tokens:
        body = body.rsplit(" ", 1)[0]
        pieces = split_tokens(text + body + "<|im_end|>")
    return text + body + "<|im_end|>"


def session_for(output: str) -> Session:
    case = Case("long answer", [{"role": "user", "content": "Tell me everything about the weather in Paris."}])
    workspace = Workspace(
        chat_template=CHATML, response_template=RESPONSE, special_tokens={"eos_token": "<|im_end|>"},
        stop_tokens=["<|im_end|>"], cases=[case], case_name=case.name,
        recordings=[Recording("long", case.name, output)], run=RunSettings(recording="long", tokens_per_second=0),
    )  # fmt: skip
    return Session(workspace)


def stream_once(output: str, interval: float | None) -> tuple[float, int]:
    """Seconds to stream `output` through the callback (with Gradio's diffs), and the update count."""
    sess = session_for(output)
    settings = ["recorded", "long", "", 0, "", 16, 0.7, 0.9, 0, "", "", ""]
    from app.case_panel import form_updates

    form = [u.get("value") if isinstance(u, dict) else u for u in form_updates(sess.workspace, sess.workspace.case)]
    previous: list = [None] * 9
    updates = 0
    original = run_stream.UPDATES_PER_SECOND
    if interval == 0:
        run_stream.UPDATES_PER_SECOND = 10**9  # one update per token: the worst case
    try:
        start = time.process_time()
        for outputs in run_panel.run_callback(sess, CHATML, RESPONSE, "long answer", *settings, *form):
            for index, value in enumerate(outputs):
                if isinstance(value, dict) and value.get("__type__") in ("update", "skip"):
                    continue
                if isinstance(value, (dict, str)):
                    diff(previous[index], value)  # what Gradio computes to send the browser
                    previous[index] = value
            updates += 1
        elapsed = time.process_time() - start
    finally:
        run_stream.UPDATES_PER_SECOND = original
    assert len(sess.last_run.chunks) == len(split_tokens(output)), "the whole output streamed"
    return elapsed, updates


def trace_once(output: str) -> float:
    """Seconds for the engine's trace alone over the same chunks (transformers' parser included)."""
    from engine.trace import Trace

    chunks = split_tokens(output)
    prompt = "<|im_start|>user\nTell me everything about the weather in Paris.<|im_end|>\n<|im_start|>assistant\n"
    start = time.process_time()
    trace = Trace(json.loads(RESPONSE), prompt=prompt)
    for chunk in chunks:
        trace.feed(chunk)
    trace.finalize()
    return time.process_time() - start


def main(repeats: int = 5) -> list[dict]:
    outputs = {n: recording(n) for n in (10_000, 20_000)}
    rows = []
    print(f"{'mode':<28}{'tokens':>8}{'updates':>9}{'callback':>10}{'per token':>11}{'trace':>9}{'app share':>11}")
    for label, interval in (("coalesced (<=15 updates/s)", None), ("one update per token", 0.0)):
        best: dict[int, tuple[float, float]] = {}
        counts: dict[int, int] = {}
        for _ in range(repeats):
            for n, output in outputs.items():  # interleaved so machine noise hits both alike
                seconds, count = stream_once(output, interval)
                traced = trace_once(output)
                if n not in best or seconds < best[n][0]:
                    best[n] = (seconds, min(traced, best.get(n, (0, traced))[1]))
                counts[n] = count
        for n in outputs:
            total, traced = best[n]
            print(f"{label:<28}{n:>8,}{counts[n]:>9,}{total:>9.2f}s{total / n * 1e6:>8.0f} µs{traced:>8.2f}s{total - traced:>10.2f}s")
        (t10, r10), (t20, r20) = best[10_000], best[20_000]
        row = {"mode": label, "callback_ratio": t20 / t10, "trace_ratio": r20 / r10, "app_ratio": (t20 - r20) / (t10 - r10)}
        rows.append(row)
        print(f"{'':<28}20k/10k: callback {row['callback_ratio']:.2f}x, trace {row['trace_ratio']:.2f}x, "
              f"app share {row['app_ratio']:.2f}x")  # fmt: skip
    return rows


if __name__ == "__main__":
    main()
