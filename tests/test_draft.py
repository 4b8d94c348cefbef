"""Drafting a response template from a chat template (engine.draft): one small template of each
format family (written for these tests), the draft checked by parsing output a model would write
(not the probes it was read from), and the report of fields that cannot be inferred."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest
from transformers.utils.chat_parsing import parse_response

from engine.checks import run_checks
from engine.draft import Draft, draft_response_template
from engine.render import render
from engine.turns import reply_after

FIXTURES = Path(__file__).parent / "fixtures" / "draft"
WEATHER = [{"type": "function", "function": {"name": "get_weather", "description": "Weather in a city.", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}}]  # fmt: skip
# One small template per format family, written for these tests, with the special tokens each renders with.
FAMILIES = {name: entry["special_tokens"] for name, entry in json.loads((FIXTURES / "families.json").read_text()).items()}


@cache
def drafted(family: str) -> Draft:
    return draft_response_template((FIXTURES / f"{family}.jinja").read_text(), FAMILIES[family], checks=False)


def prompt_for(family: str, messages: list[dict], tools: list | None = WEATHER, **kwargs) -> str:
    result = render((FIXTURES / f"{family}.jinja").read_text(), messages, tools, add_generation_prompt=True,
                    special_tokens=FAMILIES[family], template_kwargs=kwargs)  # fmt: skip
    assert result.ok, result.diagnostics
    return result.prompt


def parse(family: str, output: str, messages: list[dict] | None = None, **kwargs) -> dict:
    messages = messages or [{"role": "user", "content": "What is the weather in Paris?"}]
    return parse_response(output, drafted(family).response_template, prefix=prompt_for(family, messages, **kwargs), tools=WEATHER)


def call(name: str, **arguments) -> dict:
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


def statuses(draft: Draft) -> dict[str, str]:
    return {report.field: report.status for report in draft.fields}


# ----- one family each --------------------------------------------------------------------------


def test_chatml_with_think_and_tool_call_blocks() -> None:
    draft = drafted("chatml_think_tools")
    assert statuses(draft) == {"reasoning_content": "verified", "tool_calls": "verified", "content": "verified"}
    fields = draft.response_template["fields"]
    assert draft.response_template["start_anchor"] == "<|im_start|>assistant\n"
    assert (fields["reasoning_content"]["open"], fields["reasoning_content"]["close"]) == ("<think>", "</think>")
    assert (fields["tool_calls"]["open"], fields["tool_calls"]["close"]) == ("<tool_call>", "</tool_call>")
    assert fields["tool_calls"]["transform"] == {"type": "function", "function": "{content}"}
    assert "open" not in fields["content"] and fields["content"]["close"] == "<|im_end|>"
    # Output the model writes, not a probe: reasoning, text, two calls; the schema types "days".
    output = ('<think>\nThey want the weather.\n</think>\n\nLet me check.\n<tool_call>\n{"name": "get_weather", '
              '"arguments": {"city": "Paris", "days": "2"}}\n</tool_call>\n<tool_call>\n{"name": "get_weather", '
              '"arguments": {"city": "Lyon"}}\n</tool_call><|im_end|>')  # fmt: skip
    assert parse("chatml_think_tools", output) == {
        "role": "assistant", "reasoning_content": "They want the weather.", "content": "Let me check.",
        "tool_calls": [call("get_weather", city="Paris", days=2), call("get_weather", city="Lyon")],
    }  # fmt: skip
    # With thinking off the prompt prefills an empty think block; the parser reads it from the prompt.
    assert parse("chatml_think_tools", "It is sunny.<|im_end|>", enable_thinking=False) == {"role": "assistant", "content": "It is sunny."}


def test_llama_bare_json_calls_come_from_the_library_format_the_history_agrees_with() -> None:
    draft = drafted("llama_json_calls")
    # The history writes the bare JSON the llama3-json format reads: the draft takes the library's
    # field (written for real outputs, <|python_tag|> included) and says what the spec cannot say.
    assert draft.format is not None and draft.format.name == "llama3-json"
    assert draft.report("tool_calls").status == "verified" and "5 of the 5 history probes with calls" in draft.report("tool_calls").message
    assert any("ends where a JSON value ends" in limit for limit in draft.format.limits)
    assert draft.response_template["start_anchor"] == "<|start_header_id|>assistant<|end_header_id|>\n\n"
    output = '{"name": "get_weather", "parameters": {"city": "Paris"}}<|eot_id|>'
    assert parse("llama_json_calls", output) == {"role": "assistant", "tool_calls": [call("get_weather", city="Paris")]}
    tagged = '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}}<|eom_id|>'
    assert parse("llama_json_calls", tagged)["tool_calls"] == [call("get_weather", city="Paris")]
    assert parse("llama_json_calls", "Sunny, 21 degrees.<|eot_id|>") == {"role": "assistant", "content": "Sunny, 21 degrees."}
    notes = " ".join(draft.report("tool_calls").notes)
    assert "refuses the probe “two calls” (tools offered)" in notes and "single tool-calls" in notes  # the template's raise_exception, reported


def test_mistral_tool_calls_list_with_ids_and_no_generation_prompt() -> None:
    draft = drafted("mistral_tool_calls")
    calls = draft.response_template["fields"]["tool_calls"]
    assert calls["open"] == "[TOOL_CALLS]" and calls["transform_each"] is True and "repeats" not in calls
    assert calls["transform"] == {"type": "function", "id": "{id}", "function": {"name": "{name}", "arguments": "{arguments}"}}
    # No generation prompt: the turn starts after [/INST], or after [/TOOL_RESULTS] following a tool result.
    assert draft.response_template["start_anchor"] == ["[/INST]", "[/TOOL_RESULTS]"]
    output = '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "abc123def"}, {"name": "get_weather", "arguments": {"city": "Rome"}, "id": "xyz987uvw"}]</s>'
    message = parse("mistral_tool_calls", output)
    assert [c["function"]["arguments"]["city"] for c in message["tool_calls"]] == ["Paris", "Rome"]
    assert [c["id"] for c in message["tool_calls"]] == ["abc123def", "xyz987uvw"]


def test_harmony_channels_with_the_recipient_in_the_header() -> None:
    draft = drafted("harmony_channels")
    fields = draft.response_template["fields"]
    assert fields["content"]["open"] == "<|channel|>final<|message|>"
    # The history writes the recipient before the channel; the harmony format reads it there and
    # after the channel (where the model writes it), and a commentary preamble as reasoning.
    assert draft.format is not None and draft.format.name == "harmony"
    assert set(draft.format.how[0].split("appear in ")[1].split(" and ")) == {"the tool instructions", "the history"}
    assert fields["tool_calls"]["transform"]["function"] == {"name": "{name}", "arguments": "{content}"}
    for recipient in (' to=functions.get_weather<|channel|>commentary json<|message|>',
                      '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>'):
        output = f'<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant{recipient}{{"city": "Paris"}}<|call|>'
        assert parse("harmony_channels", output) == {
            "role": "assistant", "reasoning_content": "Need the weather.", "tool_calls": [call("get_weather", city="Paris")]}
    # The fixture renders one call per message: several calls cannot be verified, and the report says so.
    assert "only some of the calls" in " ".join(draft.report("tool_calls").notes)


def test_command_style_plan_actions_and_prefilled_response() -> None:
    draft = drafted("command_actions")
    assert statuses(draft) == {"reasoning_content": "verified", "tool_calls": "verified", "content": "verified"}
    fields = draft.response_template["fields"]
    assert fields["tool_calls"]["open"] == "<|START_ACTION|>" and fields["tool_calls"]["transform_each"] is True
    assert fields["tool_calls"]["transform"]["function"] == {"name": "{tool_name}", "arguments": "{parameters}"}
    # Without tools the prompt prefills <|START_RESPONSE|>: an open, so not part of the start anchor.
    assert draft.response_template["start_anchor"] == "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>"
    assert parse("command_actions", "Sunny.<|END_RESPONSE|><|END_OF_TURN_TOKEN|>", tools=None) == {"role": "assistant", "content": "Sunny."}
    output = ('<|START_THINKING|>Look it up.<|END_THINKING|><|START_ACTION|>[{"tool_call_id": "0", "tool_name": '
              '"get_weather", "parameters": {"city": "Paris"}}]<|END_ACTION|><|END_OF_TURN_TOKEN|>')  # fmt: skip
    assert parse("command_actions", output) == {
        "role": "assistant", "reasoning_content": "Look it up.", "tool_calls": [call("get_weather", city="Paris")]}
    assert ("does not write `reasoning_content` in the probes “reasoning and content”"
            in " ".join(draft.report("reasoning_content").notes))


def test_a_family_draft_passes_the_round_trip_streaming_and_robustness_checks() -> None:
    draft = draft_response_template((FIXTURES / "chatml_think_tools.jinja").read_text(), FAMILIES["chatml_think_tools"])
    # Notes are facts (a variation the format does not claim, such as its own delimiters in a value).
    assert draft.checks and all(c.status in ("pass", "info") for c in draft.checks), [str(c) for c in draft.checks if c.status != "pass"]
    assert {c.name for c in draft.checks} >= {"round_trip.message", "round_trip.output", "streaming", "robustness.values.strings",
                                              "robustness.text.after"}  # fmt: skip
    # Held to what its format's models write: the matched format's claims, named.
    assert all(c.status == "pass" for c in draft.checks if c.name in ("robustness.values.strings", "robustness.text.after"))
    [noted] = [c for c in draft.checks if c.name == "robustness.values.delimiters"]
    assert "the library format `qwen3` does not claim" in noted.details
    # The same checks, run by hand on the drafted text, agree.
    report = run_checks((FIXTURES / "chatml_think_tools.jinja").read_text(), draft.text, special_tokens=FAMILIES["chatml_think_tools"],
                        families=("round_trip", "streaming"), random_splits=10)  # fmt: skip
    assert report.status == "pass", [str(c) for c in report.checks if c.status != "pass"]


# ----- every family: the library format it matches, and what its model writes --------------------

# (family, the library format the draft takes, an output its model writes, the message it parses to)
WRITTEN = [
    ("pythonic_calls", "pythonic", '[get_weather(city="Paris", days=2)]<|eot_id|>',
     {"tool_calls": [call("get_weather", city="Paris", days=2)]}),
    ("mistral_args", "mistral-args", 'Let me check.[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}[TOOL_CALLS]get_weather[ARGS]{"city": "Rome"}</s>',
     {"content": "Let me check.", "tool_calls": [call("get_weather", city="Paris"), call("get_weather", city="Rome")]}),
    ("granite_told", "granite", '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}]<|end_of_text|>',
     {"tool_calls": [call("get_weather", city="Paris", days=2)]}),
    # The instructions show a <TOOLCALL> list, the history renders no call: the library's format all the same.
    ("toolcall_told", "nemotron", 'Checking.<TOOLCALL>[{"name": "get_weather", "arguments": {"city": "Paris"}}, '
     '{"name": "get_weather", "arguments": {"city": "Rome", "days": 2}}]</TOOLCALL><|eot_id|>',
     {"content": "Checking.", "tool_calls": [call("get_weather", city="Paris"), call("get_weather", city="Rome", days=2)]}),
    ("functools_phi", "functools", 'functools[{"name": "get_weather", "arguments": {"city": "Paris"}}, {"name": "get_weather", "arguments": {"city": "Rome"}}]<|end|>',
     {"tool_calls": [call("get_weather", city="Paris"), call("get_weather", city="Rome")]}),
    ("deepseek_calls", "deepseek-v3", 'Checking.<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{"city": "Paris"}\n```'
     '<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>', {"content": "Checking.", "tool_calls": [call("get_weather", city="Paris")]}),
    ("qwen3_coder_xml", "qwen3-coder", "<tool_call>\n<function=get_weather>\n<parameter=city>\nSão Paulo\n</parameter>\n<parameter=days>\n2\n"
     "</parameter>\n</function>\n</tool_call><|im_end|>", {"tool_calls": [call("get_weather", city="São Paulo", days=2)]}),
    ("mistral_tool_calls", "mistral-json-list", '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "abc123def"}]</s>',
     {"tool_calls": [{**call("get_weather", city="Paris"), "id": "abc123def"}]}),
    ("command_actions", "command-r7b", '<|START_ACTION|>[{"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "Paris"}}]'
     "<|END_ACTION|><|END_OF_TURN_TOKEN|>", {"tool_calls": [call("get_weather", city="Paris")]}),
    ("lfm_calls", "lfm2", 'Checking.<|tool_call_start|>[get_weather(city="Paris", days=2), get_weather(city=\'Rome\')]<|tool_call_end|><|im_end|>',
     {"content": "Checking.", "tool_calls": [call("get_weather", city="Paris", days=2), call("get_weather", city="Rome")]}),
    ("gemma4_calls", "gemma4", 'Checking.<|tool_call>call:get_weather{city:<|"|>Paris, "centre"<|"|>,days:2}<tool_call|><turn|>',
     {"content": "Checking.", "tool_calls": [call("get_weather", city='Paris, "centre"', days=2)]}),
    ("dsml_resumes", "deepseek-v3.2", '\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name="get_weather">\n<｜DSML｜parameter name="city" string="true">'
     'Paris</｜DSML｜parameter>\n<｜DSML｜parameter name="days" string="false">2</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>'
     "<｜end▁of▁sentence｜>", {"tool_calls": [call("get_weather", city="Paris", days=2)]}),
]  # fmt: skip


@pytest.mark.parametrize(("family", "name", "output", "message"), WRITTEN, ids=[w[0] for w in WRITTEN])
def test_each_family_drafts_the_library_format_its_model_writes(family: str, name: str, output: str, message: dict) -> None:
    draft = drafted(family)
    assert draft.format is not None and draft.format.name == name, draft.format
    assert draft.report("tool_calls").status == "verified", draft.report("tool_calls")
    assert f"library's `{name}` format" in draft.report("tool_calls").message
    parsed = parse(family, output)
    assert {k: v for k, v in parsed.items() if k != "role"} == message


def test_a_turn_that_resumes_after_tool_results_starts_where_the_format_says() -> None:
    """DeepSeek V3.2 (and Gemma 4) go on in the same turn after the tool results, with no new header:
    the format's own start anchor that ends such a prompt joins the draft's, so the answer after a
    tool result is parsed alone, without the calls the turn made before it."""
    draft = drafted("dsml_resumes")
    assert draft.response_template["start_anchor"] == ["<｜Assistant｜>", "</function_results>"]
    assert draft.disagreement is None and statuses(draft)["content"] == "verified"
    called = {"role": "assistant", "tool_calls": [call("get_weather", city="Paris")]}
    messages = [{"role": "user", "content": "Weather in Paris?"}, called, {"role": "tool", "content": "sunny"}]
    assert parse("dsml_resumes", "It is sunny.<｜end▁of▁sentence｜>", messages) == {"role": "assistant", "content": "It is sunny."}


def test_the_text_a_format_ends_its_calls_with_closes_the_content_when_the_history_writes_it() -> None:
    """Gemma 4 writes <|tool_response> after its calls (and stops there; the results follow in the same
    turn). The history shows it after every call, so the library format's own end joins the content's
    close: the content parses back in every probe, not only the calls."""
    draft = drafted("gemma4_resumes")
    assert draft.format is not None and draft.format.name == "gemma4"
    assert draft.response_template["fields"]["content"]["close"] == ["<turn|>", "<|tool_response>"]
    assert statuses(draft) == {"content": "verified", "reasoning_content": "verified", "tool_calls": "verified"}
    output = 'Checking.<|tool_call>call:get_weather{city:<|"|>Paris<|"|>}<tool_call|><|tool_response>'
    assert parse("gemma4_resumes", output) == {"role": "assistant", "content": "Checking.",
                                               "tool_calls": [call("get_weather", city="Paris")]}
    # After the results the model goes on in that turn: the answer is parsed alone.
    called = {"role": "assistant", "tool_calls": [call("get_weather", city="Paris")]}
    messages = [{"role": "user", "content": "Weather in Paris?"}, called, {"role": "tool", "name": "get_weather", "content": "sunny"}]
    assert parse("gemma4_resumes", "It is sunny.<turn|>", messages) == {"role": "assistant", "content": "It is sunny."}


def test_a_format_told_in_the_instructions_but_not_written_in_history_is_taken_from_them() -> None:
    # Granite's and Phi's templates write no call into history: the instructions name the format.
    for family in ("granite_told", "functools_phi"):
        report = drafted(family).report("tool_calls")
        assert "its texts appear in the tool instructions" in report.message and "history probes" not in report.message
        assert "the chat template never writes `tool_calls` into an assistant turn" in " ".join(report.notes)
    # Phi's instructions show a whole call: it is parsed; Granite's name the delimiter in words.
    assert "it parses the instruction's example" in drafted("functools_phi").report("tool_calls").message
    assert "the instruction's example" not in drafted("granite_told").report("tool_calls").message


# ----- what cannot be inferred --------------------------------------------------------------------

CHATML_CONTENT_ONLY = (
    "{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def test_a_field_the_template_never_renders_is_left_out_with_why_and_what_to_do() -> None:
    draft = draft_response_template(CHATML_CONTENT_ONLY, {"eos_token": "<|im_end|>"}, checks=False)
    assert set(draft.response_template["fields"]) == {"content"}
    reasoning = draft.report("reasoning_content")
    assert reasoning.status == "not_inferable"
    assert "never renders `reasoning_content` in history, so its delimiters cannot be seen" in reasoning.message
    assert "write this field by hand; the model card may say which tags the model writes" in reasoning.message
    assert draft.report("tool_calls").status == "not_inferable" and "write this field by hand" in draft.report("tool_calls").message
    assert draft.report("content").status == "verified"


def test_a_field_read_but_never_written_into_history_is_told_apart() -> None:
    template = CHATML_CONTENT_ONLY.replace("{{ m.content }}", "{% if m.reasoning_content and keep_reasoning %}<think>{{ m.reasoning_content }}</think>{% endif %}{{ m.content }}")
    draft = draft_response_template(template, {"eos_token": "<|im_end|>"}, checks=False)
    message = draft.report("reasoning_content").message
    assert draft.report("reasoning_content").status == "not_inferable"
    assert "reads `reasoning_content` but never writes it into an assistant turn in history" in message


def test_calls_written_as_python_dicts_are_left_out_not_guessed() -> None:
    template = CHATML_CONTENT_ONLY.replace(
        "{{ m.content }}", "{{ m.content or '' }}{% for c in m.tool_calls or [] %}<call>{{ c.function.name }} {{ c.function.arguments }}</call>{% endfor %}")
    draft = draft_response_template(template, {"eos_token": "<|im_end|>"}, checks=False)
    report = draft.report("tool_calls")
    assert report.status == "not_inferable" and "Python dict" in report.message
    assert "tool_calls" not in draft.response_template["fields"]
    # The limit of the spec behind it, in the library's words (formats/limits.json), with its example.
    assert [limit.split(":")[0] for limit in draft.limits] == ["Python literals outside python-call-list"]


def test_reasoning_with_nothing_marking_its_start_is_left_out() -> None:
    template = CHATML_CONTENT_ONLY.replace("{{ m.content }}", "{% if m.reasoning_content %}{{ m.reasoning_content }}\n\n{% endif %}{{ m.content }}")
    draft = draft_response_template(template, {"eos_token": "<|im_end|>"}, checks=False)
    report = draft.report("reasoning_content")
    assert report.status == "not_inferable" and "nothing marks where it starts" in report.message
    # Its text would land in content: content is verified on the probes without reasoning, and the note says so.
    assert "lands in another field" in " ".join(report.notes)


# Gemma-style turns: the model's turn ends at <end_of_turn>, the template writes "\n" after it, and the
# eos token is another one, so the probe outputs go on past the close.
GEMMA_STYLE = (
    "{{ bos_token }}{%- for m in messages %}<start_of_turn>{{ 'model' if m.role == 'assistant' else m.role }}\n"
    "{{ m.content }}<end_of_turn>\n{% endfor %}{%- if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)


@pytest.mark.parametrize("close", ["<end_of_turn>", "<|end|>"])
def test_text_after_the_close_does_not_replace_the_content(close: str) -> None:
    template = GEMMA_STYLE.replace("<end_of_turn>", close)
    draft = draft_response_template(template, {"bos_token": "<bos>", "eos_token": "<eos>"})
    content = draft.response_template["fields"]["content"]
    assert content["close"] == close and content["repeats"] is True and content["join"] == ""
    assert draft.report("content").status == "verified"
    assert f"writes '\\n' after {close!r}" in " ".join(draft.report("content").notes)
    assert all(c.status == "pass" for c in draft.checks), [str(c) for c in draft.checks if c.status != "pass"]
    prompt = render(template, [{"role": "user", "content": "Hi"}], add_generation_prompt=True,
                    special_tokens={"bos_token": "<bos>"}).prompt  # fmt: skip
    # A model run without the close as a stop token writes the separator too; the answer survives it.
    for output in (f"Hello there.{close}", f"Hello there.{close}\n"):
        assert parse_response(output, draft.response_template, prefix=prompt) == {"role": "assistant", "content": "Hello there."}


def test_a_template_that_does_not_render_gives_no_draft_and_a_diagnostic() -> None:
    draft = draft_response_template("{% for m in messages %}{{ m.content }", {}, checks=False)
    assert draft.response_template is None and draft.text == ""
    assert draft.diagnostics and draft.diagnostics[0].severity == "error" and "renders none of the probe" in draft.diagnostics[0].message
    assert {r.status for r in draft.fields} == {"not_inferable"}
    assert "Fix the chat template first" in draft.diagnostics[0].hint


def test_a_template_that_needs_a_special_token_nobody_gave_says_to_give_it() -> None:
    """A correct template of Llama 3's style (`bos_token + '…'`) drafted without its tokenizer: the
    hint names the special token and where it comes from, not a fix to the template."""
    template = "{{ bos_token + '' }}{% for m in messages %}<|{{ m.role }}|>{{ m.content }}<|end|>{% endfor %}"
    draft = draft_response_template(template, {}, checks=False)
    assert draft.response_template is None and "'bos_token' is undefined" in draft.diagnostics[0].message
    assert "`bos_token` is a special token" in draft.diagnostics[0].hint and "Fix the chat template" not in draft.diagnostics[0].hint
    assert draft_response_template(template, {"bos_token": "<s>"}, checks=False).response_template is not None


def test_drafting_a_runaway_template_stops_at_the_timeout() -> None:
    slow = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}" + CHATML_CONTENT_ONLY
    draft = draft_response_template(slow, {}, timeout=1.0)
    assert draft.response_template is None
    assert "Drafting stopped" in draft.diagnostics[0].message


def test_the_draft_serialises_for_the_command_line() -> None:
    draft = drafted("chatml_think_tools")
    data = json.loads(json.dumps(draft.to_dict()))
    assert data["response_template"] == draft.response_template
    assert [f["field"] for f in data["report"]["fields"]] == ["reasoning_content", "tool_calls", "content"]
    assert data["report"]["probes"] == draft.probes > 10


# ----- the reply after the prompt (shared with the simulated runner) ------------------------------


def test_a_history_that_drops_a_prefilled_block_is_read_from_the_whole_token() -> None:
    prompt = "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    history = "<|im_start|>assistant\n<tool_call>\n{}\n</tool_call><|im_end|>"
    reply = reply_after(prompt, history, "<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert reply.text.startswith("<tool_call>")  # not "ool_call>": the two part ways inside "<t"
    assert reply.diagnostic is not None and reply.diagnostic.severity == "warning"


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_family_draft_loads_in_transformers(family: str) -> None:
    from transformers.utils.chat_parsing.response_templates import load_response_template

    load_response_template(drafted(family).response_template)  # raises if transformers rejects it


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_every_family_draft_names_the_message_keys_and_holds_what_its_format_claims(family: str) -> None:
    draft = draft_response_template((FIXTURES / f"{family}.jinja").read_text(), FAMILIES[family])
    calls = draft.response_template["fields"].get("tool_calls")
    if calls is None:
        return
    # The transform writes the message's keys: a function with `name` and `arguments` (never `parameters`).
    function = calls["transform"]["function"]
    assert function == "{content}" or set(function) == {"name", "arguments"}, function
    assert set(calls["transform"]) <= {"type", "function", "id"}
    # The draft ran the robustness check held to its format's claims: nothing it claims breaks.
    robust = [c for c in draft.checks if c.name.startswith("robustness")]
    assert robust and not [str(c) for c in robust if c.status == "fail"]


def test_a_robust_candidate_ranks_before_one_that_breaks_what_its_format_claims() -> None:
    from engine.draft.verify import rank_by_robustness
    from engine.formats import load_format
    from engine.reading.library import Candidate

    hermes = load_format("hermes")
    fragile = hermes.spec()
    # Calls that do not repeat: of several calls only the last is kept, and hermes's models write
    # several (its claims: calls.count).
    del fragile["fields"]["tool_calls"]["repeats"]
    robust = Candidate(hermes, hermes.spec(), ("tool_calls",), ("the history",), 1, examples=(1, 1), probes=(2, 2))
    # The fragile one reads more of the history whole and more of the signature: it would rank first.
    breaks = Candidate(hermes, fragile, ("tool_calls",), ("the history",), 3, examples=(1, 1), probes=(2, 2), whole=2)
    assert breaks.rank() > robust.rank()
    ranked = rank_by_robustness([breaks, robust])
    assert ranked[0] is robust and robust.unsound == 0 and breaks.unsound >= 1
