"""The Command R7B preset: the format's facts, parsing what the model writes (the prefilled response,
arguments typed by the schema), and every recording rendered back into history and parsed again,
all but the plan. Golden prompts, loading and parsing every recording are tested for every preset in
tests/test_presets.py."""

from __future__ import annotations

import pytest

from engine.presets import load_preset
from engine.trace import Trace
from tests.preset_support import conversation, parse, parse_back, prompt_for, rendered

PRESET = load_preset("command-r7b")
BOS = "<BOS_TOKEN>"
CHATBOT = "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>"

WEATHER = PRESET.case("tools offered").tools[0]
QUESTION = {"role": "user", "content": "What's the weather like in Paris?"}


def call(id: str, **arguments) -> dict:
    return {"id": id, "type": "function", "function": {"name": "get_weather", "arguments": arguments}}


# ----- the format's facts -------------------------------------------------------------------------


def test_without_tools_a_short_prompt_with_an_empty_system_turn_and_the_response_prefilled():
    assert prompt_for(PRESET, "plain chat") == (
        "<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|><|END_OF_TURN_TOKEN|>"
        "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>Hello! Who are you?<|END_OF_TURN_TOKEN|>"
        "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|><|START_RESPONSE|>"
    )
    assert not prompt_for(PRESET, "plain chat", add_generation_prompt=False).endswith("<|START_RESPONSE|>")


def test_without_tools_content_is_stripped_and_roles_must_alternate():
    text = prompt_for(PRESET, conversation({"role": "user", "content": "  Hi  "}))
    assert "<|USER_TOKEN|>Hi<|END_OF_TURN_TOKEN|>" in text
    result = rendered(PRESET, conversation(QUESTION, QUESTION))
    assert result.prompt is None and "must alternate" in result.diagnostics[0].message


def test_passing_tools_switches_to_the_tool_use_prompt_even_when_empty():
    text = prompt_for(PRESET, "tools offered")
    assert text.startswith(BOS + "<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|># System Preamble\n")
    assert '    {"name": "get_weather", "description": "Get the current weather in a city.", "parameters": {' in text
    empty = prompt_for(PRESET, conversation(QUESTION, tools=[]))
    assert empty.startswith(BOS) and "## Available Tools" not in empty


def test_the_tool_use_prompt_ignores_add_generation_prompt():
    for setting in (True, False):
        assert prompt_for(PRESET, "tools offered", add_generation_prompt=setting).endswith("<|END_OF_TURN_TOKEN|>" + CHATBOT)
    assert prompt_for(PRESET, "tools, no generation prompt").endswith("<|END_RESPONSE|><|END_OF_TURN_TOKEN|>" + CHATBOT)


def test_the_first_system_message_becomes_the_developer_preamble():
    text = prompt_for(PRESET, "tools and system prompt")
    assert "then answer.\n\n# Developer Preamble\n" in text
    assert text.count("Always answer in French.") == 1
    assert "Always answer in French.<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|USER_TOKEN|>" in text


def test_citations_add_the_grounding_section():
    assert "## Grounding" in prompt_for(PRESET, "citations on")
    assert "## Grounding" not in prompt_for(PRESET, "tool call and result")


def test_calls_are_numbered_by_position_and_results_grouped_into_one_turn():
    text = prompt_for(PRESET, "parallel tool calls")
    assert '[\n    {"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"location": "Paris, France"}},\n' in text
    assert '    {"tool_call_id": "1", "tool_name": "get_time", "parameters": {"timezone": "Asia/Tokyo"}}\n]<|END_ACTION|>' in text
    assert text.count("<|SYSTEM_TOKEN|><|START_TOOL_RESULT|>") == 1
    assert text.index('"tool_call_id": "0",\n        "results"') < text.index('"tool_call_id": "1",\n        "results"')


def test_the_plan_is_read_from_tool_plan_only():
    plan = conversation(QUESTION, {"role": "assistant", "tool_plan": "Look it up.", "tool_calls": [call("a", location="Paris")]}, tools=[WEATHER])
    standard = conversation(QUESTION, {"role": "assistant", "reasoning_content": "Look it up.", "tool_calls": [call("a", location="Paris")]}, tools=[WEATHER])
    assert "<|START_THINKING|>Look it up.<|END_THINKING|><|START_ACTION|>" in prompt_for(PRESET, plan)
    assert "<|START_THINKING|><|END_THINKING|><|START_ACTION|>" in prompt_for(PRESET, standard)
    assert "Look it up." not in prompt_for(PRESET, standard)


def test_plans_stay_in_history():
    text = prompt_for(PRESET, "reasoning in history")
    assert "<|START_THINKING|>I will look up the current weather in Paris with get_weather.<|END_THINKING|>" in text
    assert "<|START_THINKING|>It is sunny now; I will also get the forecast for tomorrow.<|END_THINKING|>" in text


def test_only_tool_calling_turns_have_a_plan_and_they_have_no_response():
    answer = conversation(QUESTION, {"role": "assistant", "reasoning_content": "Hidden.", "content": "Sunny."}, QUESTION, tools=[WEATHER])
    assert "Hidden." not in prompt_for(PRESET, answer)
    acting = conversation(QUESTION, {"role": "assistant", "content": "Let me check.", "tool_calls": [call("a", location="Paris")]}, tools=[WEATHER])
    assert "Let me check." not in prompt_for(PRESET, acting)


def test_documents_without_tools_use_the_rag_prompt_without_bos():
    text = prompt_for(PRESET, "documents")
    assert text.startswith("<|START_OF_TURN_TOKEN|><|SYSTEM_TOKEN|># System Preamble\n")
    assert '"name": "direct-injected-document"' in text
    assert ('<|USER_TOKEN|>How tall are emperor penguins?<|END_OF_TURN_TOKEN|>' + CHATBOT +
            "<|START_THINKING|>I will look through the document to address the users needs.<|END_THINKING|>") in text


def test_with_documents_calls_count_from_one_but_results_from_zero():
    case = conversation(
        QUESTION, {"role": "assistant", "tool_calls": [call("c1", location="Paris")]}, {"role": "tool", "tool_call_id": "c1", "content": "18"},
        tools=[WEATHER], documents=PRESET.case("documents").documents,
    )
    text = prompt_for(PRESET, case)
    assert '{"tool_call_id": "1", "tool_name": "get_weather"' in text
    assert text.endswith('    {\n        "tool_call_id": "0",\n        "results": {\n            "0": "18"\n        },\n        "is_error": null\n    }\n]<|END_TOOL_RESULT|><|END_OF_TURN_TOKEN|>' + CHATBOT)


# ----- parsing what the model writes ---------------------------------------------------------------


def test_the_prefilled_response_is_opened_by_the_prompt():
    trace = Trace(PRESET.response_spec, prompt=prompt_for(PRESET, "plain chat"))
    assert trace.initial_events == [{"type": "region_open", "field": "content"}]
    with_tools = Trace(PRESET.response_spec, prompt=prompt_for(PRESET, "tools offered"))
    assert with_tools.initial_events == []


def test_tool_call_arguments_are_typed_by_the_schema():
    output = '<|START_ACTION|>[\n    {"tool_call_id": "0", "tool_name": "get_forecast", "parameters": {"location": "Lyon", "days": "3"}}\n]<|END_ACTION|><|END_OF_TURN_TOKEN|>'
    message = parse(PRESET, output, PRESET.case("two forecasts"))
    assert message["tool_calls"][0]["function"]["arguments"] == {"location": "Lyon", "days": 3}


# ----- round trip: a parsed message rendered back into history -------------------------------------


def test_the_start_anchor_is_the_turn_after_the_last_user_or_system_turn():
    # The tool-use template appends a chatbot opener after an assistant turn already in history; the
    # anchor must not take it for the start of the reply.
    full = prompt_for(PRESET, "tools, no generation prompt")
    trace = Trace(PRESET.response_spec, prompt=full)
    assert full[: trace.anchor_end].endswith("<|END_TOOL_RESULT|><|END_OF_TURN_TOKEN|>" + CHATBOT)
    assert full[trace.anchor_end :] == "<|START_RESPONSE|>It's 18 °C and sunny in Paris.<|END_RESPONSE|><|END_OF_TURN_TOKEN|>" + CHATBOT


@pytest.mark.parametrize("name", [r.name for r in PRESET.recordings])
def test_recording_round_trips_except_the_plan(name):
    recording = PRESET.recording(name)
    case = PRESET.case(recording.case)
    back = parse_back(PRESET, case, recording.expected)
    assert set(PRESET.round_trip_differences) == {"reasoning_content"}
    assert "reasoning_content" not in back  # documented: the plan is read from tool_plan
    assert back == {k: v for k, v in recording.expected.items() if k != "reasoning_content"}
    if "tool_calls" in recording.expected:  # passed as tool_plan, the plan survives
        plan = {**recording.expected, "tool_plan": recording.expected.get("reasoning_content")}
        assert parse_back(PRESET, case, plan) == recording.expected
