"""Content parts (`content` as a list of text / image / video / audio parts): small templates written
here in the style of Mistral Small 3.x, Gemma 3, Qwen2.5-VL, SmolVLM and Llama 4 (each reads parts as
that family does; none is copied), checked, drafted, simulated and tokenized; a case file with parts;
a processor's chat_template.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.cases import Case, render_case
from engine.checks import run_checks
from engine.checks.context import CheckContext
from engine.content_parts import PARTS_CONVERSATION, PROBE_TEXT, as_parts, reads_parts, text_of
from engine.draft import draft_response_template
from engine.render import render
from engine.runners.simulated import SimulatedRunner
from engine.tokens import prompt_tokens
from engine.trace import trace_text
from engine.response_spec import load_response_spec
from tests.token_support import tokenizer_files

MISTRAL = (
    "{{- bos_token }}{%- for message in messages %}"
    "{%- if message['role'] == 'system' %}{{- '[SYSTEM_PROMPT]' + message['content'] + '[/SYSTEM_PROMPT]' }}"
    "{%- elif message['role'] == 'user' %}{{- '[INST]' }}"
    "{%- if message['content'] is string %}{{- message['content'] }}{%- else %}{%- for block in message['content'] %}"
    "{%- if block['type'] == 'text' %}{{- block['text'] }}{%- elif block['type'] in ['image', 'image_url'] %}{{- '[IMG]' }}"
    "{%- else %}{{- raise_exception('Only text and image blocks are supported in message content!') }}{%- endif %}"
    "{%- endfor %}{%- endif %}{{- '[/INST]' }}"
    "{%- elif message['role'] == 'assistant' %}"
    "{%- if message['content'] is string %}{{- message['content'] }}{%- else %}"
    "{%- for block in message['content'] %}{{- block['text'] }}{%- endfor %}{%- endif %}{{- eos_token }}"
    "{%- endif %}{%- endfor %}"
)
GEMMA = (
    "{{ bos_token }}{%- for message in messages -%}{%- set role = 'model' if message['role'] == 'assistant' else message['role'] -%}"
    "{{ '<start_of_turn>' + role + '\\n' }}{%- if message['content'] is string -%}{{ message['content'] | trim }}"
    "{%- elif message['content'] is iterable -%}{%- for item in message['content'] -%}"
    "{%- if item['type'] == 'image' -%}{{ '<start_of_image>' }}{%- elif item['type'] == 'text' -%}{{ item['text'] | trim }}"
    "{%- endif -%}{%- endfor -%}{%- endif -%}{{ '<end_of_turn>\\n' }}{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<start_of_turn>model\\n' }}{%- endif -%}"
)
QWEN_VL = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}<|im_end|>\n{% else %}"
    "{% for content in message['content'] %}{% if content['type'] == 'image' or 'image' in content %}"
    "<|vision_start|><|image_pad|><|vision_end|>{% elif content['type'] == 'video' or 'video' in content %}"
    "<|vision_start|><|video_pad|><|vision_end|>{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}"
    "<|im_end|>\n{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SMOLVLM = (  # reads content only as parts: text given as a string is dropped
    "<|im_start|>{% for message in messages %}{{ message['role'] | capitalize }}"
    "{% if message['content'][0]['type'] == 'image' %}{{ ':' }}{% else %}{{ ': ' }}{% endif %}"
    "{% for line in message['content'] %}{% if line['type'] == 'text' %}{{ line['text'] }}"
    "{% elif line['type'] == 'image' %}{{ '<image>' }}{% endif %}{% endfor %}<end_of_utterance>\n{% endfor %}"
    "{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}"
)
LLAMA4 = (
    "{{- bos_token }}{%- for message in messages %}{{- '<|header_start|>' + message['role'] + '<|header_end|>\\n\\n' }}"
    "{%- if message['content'] is string %}{{- message['content'] }}{%- else %}{%- for content in message['content'] %}"
    "{%- if content['type'] == 'image' %}{{- '<|image|>' }}{%- elif content['type'] == 'text' %}{{- content['text'] | trim }}"
    "{%- endif %}{%- endfor %}{%- endif %}{{- '<|eot|>' }}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|header_start|>assistant<|header_end|>\\n\\n' }}{%- endif %}"
)


def spec(anchor: str, close: str) -> str:
    return json.dumps({"start_anchor": anchor, "defaults": {"role": "assistant"}, "fields": {"content": {"close": close}}})


# (template, response template, special tokens, what a picture becomes)
STYLES = {
    "mistral-small": (MISTRAL, spec("[/INST]", "</s>"), {"bos_token": "<s>", "eos_token": "</s>"}, "[IMG]"),
    "gemma-3": (GEMMA, spec("<start_of_turn>model\n", "<end_of_turn>"), {"bos_token": "<bos>", "eos_token": "<eos>"},
                "<start_of_image>"),
    "qwen2.5-vl": (QWEN_VL, spec("<|im_start|>assistant\n", "<|im_end|>"), {"eos_token": "<|im_end|>"},
                   "<|vision_start|><|image_pad|><|vision_end|>"),
    "smolvlm": (SMOLVLM, spec("Assistant:", "<end_of_utterance>"), {"eos_token": "<end_of_utterance>"}, "<image>"),
    "llama-4": (LLAMA4, spec("<|header_start|>assistant<|header_end|>\n\n", "<|eot|>"),
                {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot|>"}, "<|image|>"),
}
TEXT_ONLY = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}<|im_start|>assistant\n"
CONCATENATES = "{% for m in messages %}<|im_start|>{{ m.role + '\n' + m.content }}<|im_end|>\n{% endfor %}"


def _reads(template: str, special_tokens: dict | None = None) -> bool:
    return reads_parts(lambda messages: render(template, messages, add_generation_prompt=True,
                                               special_tokens=special_tokens or {}))


@pytest.mark.parametrize("style", list(STYLES))
def test_each_style_reads_parts_and_a_picture_renders_as_it_writes_it(style):
    template, _, tokens, picture = STYLES[style]
    assert _reads(template, tokens)
    prompt = render(template, PARTS_CONVERSATION, special_tokens=tokens).prompt
    assert picture + PROBE_TEXT in prompt.replace("\n", "") or picture + ":" + PROBE_TEXT in prompt


def test_printing_the_list_or_refusing_it_is_not_reading_parts():
    assert not _reads(TEXT_ONLY)  # prints [{'type': 'image'}, …] as Python writes it (Llama 3.1's template does)
    assert not _reads(CONCATENATES)  # a list cannot be added to a string: the template refuses parts


@pytest.mark.parametrize("style", list(STYLES))
def test_the_checks_add_a_conversation_with_parts_and_it_round_trips(style):
    template, response, tokens, _ = STYLES[style]
    report = run_checks(template, response, special_tokens=tokens, random_splits=5)
    failed = [(c.name, c.details) for c in report.checks if c.status == "fail"]
    assert not failed and not report.diagnostics, failed
    parts = [c for c in report.checks if c.subject == "case 'content parts'" and c.name == "round_trip.message"]
    assert parts and parts[0].status == "pass", [c.details for c in report.checks if "content parts" in (c.subject or "")]
    outputs = [c for c in report.checks if c.name == "round_trip.output" and "content parts" in c.subject]
    assert outputs and all(c.status == "pass" for c in outputs)
    requires = [c.details for c in report.checks if c.name == "template.requires"]
    if style == "smolvlm":  # string text is dropped: the built-in conversations are given as parts
        assert requires and all("reads `content` only as a list of parts" in r for r in requires)
    else:
        assert not requires


def test_a_text_only_template_gets_no_parts_conversation():
    report = run_checks(TEXT_ONLY, spec("<|im_start|>assistant\n", "<|im_end|>"), random_splits=0)
    assert not [c for c in report.checks if "content parts" in (c.subject or "") + c.details]


def test_a_case_file_holds_parts_and_renders_them(cli, tmp_path: Path):
    case = {"messages": PARTS_CONVERSATION[:1]}
    (tmp_path / "case.json").write_text(json.dumps(case))
    (tmp_path / "t.jinja").write_text(GEMMA)
    result = cli("render", "--chat-template", tmp_path / "t.jinja", "--case", tmp_path / "case.json",
                 "--special-tokens", '{"bos_token": "<bos>"}')
    assert result.returncode == 0
    assert result.stdout == f"<bos><start_of_turn>user\n<start_of_image>{PROBE_TEXT}<end_of_turn>\n<start_of_turn>model\n"
    assert Case.from_dict({"messages": PARTS_CONVERSATION}).messages[0]["content"][0] == {"type": "image"}


@pytest.mark.parametrize("style", ["smolvlm", "gemma-3"])
def test_the_draft_reads_content_from_a_parts_template(style):
    template, response, tokens, _ = STYLES[style]
    end = json.loads(response)["fields"]["content"]["close"]  # the turn's end (Gemma's eos is another token)
    draft = draft_response_template(template, tokens, stop_tokens=[end])
    assert draft.response_template is not None, [f.message for f in draft.fields]
    content = next(f for f in draft.fields if f.field == "content")
    assert content.status == "verified", content.message
    assert draft.response_template["fields"]["content"].get("close") == end


@pytest.mark.parametrize("style", ["smolvlm", "qwen2.5-vl"])
def test_the_simulated_runner_answers_a_conversation_with_parts(style):
    template, response, tokens, _ = STYLES[style]
    messages = [dict(m) for m in PARTS_CONVERSATION] if style != "smolvlm" else [as_parts(m) for m in PARTS_CONVERSATION]
    case = Case("parts", messages)
    runner = SimulatedRunner(template, case, response, special_tokens=tokens)
    prompt = render_case(template, case, tokens).prompt
    output = "".join(chunk.text for chunk in runner.stream(prompt))
    assert "And what colour is the cat" in output or "simulated answer" in output
    traced = trace_text(load_response_spec(response).template, output, prompt, None, [output])
    assert traced.message.get("content", "").startswith("Here is a simulated answer to “And what colour is the cat?”")


def test_the_token_view_of_a_prompt_with_pictures():
    template, _, tokens, picture = STYLES["qwen2.5-vl"]
    prompt = render(template, PARTS_CONVERSATION, add_generation_prompt=True, special_tokens=tokens).prompt
    files = tokenizer_files(("<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|image_pad|>", "<|vision_end|>"))
    view = prompt_tokens(files, prompt)
    assert not view.diagnostics and view.special_count >= 3 + 4  # the picture's three tokens, one each
    pieces = [prompt[a:b] for a, b in view.offsets]
    at = pieces.index("<|vision_start|>")
    assert pieces[at : at + 3] == ["<|vision_start|>", "<|image_pad|>", "<|vision_end|>"]


def test_text_of_parts():
    assert text_of([{"type": "image"}, {"type": "text", "text": "a"}, {"type": "text", "text": "b"}]) == "ab"
    assert text_of("plain") == "plain" and text_of(None) == ""
    assert as_parts({"role": "user", "content": "x"}) == {"role": "user", "content": [{"type": "text", "text": "x"}]}


def test_a_processors_chat_template_json_is_checked_with_parts(cli, tmp_path: Path):
    folder = tmp_path / "processor"
    folder.mkdir()
    (folder / "chat_template.json").write_text(json.dumps({"chat_template": GEMMA}, indent=2))
    (folder / "tokenizer_config.json").write_text(json.dumps({"bos_token": "<bos>", "eos_token": "<eos>"}))
    result = cli("check", folder, "--json")
    assert result.returncode == 0, result.stdout
    renders = next(c for c in json.loads(result.stdout)["checks"] if c["name"] == "template.renders")
    assert "'content parts'" in renders["details"]
    ctx_reads = CheckContext(GEMMA, "", {}, None, [], [], special_tokens={"bos_token": "<bos>"}).reads_parts
    assert ctx_reads


def test_the_page_renders_a_case_with_parts_and_checks_it():
    from app.checks_panel import run_all_checks
    from tests.test_app_support import edited, refresh_with, session

    sess = session()
    template, response, tokens, picture = STYLES["gemma-3"]
    sess.workspace.special_tokens, sess.workspace.recordings = tokens, []  # the ChatML starter's recordings are not Gemma's
    sess.workspace.cases = [sess.workspace.case]
    out = refresh_with(sess, chat=template, response=response, messages=json.dumps(PARTS_CONVERSATION))
    assert "Case OK" in out["case_diagnostics"] and "&lt;start_of_image&gt;" in out["prompt"]
    run_all_checks(**edited(sess))
    assert not [c for c in sess.checks if c.status == "fail"]
    # A blank response template: the chat template alone is checked, and the Checks tab says what waits for one.
    run_all_checks(**edited(sess, response=""))
    names = {c.name: c for c in sess.checks}
    assert names["template.renders"].status == "pass" and "Draft from the chat template" in names["round_trip"].details
