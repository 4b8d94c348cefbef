"""Issue 11, item 10: the command line has the app's bounds by default (`--timeout` to change them)
and turns every bad input into a message: a looping template or a backtracking regex stops with an
error, non-UTF-8 files, deep JSON and wrong types exit 2 with a sentence, never a traceback.
In-process through `main()`, as CI would see it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from engine import commands, limits
from engine.cli import main
from engine.commands import HARD_STOP_SECONDS, SLACK_SECONDS, CommandTimeout, OutputOverflow, bounded_command

ROOT = Path(__file__).resolve().parent.parent

CHATML = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}<|im_start|>assistant\n"
LOOP = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
HOSTILE = {"version": 1, "start_anchor": "<|im_start|>assistant\n", "fields": {"content": {"close_pattern": "(a+)+$"}}}


def run(capsys: pytest.CaptureFixture, *args: object) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "chatml.jinja").write_text(CHATML)
    (tmp_path / "loop.jinja").write_text(LOOP)
    (tmp_path / "case.json").write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}))
    (tmp_path / "hostile.json").write_text(json.dumps(HOSTILE))
    (tmp_path / "attack.txt").write_text("a" * 3000 + "!")
    (tmp_path / "recordings.json").write_text(json.dumps([{"case": "plain", "output": "a" * 3000 + "!"}]))
    (tmp_path / "cases.json").write_text(json.dumps([{"name": "plain", "messages": [{"role": "user", "content": "hi"}]}]))
    return tmp_path


def test_render_stops_a_looping_template_at_its_timeout(capsys: pytest.CaptureFixture, files: Path) -> None:
    started = time.monotonic()
    code, _, err = run(capsys, "render", "--chat-template", files / "loop.jinja", "--case", files / "case.json",
                       "--timeout", "1")
    assert code == 1 and "took longer than 1 s" in err and "Traceback" not in err
    assert time.monotonic() - started < 30


def test_trace_stops_a_backtracking_regex_and_names_it(capsys: pytest.CaptureFixture, files: Path) -> None:
    code, out, err = run(capsys, "trace", "--response-template", files / "hostile.json", "--output",
                         files / "attack.txt", "--timeout", "0.3", "--json")
    assert code == 1
    [error] = [d for d in json.loads(out)["diagnostics"] if d["severity"] == "error"]
    assert error["source"] == "response_template" and "close_pattern '(a+)+$' took longer than 0.3 s" in error["message"]


def test_check_stops_on_a_backtracking_regex(capsys: pytest.CaptureFixture, files: Path) -> None:
    code, out, _ = run(capsys, "check", "--chat-template", files / "chatml.jinja", "--response-template",
                       files / "hostile.json", "--cases", files / "cases.json", "--recordings", files / "recordings.json",
                       "--timeout", "3", "--json")
    assert code == 1 and "took longer than" in out


def test_check_stops_a_looping_template_at_its_timeout(capsys: pytest.CaptureFixture, files: Path) -> None:
    code, out, _ = run(capsys, "check", "--chat-template", files / "loop.jinja", "--response-template",
                       files / "hostile.json", "--timeout", "2", "--json")
    assert code == 1
    [d] = json.loads(out)["diagnostics"]
    assert "The checks stopped: they took longer than 2 s" in d["message"]


@pytest.mark.parametrize(
    "name, content, expected",
    [
        ("latin1.jinja", "caf\xe9".encode("latin-1"), "is not UTF-8 text: byte 0xe9 at line 1"),
        ("deep.json", ('{"messages": ' + "[" * 5000 + "]" * 5000 + "}").encode(), "Nested too deeply"),
        ("kwargs.json", b'{"messages": [], "template_kwargs": 5}', "'template_kwargs' must be an object, got int"),
        ("surrogate.json", b'{"messages": [{"role": "user", "content": "\\ud800"}]}', "Lone surrogate"),
    ],
)
def test_bad_files_are_sentences_not_tracebacks(capsys: pytest.CaptureFixture, files: Path, name: str,
                                                content: bytes, expected: str) -> None:
    (files / name).write_bytes(content)
    template, case = (files / name, files / "case.json") if name.endswith(".jinja") else (files / "chatml.jinja", files / name)
    code, _, err = run(capsys, "render", "--chat-template", template, "--case", case)
    assert code == 2 and expected in err and "Traceback" not in err


def test_trace_tools_must_be_a_list(capsys: pytest.CaptureFixture, files: Path) -> None:
    (files / "tools.json").write_text('{"type": "function"}')
    (files / "out.txt").write_text("hi")
    code, _, err = run(capsys, "trace", "--response-template", files / "hostile.json", "--output", files / "out.txt",
                       "--tools", files / "tools.json")
    assert code == 2 and "tools must be a JSON list" in err


def test_a_timeout_must_be_positive(capsys: pytest.CaptureFixture, files: Path) -> None:
    code, _, err = run(capsys, "render", "--chat-template", files / "chatml.jinja", "--case", files / "case.json",
                       "--timeout", "0")
    assert code == 2 and "--timeout" in err


# ----- issue 29: --timeout covers everything a command does, and what it prints is bounded -----------


def recursing(depth: int, width: int) -> str:
    """A macro that calls itself `depth` levels deep, then writes `width` pieces (issue 29's template)."""
    return ("{%- macro r(n) -%}{%- if n > 0 -%}{{- r(n - 1) -}}{%- else -%}"
            "{%- for i in range(" + str(width) + ") -%}{{- 'x' -}}{%- endfor -%}{%- endif -%}{%- endmacro -%}"
            "{{- r(" + str(depth) + ") -}}")


def bounded_process(*args: object, output_mb: float) -> tuple[subprocess.CompletedProcess, float]:
    """`python -m engine ARGS` as a real process, with the output bound set to `output_mb`, and its time."""
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "engine", *map(str, args)], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "PLAYGROUND_MAX_COMMAND_OUTPUT_MB": str(output_mb)})
    return done, time.monotonic() - started


@pytest.mark.slow
def test_render_explain_json_of_a_deep_recursion_is_bounded_in_time_and_output(files: Path) -> None:
    """Issue 29: 50 levels of macro calls, then 99,000 pieces. `render --explain --json --timeout 10`
    ran 130 s, peaked at 1.8 GB and printed 516 MB, exit 0. Now the explanation comes back from the
    worker compact (call chains once), the pieces' JSON is counted before it is printed, and over the
    output's bound the JSON says so (pieces null) and the command exits 1 with a message."""
    (files / "deep.jinja").write_text(recursing(50, 99_000))
    done, seconds = bounded_process("render", "--chat-template", files / "deep.jinja", "--case", files / "case.json",
                                    "--explain", "--json", "--timeout", 30, output_mb=2)
    assert len(done.stdout) <= 2_000_000 and "Traceback" not in done.stderr
    data = json.loads(done.stdout)  # whole JSON, not a cut one
    assert data["prompt"] == "x" * 99_000 and data["pieces"] is None
    assert "99,000 pieces" in data["explanation_note"] and "PLAYGROUND_MAX_COMMAND_OUTPUT_MB" in data["explanation_note"]
    assert done.returncode == 1 and "error: the explanation was not printed whole" in done.stderr
    assert seconds < 30 + SLACK_SECONDS + 30  # (its bound, and Python and transformers starting on a loaded machine)


@pytest.mark.slow
def test_trace_of_an_output_fed_a_character_at_a_time_is_bounded_in_time_and_output(files: Path) -> None:
    """`trace --explain --json --chunk-size 1` of a 500,000-character output took 47 s and printed 36 MB
    with a 2 s regex budget. Now the whole command has a time bound (the regexes' --timeout, the
    render's 10 s on top) and an output bound: it ends at the first with a message, exit 1."""
    (files / "spec.json").write_text(json.dumps({"version": 1, "start_anchor": "<s>", "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>"}, "content": {}}}))
    (files / "long.txt").write_text("<s>" + "<think>x</think>" * 31_000)
    done, seconds = bounded_process("trace", "--response-template", files / "spec.json", "--output", files / "long.txt",
                                    "--chunk-size", 1, "--explain", "--json", "--timeout", 0.5, output_mb=1)
    assert done.returncode == 1 and len(done.stdout) <= 1_000_000 and "Traceback" not in done.stderr
    stopped = "trace stopped: it took longer than 15.5 s, the time its --timeout gives the whole command" in done.stderr
    assert stopped or "the output is over the 1 MB a command prints (PLAYGROUND_MAX_COMMAND_OUTPUT_MB)" in done.stderr
    assert seconds < 15.5 + HARD_STOP_SECONDS + 30


def test_the_whole_command_is_stopped_at_its_bound_wherever_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    """The time bound lands in Python code (formatting) and in a wait (for a worker) alike."""
    monkeypatch.setattr(commands, "SLACK_SECONDS", 0)
    started = time.monotonic()
    with pytest.raises(CommandTimeout, match="took longer than 0.3 s"):
        with bounded_command(0.3, "render"):
            while True:
                pass
    with pytest.raises(CommandTimeout):
        with bounded_command(0.3, "render"):
            threading.Event().wait(30)
    assert time.monotonic() - started < 5


def test_what_a_command_prints_is_bounded(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setattr(limits, "MAX_COMMAND_OUTPUT_CHARS", 1_000)
    with pytest.raises(OutputOverflow, match="over the 0.001 MB a command prints"):
        with bounded_command(None, "formats"):
            print("x" * 600)
            print("y" * 600)
    assert capsys.readouterr().out == "x" * 600 + "\n"  # nothing of the write that went past it
