"""Issue 11, item 10: the command line has the app's bounds by default (`--timeout` to change them)
and turns every bad input into a message: a looping template or a backtracking regex stops with an
error, non-UTF-8 files, deep JSON and wrong types exit 2 with a sentence, never a traceback.
In-process through `main()`, as CI would see it."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from engine.cli import main

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
