"""The recorded runner: splitting output into tokens, pacing, stopping, and replaying every preset
recording through the trace to its expected message; `python -m engine run --runner recorded`."""

from __future__ import annotations

import json
import random
import threading
import time
from pathlib import Path

import pytest

from engine.cases import render_case
from engine.presets import load_preset, preset_names
from engine.runners import Chunk, RecordedRunner, Runner, RunnerError, split_tokens
from engine.trace import Trace
from engine.workspace import passed_kwargs
from tests.tiny_model import CHATML_RESPONSE_TEMPLATE, CHATML_TEMPLATE, build_tokenizer

RECORDINGS = [(name, r.name) for name in preset_names() for r in load_preset(name).recordings]


def test_fallback_splitter_keeps_special_tokens_whole_and_cuts_words() -> None:
    text = '<|im_start|>assistant\n<think>\nHmm, 2 < 3.\n</think>\n\n<tool_call>\n{"a": 1}\n</tool_call>[TOOL_CALLS]<|im_end|>'
    pieces = split_tokens(text)
    assert "".join(pieces) == text
    for delimiter in ["<|im_start|>", "<think>", "</think>", "<tool_call>", "</tool_call>", "[TOOL_CALLS]", "<|im_end|>"]:
        assert delimiter in pieces, delimiter
    assert " <" in pieces and " 2" in pieces and "2" not in pieces  # a lone "<" is punctuation, not a tag
    assert pieces[1:6] == ["assistant", "\n", "<think>", "\n", "Hmm"]  # words with their leading space, alone


def test_fallback_splitter_tiles_any_text() -> None:
    rng = random.Random(7)
    alphabet = list("ab <>|/\n\t{}[]\"'é日_-.") + ["<think>", "<|im_end|>", "</tool_call>", "<｜end▁of▁sentence｜>"]
    for _ in range(2000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        assert "".join(split_tokens(text)) == text, text
    assert split_tokens("") == []


def test_splitting_with_a_tokenizer_gives_its_tokens() -> None:
    tokenizer = build_tokenizer()
    text = "<think>\nThe user asks about the weather in Paris.\n</think>\n\nSunny!<|im_end|>"
    pieces = split_tokens(text, tokenizer)
    ids = tokenizer.encode(text, add_special_tokens=False)
    assert pieces == [tokenizer.decode([i]) for i in ids]
    assert pieces != split_tokens(text)  # really the tokenizer's cut ("S", "unn", "y"), not the fallback's
    # Byte-level tokens inside one character (6 tokens for "☀️") stay together: pieces are whole text.
    emoji = "Sun ☀️!"
    pieces = split_tokens(emoji, tokenizer)
    assert "".join(pieces) == emoji and "☀" in pieces
    assert len(pieces) < len(tokenizer.encode(emoji, add_special_tokens=False))


def test_replay_streams_cumulative_tokens_and_satisfies_the_runner_interface() -> None:
    runner = RecordedRunner("Hello there, world!<|im_end|>")
    assert isinstance(runner, Runner)
    chunks = list(runner.stream("any prompt"))
    assert all(isinstance(c, Chunk) for c in chunks)
    assert "".join(c.text for c in chunks) == "Hello there, world!<|im_end|>"
    assert [c.tokens for c in chunks] == list(range(1, len(chunks) + 1))
    assert all(a.seconds <= b.seconds for a, b in zip(chunks, chunks[1:]))


def test_pace_in_tokens_per_second() -> None:
    text = " ".join(["word"] * 10)  # 10 pieces
    started = time.monotonic()
    chunks = list(RecordedRunner(text, tokens_per_second=40).stream(""))
    elapsed = time.monotonic() - started
    assert len(chunks) == 10
    assert elapsed >= 9 / 40 - 0.02  # the 10th token is due 9/40 s after the first
    assert chunks[-1].seconds >= 9 / 40 - 0.02


def test_stop_ends_a_slow_replay_at_once() -> None:
    stop = threading.Event()
    runner = RecordedRunner(" ".join(["word"] * 100), tokens_per_second=5)  # would take 20 s
    received = []
    started = time.monotonic()
    for chunk in runner.stream("", stop=stop):
        received.append(chunk)
        if len(received) == 2:
            threading.Timer(0.1, stop.set).start()
    assert len(received) == 2
    assert time.monotonic() - started < 10  # far sooner than the 20 s the replay would take


def test_empty_recording_warns_and_bad_settings_are_diagnostics() -> None:
    runner = RecordedRunner("")
    assert list(runner.stream("")) == []
    assert runner.diagnostics and runner.diagnostics[0].severity == "warning"
    with pytest.raises(RunnerError) as error:
        RecordedRunner("text", tokens_per_second=-1)
    assert error.value.diagnostic.source == "runner" and "negative" in error.value.diagnostic.message
    with pytest.raises(RunnerError):
        RecordedRunner(None)  # type: ignore[arg-type]


@pytest.mark.parametrize("name, recording_name", RECORDINGS)
def test_every_preset_recording_replays_to_its_expected_message(name: str, recording_name: str) -> None:
    preset = load_preset(name)
    recording = preset.recording(recording_name)
    case = preset.case(recording.case)
    kwargs = passed_kwargs(preset.kwarg_specs())
    prompt = render_case(preset.chat_template, case, preset.special_tokens, kwargs).prompt
    assert prompt is not None
    trace = Trace(preset.response_spec, prompt=prompt, tools=case.tools)
    chunks = list(RecordedRunner(recording.output).stream(prompt, tools=case.tools))
    assert "".join(c.text for c in chunks) == recording.output
    for chunk in chunks:
        trace.feed(chunk.text)
    trace.finalize()
    if recording.expected is not None:
        assert trace.message == recording.expected




def test_cli_replays_a_recording_file_with_json(cli, tmp_path: Path) -> None:
    (tmp_path / "chat.jinja").write_text(CHATML_TEMPLATE)
    (tmp_path / "response.json").write_text(CHATML_RESPONSE_TEMPLATE)
    (tmp_path / "case.json").write_text(json.dumps({"messages": [{"role": "user", "content": "Hi"}],
                                                    "special_tokens": {"eos_token": "<|im_end|>"}}))
    output = "<think>\nA greeting.\n</think>\n\nHello!<|im_end|>"
    (tmp_path / "out.txt").write_text(output)
    common = ["--chat-template", str(tmp_path / "chat.jinja"), "--response-template", str(tmp_path / "response.json"),
              "--case", str(tmp_path / "case.json"), "--runner", "recorded", "--recording", str(tmp_path / "out.txt")]
    result = cli("run", *common, "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert set(data) == {"raw", "message", "events", "segments", "diagnostics", "tokens", "seconds"}
    assert data["raw"] == output
    assert data["message"] == {"role": "assistant", "reasoning_content": "A greeting.", "content": "Hello!"}
    assert data["tokens"] == len(split_tokens(output))
    assert data["segments"][0] == {"start": 0, "end": 7, "kind": "open", "field": "reasoning_content"}
    assert data["segments"][-1]["end"] == len(output)

    coloured = cli("run", *common)  # the teaching view: coloured regions, then the message
    assert coloured.returncode == 0, coloured.stderr
    assert "\x1b[7;" in coloured.stdout and "<think>" in coloured.stdout  # a delimiter in reverse video
    assert '"content": "Hello!"' in coloured.stdout


def test_cli_replays_a_preset_recording(cli) -> None:
    name, recording_name = RECORDINGS[0]
    preset = load_preset(name)
    recording = preset.recording(recording_name)
    result = cli("run", "--preset", name, "--case", recording.case, "--runner", "recorded",
                      "--recording", recording_name, "--json")
    data = json.loads(result.stdout)
    errors = [d for d in data["diagnostics"] if d["severity"] == "error"]
    assert result.returncode == (1 if errors else 0), result.stderr
    assert data["raw"] == recording.output
    if recording.expected is not None:
        assert data["message"] == recording.expected


def test_cli_bad_usage_exits_2(cli, tmp_path: Path) -> None:
    result = cli("run", "--preset", "no-such-preset", "--case", "x", "--runner", "recorded")
    assert result.returncode == 2 and "no-such-preset" in result.stderr
    (tmp_path / "chat.jinja").write_text(CHATML_TEMPLATE)
    result = cli("run", "--chat-template", str(tmp_path / "chat.jinja"), "--case", "x", "--runner", "recorded")
    assert result.returncode == 2 and "--response-template" in result.stderr
