"""Cost of the streaming check vs one plain trace of the same output, measured side by side in one run.

Target (issue 7): the streaming check with 200 random splits on a 10 KB output in under 2 seconds,
reported as a ratio to one plain trace. The check streams the output in 1-character chunks, 8 fixed
sizes and 200 seeded random splits, each through the playground's Trace and compared with one-shot
parsing; both the whole check and its random-splits part are reported.
Target (issue 12): every check on a preset (round trip, streaming, lints, and the engines matrix:
MiniJinja twice and @huggingface/jinja under Node.js) in under 3 seconds, per preset.

Issue 15, the way the app runs them:
- `render_ms` (target ≤ 20 ms): the median render of each preset's cases in the killable worker
  (`Workspace.render(case, timeout=...)`, what the prompt panel does on a case switch); the first
  render of a template in a worker also compiles it, reported apart;
- `check_s` (target ≤ 2 s): every check on each preset as the Checks tab runs them
  (`Workspace.run_checks(runs, timeout=60, random_splits=100)`, in the worker), with the preset's
  first recording as the last run; best of `repeats`.

Issue 22: `explain_ratio` (target ≤ 2): the render a keystroke makes in the worker (with where the
generation prompt starts) with provenance over the same render without it, per preset, medians of
each case measured side by side; `edit` the same for a template just edited (each render compiles a
new text: transformers' compile, and with provenance the instrumented one too).
Run: `python -m benchmarks.bench_checks [--quick]`."""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

from engine.cases import Case
from engine.presets import load_preset, preset_names
from engine.workspace import Workspace
from engine.checks.context import CheckContext, Sample
from engine.checks.streaming import check_streaming
from engine.response_spec import load_response_spec
from engine.trace import Trace

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "checks" / "chatml"
PROMPT = "<|im_start|>user\nWhat is the weather in Paris and Rome?<|im_end|>\n<|im_start|>assistant\n"


def ten_kb_output(size: int = 10_000) -> str:
    """About `size` characters of output: long reasoning, a few tool calls, a long answer."""
    sentence = "The user wants the weather in two cities, so I will call get_weather for each <city> in turn. "
    reasoning = sentence * (size // (2 * len(sentence)))
    call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}\n</tool_call>'
    answer = "It is sunny in Paris {22 °C} and cloudy in Rome. " * (size // (2 * 50))
    return f"<think>\n{reasoning}\n</think>\n" + call * 2 + answer + "<|im_end|>"


def context(random_splits: int) -> CheckContext:
    text = (FIXTURES / "response_template.json").read_text()
    loaded = load_response_spec(text)
    chat = (FIXTURES / "chat_template.jinja").read_text()
    return CheckContext(chat, text, loaded.spec, loaded.template, [], [], random_splits=random_splits)


def plain_trace(template, output: str) -> None:
    trace = Trace(template, prompt=PROMPT)
    trace.feed(output)
    trace.finalize()


def timed(fn, *args) -> float:
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def streaming_check(repeats: int = 3) -> dict[str, float]:
    """The streaming check on a 10 KB output against one plain trace of it (issue 7)."""
    output = ten_kb_output()
    sample = Sample("10 KB", Case("bench", [{"role": "user", "content": "weather"}]), output, prompt=PROMPT)
    with_random, without_random = context(200), context(0)
    assert check_streaming(with_random, sample).status == "pass"
    # Interleave the measurements so machine noise hits all of them alike; keep the best of each.
    trace_t = check_t = fixed_t = float("inf")
    for _ in range(repeats):
        trace_t = min(trace_t, min(timed(plain_trace, with_random.template, output) for _ in range(5)))
        check_t = min(check_t, timed(check_streaming, with_random, sample))
        fixed_t = min(fixed_t, timed(check_streaming, without_random, sample))
    random_t = max(check_t - fixed_t, 0.0)
    rows = {
        "output characters": len(output),
        "one plain trace (ms)": trace_t * 1000,
        "streaming check, all chunkings (ms)": check_t * 1000,
        "  of which 200 random splits (ms)": random_t * 1000,
        "ratio: whole check / one trace": check_t / trace_t,
        "ratio: 200 random splits / one trace": random_t / trace_t,
    }
    width = max(len(k) for k in rows)
    for key, value in rows.items():
        shown = f"{value:,.0f}" if key.startswith(("output", "ratio")) else f"{value:,.2f}"
        print(f"{key:<{width}}  {shown}")
    print(f"{'under 2 seconds':<{width}}  {'yes' if check_t < 2 else 'NO'}")
    return rows


RENDER_TIMEOUT = 10.0
CHECKS_TIMEOUT = 60.0


def render_ms(repeats: int = 5) -> dict:
    """Median milliseconds to render a preset's cases in the worker, per preset (the first render
    of the template, which compiles it, apart)."""
    from engine.sandbox import shared_pool

    shared_pool().warm()
    Workspace.from_preset(load_preset("blank")).render(timeout=RENDER_TIMEOUT)  # the worker is up
    out: dict = {}
    print(f"{'preset':<13}{'cases':>6}{'first (compiles)':>18}{'median render':>15}")
    for name in preset_names():
        workspace = Workspace.from_preset(load_preset(name))
        start = time.perf_counter()
        workspace.render(workspace.cases[0], timeout=RENDER_TIMEOUT)
        first = (time.perf_counter() - start) * 1000
        times = []
        for _ in range(repeats):
            for case in workspace.cases:
                start = time.perf_counter()
                result = workspace.render(case, timeout=RENDER_TIMEOUT)
                times.append((time.perf_counter() - start) * 1000)
                assert result.prompt is not None or result.diagnostics, (name, case.name)
        out[name] = statistics.median(times)
        print(f"{name:<13}{len(workspace.cases):>6}{first:>15.1f} ms{out[name]:>12.1f} ms")
    return {"max": max(out.values()), **out}


def check_s(repeats: int = 3) -> dict:
    """Best seconds for every check on each preset, as the Checks tab runs them (in the worker,
    100 random splits, the preset's first recording as the last run)."""
    from engine.engines import jinja_js

    jinja_js.install()
    Workspace.from_preset(load_preset("blank")).run_checks(timeout=CHECKS_TIMEOUT, random_splits=100)  # warm
    out: dict = {}
    for name in preset_names():
        workspace = Workspace.from_preset(load_preset(name))
        recording = workspace.recordings[0] if workspace.recordings else None
        case = workspace.find_case(recording.case) if recording else None
        runs = [(case, recording.output)] if recording and case else []
        best = min(timed(lambda: workspace.run_checks(runs, timeout=CHECKS_TIMEOUT, random_splits=100)) for _ in range(repeats))
        out[name] = best
        print(f"every check on preset {name:<12} {best:5.2f} s  {'within 2 s' if best <= 2 else 'OVER 2 s'}")
    return {"max": max(out.values()), **out}


def explain_ratio(repeats: int = 5, most: int | None = None) -> dict:
    """Median explained render over median plain render, as a keystroke renders in the worker, per
    preset (worst in `max`; each preset's first `most` cases, all by default); `edit_max`: the same
    when every render is of a template just edited (three cases: compiling costs the same for any)."""
    from engine.sandbox import shared_pool

    shared_pool().warm()
    out: dict = {}
    edits: dict = {}
    print(f"{'preset':<13}{'plain':>10}{'explained':>11}{'ratio':>7}{'edit: plain':>13}{'explained':>11}{'ratio':>7}")
    for name in preset_names():
        workspace = Workspace.from_preset(load_preset(name))
        # Rendered once each first (both ways): the template is compiled, as on a keystroke that changed the case.
        cases = [c for c in workspace.cases[:most] if workspace.render(c, timeout=RENDER_TIMEOUT, explain=True).ok]
        times: dict = {(explain, edited): [] for explain in (False, True) for edited in (False, True)}
        for round_ in range(repeats):
            for index, case in enumerate(cases):
                for explain in (False, True):  # side by side, so noise hits both alike
                    for edited in (False, True) if index < 3 else (False,):
                        edit = Workspace.from_preset(load_preset(name)) if edited else workspace
                        if edited:  # a text no worker has compiled yet
                            edit.chat_template += f"{{# edit {round_} {index} {explain} #}}"
                        start = time.perf_counter()
                        result = edit.render(case, timeout=RENDER_TIMEOUT, with_generation_start=True, explain=explain)
                        times[explain, edited].append((time.perf_counter() - start) * 1000)
                        assert not explain or result.explanation.pieces is not None, (name, case.name)
        median = {key: statistics.median(values) for key, values in times.items()}
        out[name] = median[True, False] / median[False, False]
        edits[name] = median[True, True] / median[False, True]
        print(f"{name:<13}{median[False, False]:>8.1f}ms{median[True, False]:>9.1f}ms{out[name]:>7.2f}"
              f"{median[False, True]:>11.1f}ms{median[True, True]:>9.1f}ms{edits[name]:>7.2f}")
    return {"max": max(out.values()), "edit_max": max(edits.values()), **out}


def main(quick: bool = False) -> dict:
    """The streaming check's cost (issue 7; not with --quick), then `render_ms`, `explain_ratio` and `check_s`."""
    rows: dict = {} if quick else streaming_check()
    return {**rows, "render_ms": render_ms(2 if quick else 5), "explain_ratio": explain_ratio(1, 3) if quick else explain_ratio(5),
            "check_s": check_s(1 if quick else 3)}


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
