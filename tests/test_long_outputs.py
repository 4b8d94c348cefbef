"""Issue 11, item 6 (engine side): outputs have a documented size cap, `limits.MAX_OUTPUT_CHARS`.
Every runner and the trace refuse what goes beyond it with a message, so a pasted 10 MB output is
answered at once instead of never; below the cap the cost is linear (benchmarks/bench_long_outputs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine import limits
from engine.cli import main
from engine.runners import RecordedRunner, RemoteRunner, RunnerError
from engine.trace import Trace
from tests.local_http import Local, completion
from tests.trace_cases import CHATML_PROMPT, SMOL


@pytest.fixture
def small_cap(monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(limits, "MAX_OUTPUT_CHARS", 1_000)
    return 1_000


def test_the_trace_stops_at_the_cap_and_says_so(small_cap: int) -> None:
    trace = Trace(SMOL, prompt=CHATML_PROMPT)
    for _ in range(30):
        trace.feed("<think>" + "x" * 43)  # 50 characters a chunk: 1,500 in all
    trace.finalize()
    assert trace.full and trace.truncated == 500 and len(trace.output) == small_cap
    [error] = [d for d in trace.diagnostics if d.severity == "error"]
    assert "over 1,000 characters" in error.message and "PLAYGROUND_MAX_OUTPUT_CHARS" in error.hint
    assert "".join(trace.output[s.start : s.end] for s in trace.segments()) == trace.output  # still tiled


def test_an_output_just_at_the_cap_is_traced_whole(small_cap: int) -> None:
    trace = Trace(SMOL, prompt=CHATML_PROMPT)
    trace.feed("a" * (small_cap - 10))
    trace.feed("<|im_end|>")
    trace.finalize()
    assert not trace.full and trace.diagnostics == [] and trace.message["content"] == "a" * (small_cap - 10)


def test_a_pasted_output_over_the_cap_is_refused_at_once(small_cap: int) -> None:
    with pytest.raises(RunnerError, match="over the playground's 1,000") as raised:
        RecordedRunner("x" * (small_cap + 1))
    assert "paste one reply" in raised.value.diagnostic.hint
    assert "".join(c.text for c in RecordedRunner("word " * 200).stream()) == "word " * 200  # 1,000: at the cap


def test_a_server_streaming_past_the_cap_is_cut_off(small_cap: int) -> None:
    server = Local(200, completion(["xxxxxxxxxx"] * 200), {"Content-Type": "text/event-stream"})
    try:
        runner = RemoteRunner(f"http://127.0.0.1:{server.port}", "m")
        received = []
        with pytest.raises(RunnerError, match="over 1,000 characters"):
            for chunk in runner.stream("hi"):
                received.append(chunk.text)
        assert sum(map(len, received)) == small_cap
    finally:
        server.close()


def test_the_cli_run_says_so_too(small_cap: int, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "long.txt").write_text("y" * (small_cap + 1))
    code = main(["run", "--preset", "smollm3", "--case", "plain chat", "--runner", "recorded", "--recording",
                 str(tmp_path / "long.txt"), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 1 and "over the playground's 1,000" in data["diagnostics"][0]["message"]
