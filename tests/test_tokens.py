"""The token view: tokenizers loaded from files, the Hub stand-in and folders; the prompt's tokens;
and the assistant mask, equal to `apply_chat_template(..., return_assistant_tokens_mask=True)`."""

from __future__ import annotations

import json

import pytest

from engine.cases import generation_start
from engine.presets import load_preset, preset_names
from engine.render import render
from engine.tokens import (
    load_tokenizer_bytes,
    load_tokenizer_path,
    load_tokenizer_repo,
    load_tokenizer_uploads,
    prompt_tokens,
    token_view,
)
from engine.workspace import Workspace
from tests.fake_hub import FakeHub, no_ambient_credentials  # noqa: F401 - an autouse fixture
from tests.token_support import format_tokenizer, tiny, tokenizer_files

CHATML = ("<|im_start|>", "<|im_end|>")


def preset_pairs():
    for name in preset_names():
        preset = load_preset(name)
        for case in preset.cases:
            if not case.continue_final_message:
                yield pytest.param(name, case.name, id=f"{name}:{case.name}")


@pytest.mark.parametrize(("preset_name", "case_name"), list(preset_pairs()))
def test_mask_equals_apply_chat_template_on_every_preset_case(preset_name, case_name):
    workspace = Workspace.from_preset(load_preset(preset_name))
    case = workspace.find_case(case_name)
    loaded = format_tokenizer(workspace.chat_template, workspace.special_tokens, workspace.stop_tokens)
    result = workspace.render(case)
    assert result.ok, result.diagnostics
    view = token_view(loaded.tokenizer, result.prompt, result.generation_spans)
    kwargs = {**workspace.special_tokens, **workspace.template_kwargs(), **case.special_tokens, **case.template_kwargs}
    expected = loaded.tokenizer.apply_chat_template(
        case.messages, tools=case.tools, documents=case.documents, chat_template=workspace.chat_template,
        add_generation_prompt=case.add_generation_prompt, return_dict=True, return_assistant_tokens_mask=True,
        **kwargs)
    assert view.ids == list(expected["input_ids"])
    assert view.assistant_mask == list(expected["assistant_masks"])
    if preset_name == "smollm3" and any(m["role"] == "assistant" for m in case.messages):
        assert view.assistant_count > 0  # the template has {% generation %} blocks: the mask is not empty


def test_mask_with_a_span_that_starts_inside_a_token():
    # "x{% generation %}" cuts a word: the token that overlaps the span is masked, as transformers does.
    template = "{% for m in messages %}{{ m.role }}:{% if m.role == 'assistant' %}{% generation %}{{ m.content }}{% endgeneration %}{% else %}{{ m.content }}{% endif %}\n{% endfor %}"
    messages = [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "weather in Paris"}]
    loaded = tiny()
    result = render(template, messages)
    view = token_view(loaded.tokenizer, result.prompt, result.generation_spans)
    expected = loaded.tokenizer.apply_chat_template(messages, chat_template=template, return_dict=True,
                                                    return_assistant_tokens_mask=True)
    assert view.assistant_mask == expected["assistant_masks"] and 0 < view.assistant_count < view.count


def test_view_marks_special_tokens_generation_prompt_and_what_add_special_tokens_adds():
    loaded = tiny(CHATML, bos="<s>", add_bos=True)
    template = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    messages = [{"role": "user", "content": "Hello"}]
    result = render(template, messages, add_generation_prompt=True)
    start = generation_start(template, _case(messages), result.prompt)
    view = token_view(loaded.tokenizer, result.prompt, result.generation_spans, start)
    texts = [result.prompt[a:b] for a, b in view.offsets]
    assert "".join(texts) == result.prompt
    assert [t for t, s in zip(texts, view.special) if s] == ["<|im_start|>", "<|im_end|>", "<|im_start|>"]
    assert "".join(texts[view.generation_token:]) == "<|im_start|>assistant\n"
    assert view.added_before == [loaded.tokenizer.convert_tokens_to_ids("<s>")] and view.added_after == []
    cells = view.cells(len(result.prompt))
    assert "".join(result.prompt[a:b] for a, b, _ in cells) == result.prompt
    assert sum(len(t) for _, _, t in cells) == view.count


def _case(messages):
    from engine.cases import Case

    return Case("c", messages)


def test_bounded_view_in_the_worker_matches_the_view_in_process():
    files = tokenizer_files(CHATML)
    loaded = tiny(CHATML)
    prompt = "<|im_start|>user\nThe weather in Paris<|im_end|>\n"
    here = token_view(loaded.tokenizer, prompt, [(5, 20)], 30)
    for _ in range(2):  # the second call finds the tokenizer cached in the worker (sends only its key)
        there = prompt_tokens(files, prompt, [(5, 20)], 30, timeout=30, owner="tokens-test")
        assert there.diagnostics == [] and there.ids == here.ids and there.assistant_mask == here.assistant_mask
        assert there.generation_token == here.generation_token


def test_loading_refuses_what_is_not_a_fast_tokenizer_json():
    assert load_tokenizer_bytes(b"not json")[1][0].message.startswith("tokenizer.json is not valid JSON")
    assert "no 'model'" in load_tokenizer_bytes(b"{}")[1][0].message
    loaded, problems = load_tokenizer_uploads({"tokenizer.model": b"\x00"})
    assert loaded is None and "Only a slow tokenizer" in problems[0].message
    files = tokenizer_files(CHATML)
    loaded, problems = load_tokenizer_uploads({"tokenizer.json": files.tokenizer_json, "notes.txt": b"x"})
    assert loaded is not None and "Ignored notes.txt" in problems[0].message


def test_size_bound(monkeypatch):
    monkeypatch.setattr("engine.tokens.load.MAX_TOKENIZER_BYTES", 100)
    loaded, problems = load_tokenizer_bytes(tokenizer_files(CHATML).tokenizer_json)
    assert loaded is None and "over the 0 MB limit" in problems[0].message


def test_folder_and_file_in_local_mode_refused_in_public_mode(tmp_path, monkeypatch):
    files = tokenizer_files(CHATML, eos="<|im_end|>")
    (tmp_path / "tokenizer.json").write_bytes(files.tokenizer_json)
    (tmp_path / "tokenizer_config.json").write_bytes(files.config)
    for path in (tmp_path, tmp_path / "tokenizer.json"):
        loaded, problems = load_tokenizer_path(path)
        assert loaded is not None and loaded.tokenizer.eos_token == "<|im_end|>", problems
    monkeypatch.setenv("PLAYGROUND_PUBLIC", "1")
    loaded, problems = load_tokenizer_path(tmp_path)
    assert loaded is None and "does not read folders" in problems[0].message


def test_hub_repo_downloads_only_the_tokenizer_files():
    files = tokenizer_files(CHATML, eos="<|im_end|>")
    with FakeHub() as hub:
        hub.add_repo("org/model", {"tokenizer.json": files.tokenizer_json, "tokenizer_config.json": files.config,
                                   "model.safetensors": b"\0" * 1000, "config.json": b"{}"})
        hub.add_repo("org/slow", {"tokenizer.model": b"\0", "tokenizer_config.json": b"{}"})
        loaded, problems = load_tokenizer_repo("org/model", endpoint=hub.url)
        assert loaded is not None and problems == [] and loaded.source == "org/model"
        fetched = {r.path.rsplit("/", 1)[-1] for r in hub.requests if "/resolve/" in r.path}
        assert fetched == {"tokenizer.json", "tokenizer_config.json"}
        loaded, problems = load_tokenizer_repo("org/slow", endpoint=hub.url)
        assert loaded is None and "tokenizer.model" in problems[0].message
        loaded, problems = load_tokenizer_repo("org/missing", endpoint=hub.url)
        assert loaded is None and problems[0].source == "hub"
    assert json.loads(files.config)["eos_token"] == "<|im_end|>"


def test_recorded_and_simulated_runs_stream_one_real_token_at_a_time_with_ids():
    from engine.cases import Case
    from engine.runners import RecordedRunner
    from engine.runners.simulated import SimulatedRunner

    loaded = tiny(CHATML, ("<think>", "</think>"), eos="<|im_end|>")
    text = "<think>\nPlan 🙂</think>The weather in Paris<|im_end|>"
    expected = loaded.tokenizer(text, add_special_tokens=False)["input_ids"]
    chunks = list(RecordedRunner(text, tokenizer=loaded).stream())  # the session's tokenizer: in the worker
    assert "".join(c.text for c in chunks) == text
    assert [i for c in chunks for i in c.ids] == expected
    assert chunks[-1].tokens == len(expected) and chunks[0].ids == (loaded.tokenizer.convert_tokens_to_ids("<think>"),)
    emoji = next(c for c in chunks if "🙂" in c.text)
    assert len(emoji.ids) > 1  # byte-level pieces of one character arrive together
    from tests.tiny_model import CHATML_RESPONSE_TEMPLATE, CHATML_SPECIAL_TOKENS, CHATML_TEMPLATE

    case = Case("c", [{"role": "user", "content": "Weather in Paris?"}])
    runner = SimulatedRunner(CHATML_TEMPLATE, case, CHATML_RESPONSE_TEMPLATE, CHATML_SPECIAL_TOKENS,
                             stop_tokens=["<|im_end|>"], tokenizer=loaded.tokenizer)
    prompt = render(CHATML_TEMPLATE, case.messages, add_generation_prompt=True).prompt
    chunks = list(runner.stream(prompt))
    assert len(chunks) > 3 and all(c.ids for c in chunks)
    assert [i for c in chunks for i in c.ids] == loaded.tokenizer("".join(c.text for c in chunks),
                                                                  add_special_tokens=False)["input_ids"]
