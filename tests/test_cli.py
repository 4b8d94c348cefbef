"""`python -m engine render|trace` on real files: one real subprocess each, the rest in-process
through the same entry point (the `cli` fixture)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from transformers.utils.chat_parsing import parse_response

from tests.conftest import engine_process
from tests.trace_cases import SCENARIOS, dump

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = "{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{%- endfor %}{%- if add_generation_prompt %}<|im_start|>assistant\n{%- endif %}"




def test_render_prints_prompt_and_json(cli, tmp_path: Path) -> None:
    (tmp_path / "t.jinja").write_text(TEMPLATE)
    (tmp_path / "case.json").write_text(json.dumps({"messages": [{"role": "user", "content": "Hi"}]}))
    plain = cli("render", "--chat-template", str(tmp_path / "t.jinja"), "--case", str(tmp_path / "case.json"))
    assert plain.returncode == 0 and plain.stdout == "<|im_start|>user\nHi<|im_end|><|im_start|>assistant"
    as_json = cli("render", "--chat-template", str(tmp_path / "t.jinja"), "--case", str(tmp_path / "case.json"), "--json")
    data = json.loads(as_json.stdout)
    assert data["prompt"] == plain.stdout and data["diagnostics"] == [] and data["generation_spans"] == []


def test_render_error_exits_1_with_located_diagnostic(cli, tmp_path: Path) -> None:
    (tmp_path / "t.jinja").write_text("ok\n{{ raise_exception('no system messages') }}")
    (tmp_path / "case.json").write_text(json.dumps({"messages": [{"role": "user", "content": "Hi"}]}))
    result = cli("render", "--chat-template", str(tmp_path / "t.jinja"), "--case", str(tmp_path / "case.json"), "--json")
    assert result.returncode == 1
    [d] = json.loads(result.stdout)["diagnostics"]
    assert d["line"] == 2 and "no system messages" in d["message"]


def test_bad_usage_exits_2(cli, tmp_path: Path) -> None:
    missing = cli("render", "--chat-template", str(tmp_path / "nope.jinja"), "--case", str(tmp_path / "c.json"))
    assert missing.returncode == 2 and "cannot read" in missing.stderr
    (tmp_path / "t.jinja").write_text(TEMPLATE)
    (tmp_path / "c.json").write_text("{bad json")
    bad = cli("render", "--chat-template", str(tmp_path / "t.jinja"), "--case", str(tmp_path / "c.json"))
    assert bad.returncode == 2 and "line 1, column 2" in bad.stderr


def test_trace_json_matches_parse_response(cli, tmp_path: Path) -> None:
    spec, prompt, output, tools = SCENARIOS["harmony channels, one character at a time"]
    (tmp_path / "spec.json").write_text(dump(spec))
    (tmp_path / "out.txt").write_text(output)
    (tmp_path / "prompt.txt").write_text(prompt)
    (tmp_path / "tools.json").write_text(json.dumps(tools))
    runs = [
        cli("trace", "--response-template", str(tmp_path / "spec.json"), "--output", str(tmp_path / "out.txt"),
               "--prefix", str(tmp_path / "prompt.txt"), "--tools", str(tmp_path / "tools.json"), *extra, "--json")
        for extra in ([], ["--chunk-size", "1"], ["--random-chunks", "7"])
    ]  # fmt: skip
    results = [json.loads(r.stdout) for r in runs]
    assert all(r.returncode == 0 for r in runs)
    assert results[0]["message"] == parse_response(output, spec, prefix=prompt, tools=tools)
    assert results[0]["segments"] == results[1]["segments"] == results[2]["segments"]
    assert "".join(output[s["start"] : s["end"]] for s in results[0]["segments"]) == output
    assert set(results[0]) >= {"message", "events", "prefix_events", "segments", "diagnostics"}


def test_trace_coloured_view_and_spec_errors(cli, tmp_path: Path) -> None:
    spec, prompt, output, _ = SCENARIOS["chatml answer with delimiter-like text"]
    (tmp_path / "spec.json").write_text(dump(spec))
    (tmp_path / "out.txt").write_text(output)
    view = cli("trace", "--response-template", str(tmp_path / "spec.json"), "--output", str(tmp_path / "out.txt"))
    assert view.returncode == 0 and "\x1b[" in view.stdout and '"content"' in view.stdout
    (tmp_path / "bad.json").write_text('{"start_anchor": "x",\n "fields": {"c": {"close_pattern": "("}}}')
    bad = cli("trace", "--response-template", str(tmp_path / "bad.json"), "--output", str(tmp_path / "out.txt"))
    assert bad.returncode == 1 and "line 2" in bad.stderr and "close_pattern" in bad.stderr


@pytest.mark.slow  # real `python -m engine` processes
def test_render_and_trace_run_as_real_processes(tmp_path: Path) -> None:
    """`python -m engine` itself, once per command, as a model repo's CI would call it."""
    (tmp_path / "t.jinja").write_text(TEMPLATE)
    (tmp_path / "case.json").write_text(json.dumps({"messages": [{"role": "user", "content": "Hi"}]}))
    rendered = engine_process("render", "--chat-template", tmp_path / "t.jinja", "--case", tmp_path / "case.json")
    assert rendered.returncode == 0 and rendered.stdout == "<|im_start|>user\nHi<|im_end|><|im_start|>assistant"
    spec, prompt, output, _ = SCENARIOS["chatml answer with delimiter-like text"]
    (tmp_path / "spec.json").write_text(dump(spec))
    (tmp_path / "out.txt").write_text(output)
    traced = engine_process("trace", "--response-template", tmp_path / "spec.json", "--output", tmp_path / "out.txt", "--json")
    assert traced.returncode == 0 and json.loads(traced.stdout)["message"]["role"] == "assistant"


def test_a_reader_that_stops_early_ends_the_command_quietly() -> None:
    """`python -m engine formats --json | head`: the reader closes the pipe after a few bytes; the
    command ends with the shell's code for a broken pipe (141) and no traceback."""
    process = subprocess.Popen([sys.executable, "-m", "engine", "formats", "--json"], cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stdout.read(10).startswith(b"[")
    process.stdout.close()  # the output is far larger than a pipe holds: the next write fails
    _, err = process.communicate(timeout=120)
    assert process.returncode == 141 and err == b"", err.decode()[-2000:]
