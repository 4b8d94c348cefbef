"""The local runner with a real (tiny, random-weight) Llama model and tokenizer built in a temp
folder: real `generate()` streaming with a scripted output, Stop, the size cap, safetensors only,
the offline Hub diagnostic, the one-model cache; `python -m engine run --runner local`."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import pytest

from engine.cases import Case, render_case
from engine.cli import main
from engine.runners import LocalRunner, RunnerError, held_model, load_model
from engine.trace import Trace
from tests.tiny_model import (
    CHATML_RESPONSE_TEMPLATE,
    CHATML_SPECIAL_TOKENS,
    CHATML_STOP_TOKENS,
    CHATML_TEMPLATE,
    WEATHER_TOOL,
    allow_only,
    build_tiny_model,
)

CASE = Case("tools", [{"role": "user", "content": "Weather in Paris?"}], tools=[WEATHER_TOOL])
SCRIPT = (
    "<think>\nThe user asks about the weather in Paris ☀️, so I call the tool.\n</think>\n\n"
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": "3", "unit": "celsius"}}\n</tool_call><|im_end|>'
)


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture(scope="module")
def prompt() -> str:
    return render_case(CHATML_TEMPLATE, CASE, CHATML_SPECIAL_TOKENS).prompt


def scripted(folder: Path, prompt: str, output: str, **settings) -> LocalRunner:
    """A runner whose random model is forced to write `output` (a `prefix_allowed_tokens_fn`)."""
    forcing = allow_only(load_model(str(folder)).tokenizer, prompt, output)
    return LocalRunner(str(folder), generate_kwargs={"prefix_allowed_tokens_fn": forcing}, **settings)


def test_streams_a_scripted_generation_token_by_token_and_parses(model_folder: Path, prompt: str) -> None:
    runner = scripted(model_folder, prompt, SCRIPT, max_new_tokens=200, temperature=0.7, seed=0,
                      stop_tokens=CHATML_STOP_TOKENS)
    trace = Trace(json.loads(CHATML_RESPONSE_TEMPLATE), prompt=prompt, tools=CASE.tools)
    chunks = []
    for chunk in runner.stream(prompt, tools=CASE.tools):
        chunks.append(chunk)
        trace.feed(chunk.text)
    trace.finalize()
    tokenizer = runner.tokenizer  # the runner says which tokenizer it ran with
    assert tokenizer is load_model(str(model_folder)).tokenizer
    ids = tokenizer.encode(SCRIPT, add_special_tokens=False)
    assert "".join(c.text for c in chunks) == SCRIPT  # special tokens kept: they are the delimiters
    assert chunks[0].text == "<think>" and chunks[-1].text == "<|im_end|>"
    assert chunks[-1].tokens == len(ids)  # every generated token counted, eos included
    # Per token, not per word: one chunk per token, except the emoji's 6 byte tokens (2 characters).
    assert len(chunks) == len(ids) - 4
    assert all(a.seconds <= b.seconds for a, b in zip(chunks, chunks[1:]))
    assert trace.diagnostics == []
    assert trace.message == {
        "role": "assistant",
        "reasoning_content": "The user asks about the weather in Paris ☀️, so I call the tool.",
        "tool_calls": [{"type": "function", "function": {"name": "get_weather",
                                                         "arguments": {"city": "Paris", "days": 3, "unit": "celsius"}}}],
    }  # fmt: skip
    assert not runner.thread.is_alive()


def test_prompt_is_tokenized_without_added_special_tokens(model_folder: Path) -> None:
    # A tokenizer that adds a BOS would shift the script by one; the runner must not let it.
    tokenizer = load_model(str(model_folder)).tokenizer
    text = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    runner = scripted(model_folder, text, "Hello!<|im_end|>", max_new_tokens=20)
    assert "".join(c.text for c in runner.stream(text)) == "Hello!<|im_end|>"
    assert tokenizer.encode(text, add_special_tokens=False) == tokenizer(text, add_special_tokens=False)["input_ids"]


def test_stop_tokens_end_generation(model_folder: Path, prompt: str) -> None:
    runner = scripted(model_folder, prompt, SCRIPT, max_new_tokens=200, stop_tokens=["</think>"])
    output = "".join(c.text for c in runner.stream(prompt))
    assert output == SCRIPT[: SCRIPT.index("</think>") + len("</think>")]


def test_max_new_tokens_cuts_the_output(model_folder: Path, prompt: str) -> None:
    runner = scripted(model_folder, prompt, SCRIPT, max_new_tokens=5)
    chunks = list(runner.stream(prompt))
    assert chunks[-1].tokens == 5 and SCRIPT.startswith("".join(c.text for c in chunks))


def test_stop_ends_generate_promptly_and_the_thread_is_gone(model_folder: Path, prompt: str) -> None:
    word = load_model(str(model_folder)).tokenizer.encode(" weather", add_special_tokens=False)
    runner = LocalRunner(str(model_folder), max_new_tokens=100_000, temperature=0,
                         generate_kwargs={"prefix_allowed_tokens_fn": lambda batch, ids: word})  # never ends alone
    stop = threading.Event()
    received = 0
    for _ in runner.stream(prompt, stop=stop):
        received += 1
        if received == 10:
            stop.set()
    # No token after the stop, and generate() (100,000 tokens to go) has ended: the thread is gone.
    assert received == 10
    runner.thread.join(timeout=30)
    assert not runner.thread.is_alive()


def test_closing_the_stream_also_stops_generation(model_folder: Path, prompt: str) -> None:
    word = load_model(str(model_folder)).tokenizer.encode(" weather", add_special_tokens=False)
    runner = LocalRunner(str(model_folder), max_new_tokens=100_000,
                         generate_kwargs={"prefix_allowed_tokens_fn": lambda batch, ids: word})
    stream = runner.stream(prompt)
    for _ in range(5):
        next(stream)
    stream.close()  # the UI dropped the run
    assert not runner.thread.is_alive()


def test_one_model_is_held_and_its_tokenizer_is_reachable(model_folder: Path, tmp_path: Path) -> None:
    first = load_model(str(model_folder))
    assert load_model(str(model_folder)) is first  # not loaded twice
    assert held_model() is first
    assert first.device == "cpu" and str(first.dtype) == "torch.float32" and 0 < first.size_gb < 0.01
    results: list = []
    threads = [threading.Thread(target=lambda: results.append(load_model(str(model_folder)))) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(result is first for result in results)
    copy = shutil.copytree(model_folder, tmp_path / "copy")
    second = load_model(str(copy))  # another model replaces the held one
    assert second is not first and held_model() is second


def test_size_cap_refuses_before_loading(model_folder: Path) -> None:
    held = held_model()
    with pytest.raises(RunnerError) as error:
        list(LocalRunner(str(model_folder) + "/", max_size_gb=1e-6).stream("Hi"))
    assert "GB of weights, over the 1e-06 GB limit" in error.value.diagnostic.message
    assert error.value.diagnostic.source == "runner" and "remote runner" in error.value.diagnostic.hint
    assert held_model() is held  # nothing was loaded or dropped


def test_pickled_weights_are_refused(model_folder: Path, tmp_path: Path) -> None:
    folder = tmp_path / "pickled"
    folder.mkdir()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        shutil.copy(model_folder / name, folder / name)
    (folder / "pytorch_model.bin").write_bytes(b"not loaded")
    with pytest.raises(RunnerError) as error:
        load_model(str(folder))
    assert "no .safetensors" in error.value.diagnostic.message and "pytorch_model.bin" in error.value.diagnostic.message


def test_a_model_id_without_the_hub_says_use_a_folder_or_a_recording(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_HOME", str(tmp_path))  # an empty cache
    monkeypatch.setattr("huggingface_hub.constants.HF_HUB_CACHE", str(tmp_path / "hub"))
    with pytest.raises(RunnerError) as error:
        list(LocalRunner("someone/not-a-real-model-xyz").stream("Hi"))
    diagnostic = error.value.diagnostic
    assert "Cannot reach the Hugging Face Hub" in diagnostic.message and "someone/not-a-real-model-xyz" in diagnostic.message
    assert "local folder" in diagnostic.hint and "recorded runner" in diagnostic.hint


def test_bad_settings_are_diagnostics(tmp_path: Path) -> None:
    for settings in ({"max_new_tokens": 0}, {"temperature": -1}, {"top_p": 0}):
        with pytest.raises(RunnerError):
            LocalRunner("x", **settings)
    with pytest.raises(RunnerError, match="No folder"):
        load_model(str(tmp_path / "missing" / "folder"))
    with pytest.raises(RunnerError, match="No model given"):
        load_model("  ")


def test_cli_runs_a_local_folder(model_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    # In-process (`main` is what `python -m engine` calls): a subprocess would import torch again.
    (tmp_path / "chat.jinja").write_text(CHATML_TEMPLATE)
    (tmp_path / "response.json").write_text(CHATML_RESPONSE_TEMPLATE)
    (tmp_path / "case.json").write_text(json.dumps({"messages": CASE.messages, "special_tokens": CHATML_SPECIAL_TOKENS}))
    common = ["run", "--chat-template", str(tmp_path / "chat.jinja"), "--response-template", str(tmp_path / "response.json"),
              "--case", str(tmp_path / "case.json"), "--runner", "local", "--model", str(model_folder),
              "--max-new-tokens", "12", "--temperature", "0"]
    assert main([*common, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert 1 <= data["tokens"] <= 12 and data["raw"] and data["seconds"] > 0
    assert data["message"]["role"] == "assistant"
    assert "".join(data["raw"][s["start"] : s["end"]] for s in data["segments"]) == data["raw"]
    assert main(common) == 0  # the coloured teaching view, then the message
    shown = capsys.readouterr()
    assert "\x1b[" in shown.out and '"role": "assistant"' in shown.out and "tokens in" in shown.err
    assert main([*common, "--max-size-gb", "0.000001"]) == 1  # a runner error: exit 1, diagnostic printed
    assert "GB limit" in capsys.readouterr().err
