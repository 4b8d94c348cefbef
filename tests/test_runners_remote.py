"""The remote runner against a real OpenAI-compatible server: `transformers serve` started here on
127.0.0.1 with a tiny random-weight model, its output scripted through a `generation_config`
request field (a `sequence_bias` that forces each token). Streaming, parsing, the warnings about
stripped delimiters, Stop, server errors; `python -m engine run --runner remote`.

What `transformers serve` 5.24 does with raw completions, and the runner copes with: it rejects
unknown request fields (so `skip_special_tokens` gets a 422 and the runner retries without it),
and it always decodes with special tokens skipped, so `<|im_end|>` (special) never comes back while
`<think>` / `<tool_call>` (ordinary added tokens, as in Qwen3's tokenizer) do."""

from __future__ import annotations

import json
import os
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from engine.cases import Case, render_case
from engine.cli import main
from engine.runners import RemoteRunner, RunnerError, remote
from engine.trace import Trace
from tests.servers import free_port, serving
from tests.tiny_model import (
    CHATML_RESPONSE_TEMPLATE,
    CHATML_SPECIAL_TOKENS,
    CHATML_TEMPLATE,
    WEATHER_TOOL,
    build_tiny_model,
    build_tokenizer,
    forcing_bias,
)

CASE = Case("tools", [{"role": "user", "content": "Weather in Paris?"}], tools=[WEATHER_TOOL])
PROMPT = render_case(CHATML_TEMPLATE, CASE, CHATML_SPECIAL_TOKENS).prompt
SCRIPT = (
    "<think>\nThe user asks about the weather in Paris, so I call the tool.\n</think>\n\n"
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": "3", "unit": "celsius"}}\n</tool_call><|im_end|>'
)


@dataclass
class Server:
    url: str
    model: str
    tokenizer: object

    def script(self, output: str, prompt: str = PROMPT) -> dict:
        """Request fields that make the server's greedy decoding write `output` after `prompt`."""
        config = {"sequence_bias": forcing_bias(self.tokenizer, prompt, output), "do_sample": False,
                  "eos_token_id": self.tokenizer.eos_token_id, "pad_token_id": self.tokenizer.pad_token_id}
        return {"generation_config": json.dumps(config)}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    folder = build_tiny_model(tmp_path_factory.mktemp("served") / "model")
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_DISABLE_UPDATE_CHECK": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}
    command = [sys.executable, "-m", "transformers.cli.transformers", "serve", str(folder),
               "--host", "127.0.0.1", "--port", str(port)]  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    with serving(command, url + "/health", folder.parent / "serve.log", env=env):
        yield Server(url, str(folder), build_tokenizer())


@pytest.mark.slow  # a real `transformers serve` (started once for the module)
def test_the_tokenizer_matches_the_served_one(server: Server) -> None:
    from transformers import AutoTokenizer

    served = AutoTokenizer.from_pretrained(server.model)
    assert served.encode(SCRIPT, add_special_tokens=False) == server.tokenizer.encode(SCRIPT, add_special_tokens=False)


@pytest.mark.slow  # a real `transformers serve` (started once for the module)
def test_streams_a_scripted_completion_and_parses_it(server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    events = []  # the server's events as the runner read them, to compare with what it passed on
    read_events = remote._events

    def recorded(*args, **kwargs):
        for data in read_events(*args, **kwargs):
            events.append(data)
            yield data

    monkeypatch.setattr(remote, "_events", recorded)
    runner = RemoteRunner(server.url, server.model, max_tokens=200, temperature=0,
                          response_template=CHATML_RESPONSE_TEMPLATE, extra_body=server.script(SCRIPT))
    trace = Trace(json.loads(CHATML_RESPONSE_TEMPLATE), prompt=PROMPT, tools=CASE.tools)
    chunks = []
    for chunk in runner.stream(PROMPT, tools=CASE.tools):
        chunks.append(chunk)
        trace.feed(chunk.text)
    trace.finalize()
    output = "".join(c.text for c in chunks)
    # The server keeps the ordinary added tokens but drops the special end-of-turn token.
    assert output == SCRIPT.removesuffix("<|im_end|>")
    # Streamed as the server sent it: one chunk per event that carries text, none held back or merged.
    # (transformers serve sends one event per token on a quiet machine; a reader that fell behind the
    # generation joins the texts already queued into one event, so the count of events is the server's.)
    texts = [remote._parse_event(data)[0] for data in events if data != "[DONE]"]
    assert [c.text for c in chunks] == [text for text in texts if text]
    tokens = len(server.tokenizer.encode(SCRIPT, add_special_tokens=False)) - 1
    assert 1 < len(chunks) <= tokens
    assert [c.tokens for c in chunks] == list(range(1, len(chunks) + 1))
    assert runner.finish_reason == "stop"
    assert trace.diagnostics == []
    assert trace.message == {
        "role": "assistant",
        "reasoning_content": "The user asks about the weather in Paris, so I call the tool.",
        "tool_calls": [{"type": "function", "function": {"name": "get_weather",
                                                         "arguments": {"city": "Paris", "days": 3, "unit": "celsius"}}}],
    }  # fmt: skip
    # transformers serve rejects skip_special_tokens (422): the runner retried without it, and says so.
    assert [d.severity for d in runner.diagnostics] == ["warning"]
    assert "skip_special_tokens" in runner.diagnostics[0].message


@pytest.mark.slow  # a real `transformers serve` (started once for the module)
def test_warns_when_the_output_comes_back_without_delimiters(server: Server) -> None:
    prompt = render_case(CHATML_TEMPLATE, Case("hi", [{"role": "user", "content": "Hi"}]), CHATML_SPECIAL_TOKENS).prompt
    runner = RemoteRunner(server.url, server.model, max_tokens=50, temperature=0,
                          response_template=CHATML_RESPONSE_TEMPLATE,
                          extra_body=server.script("Hello there!<|im_end|>", prompt))
    output = "".join(c.text for c in runner.stream(prompt))
    assert output == "Hello there!"  # <|im_end|> was dropped by the server
    warnings = [d.message for d in runner.diagnostics]
    assert any("none of the response template's delimiters" in m and "<|im_end|>" in m for m in warnings), warnings
    # Had the server kept the end-of-turn token, there would be nothing to warn about.
    quiet = RemoteRunner(server.url, server.model, response_template=CHATML_RESPONSE_TEMPLATE)
    quiet.finish_reason = "stop"
    quiet._check_delimiters("Hello there!<|im_end|>")
    assert quiet.diagnostics == []


@pytest.mark.slow  # a real `transformers serve` (started once for the module)
def test_stop_closes_the_stream_promptly_and_the_server_carries_on(server: Server) -> None:
    word = server.tokenizer.encode(" weather", add_special_tokens=False)
    endless = {"generation_config": json.dumps({"sequence_bias": [[word, 100.0]], "do_sample": False,
                                                "eos_token_id": server.tokenizer.eos_token_id})}
    runner = RemoteRunner(server.url, server.model, max_tokens=20_000, temperature=0, extra_body=endless)
    stop = threading.Event()
    received = 0
    for _ in runner.stream(PROMPT, stop=stop):
        received += 1
        if received == 5:
            stop.set()
    assert received == 5  # nothing after the stop, though the server had 20,000 tokens to go
    again = RemoteRunner(server.url, server.model, max_tokens=3, temperature=0)
    assert len(list(again.stream(PROMPT))) <= 3  # the server is still serving


@pytest.mark.slow  # a real `transformers serve` (started once for the module)
def test_server_problems_are_diagnostics(server: Server) -> None:
    with pytest.raises(RunnerError) as error:
        list(RemoteRunner(server.url, "some/other-model", max_tokens=2).stream(PROMPT))
    assert "400" in error.value.diagnostic.message and "pinned" in error.value.diagnostic.message
    with pytest.raises(RunnerError) as error:
        list(RemoteRunner(server.url + "/nowhere", server.model, max_tokens=2).stream(PROMPT))
    assert "404" in error.value.diagnostic.message and "completions" in error.value.diagnostic.hint
    closed = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(RunnerError) as error:
        list(RemoteRunner(closed, server.model, api_key="sk-secret-123").stream(PROMPT))
    assert "Cannot connect" in error.value.diagnostic.message and "sk-secret" not in str(error.value.diagnostic)
    assert "sk-secret" not in repr(RemoteRunner(closed, "m", api_key="sk-secret-123"))
    for url in ("", "localhost:8000", "ftp://host"):
        with pytest.raises(RunnerError, match="Not a server URL"):
            RemoteRunner(url, "m")


def test_base_url_with_or_without_v1() -> None:
    assert RemoteRunner("http://h:1", "m").path == "/v1/completions"
    assert RemoteRunner("http://h:1/v1/", "m").path == "/v1/completions"
    assert RemoteRunner("https://h/api/v1", "m").path == "/api/v1/completions"


@pytest.mark.slow  # a real `transformers serve` (started once for the module)
def test_cli_runs_against_the_server(server: Server, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "chat.jinja").write_text(CHATML_TEMPLATE)
    (tmp_path / "response.json").write_text(CHATML_RESPONSE_TEMPLATE)
    (tmp_path / "case.json").write_text(json.dumps({"messages": CASE.messages, "special_tokens": CHATML_SPECIAL_TOKENS}))
    argv = ["run", "--chat-template", str(tmp_path / "chat.jinja"), "--response-template", str(tmp_path / "response.json"),
            "--case", str(tmp_path / "case.json"), "--runner", "remote", "--url", server.url, "--model", server.model,
            "--max-new-tokens", "6", "--temperature", "0", "--json"]
    assert main(argv) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) == {"raw", "message", "events", "segments", "diagnostics", "tokens", "seconds"}
    assert 1 <= data["tokens"] <= 6 and data["message"]["role"] == "assistant"
    assert any("skip_special_tokens" in d["message"] for d in data["diagnostics"])
    assert main([*argv[:-1], "--api-key-env", "PLAYGROUND_TEST_UNSET_KEY"]) == 2  # an unset key variable: bad usage
