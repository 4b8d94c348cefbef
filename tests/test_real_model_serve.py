"""The consumer sees what the playground showed. A template pair is published into a model folder
(the files `save_pretrained` writes: chat_template.jinja, and tokenizer_config.json with its
`response_template`) beside the real SmolLM2 weights; `transformers serve` serves that folder on
127.0.0.1; an OpenAI client asks it the playground's case, and receives the message (content and
reasoning_content) that the playground's trace parsed from its own run of the same model on the
prompt it rendered; streamed, the deltas are the text the page's events showed for each region.

The pair is a ChatML format with reasoning, written for this test: history turns carry their
reasoning in `<think>` tags and the generation prompt opens `<think>` (as reasoning models' templates
prefill it). SmolLM2 was never trained on it, so the case shows it one earlier turn, which it follows:
it writes its reasoning, `</think>`, then its answer."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from engine.cases import Case
from engine.hub import load_folder
from engine.publish import plan_publish
from engine.runners import LocalRunner
from engine.trace import Trace
from engine.workspace import Workspace
from tests.real_model import RealModel
from tests.servers import free_port, serving

# The real model run by the playground and by `transformers serve`, a real server (pytest.ini: the fast loop
# leaves them out).
pytestmark = pytest.mark.slow

CHAT_TEMPLATE = """\
{%- for message in messages -%}
{{- '<|im_start|>' + message.role + '\\n' -}}
{%- if message.role == 'assistant' and message.reasoning_content -%}
{{- '<think>\\n' + message.reasoning_content + '\\n</think>\\n\\n' -}}
{%- endif -%}
{{- message.content + '<|im_end|>\\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n<think>\\n' -}}{%- endif -%}
"""
RESPONSE_TEMPLATE = json.dumps({
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>", "content": "text"},
        "content": {"close": "<|im_end|>", "content": "text"},
    },
}, indent=2)  # fmt: skip
# `transformers serve` hands a template only each message's role and content (and tool calls), so the
# earlier turn shows its reasoning as the template would have written it into its content.
EXAMPLE = "<think>\nTwo plus two makes four.\n</think>\n\nThe answer is 4."
MESSAGES = [
    {"role": "user", "content": "What is 2 + 2?"},
    {"role": "assistant", "content": EXAMPLE},
    {"role": "user", "content": "What is 3 + 5?"},
]
NEW_TOKENS = 40
WEIGHTS = ("config.json", "generation_config.json", "model.safetensors")


@pytest.fixture(scope="module")
def published(smollm2: RealModel, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A model folder: SmolLM2's converted files, then the template pair published into it."""
    folder = tmp_path_factory.mktemp("published") / "model"
    folder.mkdir()
    for name in WEIGHTS:
        (folder / name).symlink_to(smollm2.folder / name)  # 538 MB: linked, not copied
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        shutil.copy(smollm2.folder / name, folder / name)
    plan = plan_publish(str(folder), CHAT_TEMPLATE, RESPONSE_TEMPLATE)
    assert plan.ok, plan.diagnostics
    for path, data in plan.files.items():
        (folder / path).write_bytes(data)
    return folder


@pytest.fixture(scope="module")
def playground(published: Path, smollm2: RealModel) -> dict:
    """What the playground shows for the case, with the folder's templates: the prompt it renders
    and the message its trace parses from the real model's greedy output."""
    loaded = load_folder(published)
    assert loaded.ok and json.loads(loaded.response_template) == json.loads(RESPONSE_TEMPLATE)
    workspace = Workspace(chat_template=loaded.chat_template, response_template=loaded.response_template,
                          special_tokens=dict(loaded.special_tokens), cases=[Case("sum", MESSAGES)], case_name="sum")
    prompt = workspace.render().prompt
    runner = LocalRunner(smollm2.name, max_new_tokens=NEW_TOKENS, temperature=0, stop_tokens=["<|im_end|>"])
    trace = Trace(json.loads(loaded.response_template), prompt=prompt)
    for chunk in runner.stream(prompt):
        trace.feed(chunk.text)
    trace.finalize()
    # What the page's events show of each region: from the prompt (the `<think>` it opened), then as it
    # streamed (the message holds each value as it closed).
    streamed = {field: "".join(e["text"] for e in [*trace.initial_events, *trace.events]
                               if e["type"] == "region_chunk" and e.get("field") == field and not e.get("dirty"))
                for field in ("content", "reasoning_content")}
    return {"prompt": prompt, "output": trace.output, "message": trace.message, "diagnostics": trace.diagnostics,
            "streamed": streamed}


@pytest.fixture(scope="module")
def server(published: Path):
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_DISABLE_UPDATE_CHECK": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}
    command = [sys.executable, "-m", "transformers.cli.transformers", "serve", str(published),
               "--host", "127.0.0.1", "--port", str(port)]  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    with serving(command, url + "/health", published.parent / "serve.log", env=env, timeout=180):
        yield url


def test_the_playground_splits_the_real_output_into_reasoning_and_content(playground: dict, published: Path) -> None:
    from transformers import AutoTokenizer

    # The consumer renders the same prompt from the published folder.
    consumer = AutoTokenizer.from_pretrained(str(published))
    assert consumer.apply_chat_template(MESSAGES, add_generation_prompt=True, tokenize=False) == playground["prompt"]
    assert consumer.response_template == json.loads(RESPONSE_TEMPLATE)
    message = playground["message"]
    assert playground["output"].endswith("<|im_end|>") and "</think>" in playground["output"]
    assert message["reasoning_content"] and message["content"] and "8" in message["content"]
    assert playground["diagnostics"] == []


def test_an_openai_client_receives_the_message_the_playground_parsed(server: str, published: Path,
                                                                     playground: dict) -> None:
    from openai import OpenAI

    client = OpenAI(base_url=server + "/v1", api_key="not-needed", max_retries=0, timeout=120)
    expected = playground["message"]
    reply = client.chat.completions.create(model=str(published), messages=MESSAGES, temperature=0,
                                           max_tokens=NEW_TOKENS)
    got = reply.choices[0].message
    assert (got.content, getattr(got, "reasoning_content", None)) == (expected["content"], expected["reasoning_content"])
    assert reply.choices[0].finish_reason == "stop"
    # Streamed, the deltas are the regions' text as the page's events showed them streaming (the
    # parsed value, as each region closed, is that text stripped: transformers' `text` content).
    content, reasoning = "", ""
    for event in client.chat.completions.create(model=str(published), messages=MESSAGES, temperature=0,
                                                max_tokens=NEW_TOKENS, stream=True):
        if event.choices:
            delta = event.choices[0].delta
            content += delta.content or ""
            reasoning += getattr(delta, "reasoning_content", None) or ""
    assert (content, reasoning) == (playground["streamed"]["content"], playground["streamed"]["reasoning_content"])
    assert (content.strip(), reasoning.strip()) == (expected["content"], expected["reasoning_content"])
