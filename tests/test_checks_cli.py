"""`python -m engine check` on real files, as a model repo's CI runs it: one real subprocess, the
rest through the same entry point in-process (starting Python and transformers takes seconds)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.commands._model_inputs import response_template_in
from tests.conftest import engine_process
from tests.token_support import tokenizer_files

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "checks"
CHATML = FIXTURES / "chatml"


@pytest.fixture
def check(cli):
    """`python -m engine check ARGS`, in this process (see the `cli` fixture)."""
    return lambda *args: cli("check", *args)


def pair(*extra: str, response: Path = CHATML / "response_template.json") -> list[str]:
    return ["--chat-template", CHATML / "chat_template.jinja", "--response-template", response,
            "--cases", CHATML / "cases.json", "--recordings", CHATML / "recordings.json", "--random-splits", "20", *extra]  # fmt: skip


@pytest.mark.slow  # a real `python -m engine check` process
def test_a_sound_pair_exits_0_and_prints_every_check_as_json(tmp_path: Path) -> None:
    files = tokenizer_files(("<|im_start|>", "<|im_end|>"), ("<think>", "</think>", "<tool_call>", "</tool_call>"),
                            eos="<|im_end|>")
    (tmp_path / "tokenizer.json").write_bytes(files.tokenizer_json)
    (tmp_path / "tokenizer_config.json").write_bytes(files.config)
    result = engine_process("check", *pair("--json", "--stop-token", "<|im_end|>", "--tokenizer", tmp_path))
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert set(data) == {"checks", "diagnostics", "engines"} and data["diagnostics"] == []
    assert all(set(c) == {"name", "status", "details", "location", "subject", "intended"} for c in data["checks"])
    # Every check passes; notes: <tools> is written as plain text (as Qwen's tokenizers have it), the
    # template has no {% generation %} blocks, and a value holding the format's own </tool_call> does not
    # parse (no format claims its models write that).
    assert [(c["name"], c["status"]) for c in data["checks"] if c["status"] != "pass"] == [
        ("robustness.values.delimiters", "info"), ("tokens.special_text", "info"), ("tokens.training_mask", "info")]
    assert {c["name"] for c in data["checks"]} >= {"robustness.values.strings", "robustness.text.after", "robustness.end_token"}
    assert {c["name"] for c in data["checks"]} >= {"tokens.double_bos", "tokens.special_text", "tokens.stop_tokens",
                                                   "tokens.delimiter_boundaries"}
    assert {cell["status"] for row in data["engines"].values() for cell in row.values()} == {"identical"}
    streamed = [c for c in data["checks"] if c["name"] == "streaming"]
    assert streamed and all("token chunks" in c["details"] and "20 random splits" in c["details"] for c in streamed)


def test_a_failing_check_exits_1_with_its_location(check) -> None:
    response = FIXTURES / "broken" / "wrong_start_anchor.json"
    result = check(*pair("--json", response=response))
    assert result.returncode == 1
    failed = [c for c in json.loads(result.stdout)["checks"] if c["name"] == "response_lint.start_anchor"]
    assert failed and failed[0]["status"] == "fail"
    assert failed[0]["location"] == {"source": "response_template", "line": 3, "column": 3}
    text = check(*pair(response=response))
    assert text.returncode == 1 and "FAIL  response_lint.start_anchor [case 'greeting'] at response_template:3:3" in text.stdout
    assert text.stdout.rstrip().endswith("failed")


def test_warnings_pass_unless_strict(check) -> None:
    chat = FIXTURES / "broken" / "python_method.jinja"
    args = ["--chat-template", chat, "--response-template", CHATML / "response_template.json", "--random-splits", "0"]
    assert check(*args).returncode == 0
    strict = check(*args, "--strict")
    assert strict.returncode == 1 and "WARN  chat_lint.python_method" in strict.stdout


def test_a_tokenizer_config_is_read_and_locations_point_into_it(check, tmp_path: Path) -> None:
    spec = json.loads((FIXTURES / "broken" / "unused_group.json").read_text())
    config = tmp_path / "tokenizer_config.json"
    config.write_text(json.dumps({"eos_token": "<|im_end|>", "model_max_length": 4096, "response_template": spec}, indent=2))
    result = check("--chat-template", CHATML / "chat_template.jinja", "--response-template", config, "--random-splits", "0", "--json")
    [unused] = [c for c in json.loads(result.stdout)["checks"] if c["name"] == "response_lint.unused_group" and c["status"] != "pass"]
    lines = config.read_text().splitlines()
    line = unused["location"]["line"]
    assert lines[line - 1][unused["location"]["column"] - 1 :].startswith('"open_pattern"')
    # The file's special tokens are what the chat template reads as eos_token etc.
    text, origin, tokens = response_template_in(config.read_text(), str(config))
    assert json.loads(text) == spec and origin.place(1, 1) == (4, 24) and tokens == {"eos_token": "<|im_end|>"}


def test_bad_usage_exits_2(check) -> None:
    assert check("--preset", "no-such-preset").returncode == 2
    assert check("--random-splits", "0").returncode == 2  # nothing to check
    assert check("--preset", "blank", "--cases", CHATML / "cases.json").returncode == 2
    missing = check("--chat-template", "missing.jinja", "--response-template", CHATML / "response_template.json")
    assert missing.returncode == 2 and "cannot read missing.jinja" in missing.stderr


def test_a_preset(check) -> None:
    result = check("--preset", "blank", "--json", "--random-splits", "20")
    assert result.returncode == 0 and json.loads(result.stdout)["checks"]
