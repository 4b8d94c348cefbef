"""The SmolLM3 preset: the format's surprises hold, the recordings cover every kind of output, and a
round trip loses exactly the fields the preset documents. Golden prompts, loading and parsing every
recording are tested for every preset in tests/test_presets.py."""

from __future__ import annotations

from datetime import datetime

import pytest

from engine.presets import load_preset
from engine.transformers_compat import template_variables
from tests.preset_support import (  # noqa: F401 - frozen_date is a fixture
    FrozenDate,
    assert_recordings_cover_every_kind,
    chat,
    frozen_date,
    parse_back,
    prompt_for,
    rendered,
)

PRESET = load_preset("smollm3")
THINK_PREFILL = "<|im_start|>assistant\n<think>\n\n</think>\n"
# The system turn carries today's date: render on the date the facts below were written for.
pytestmark = pytest.mark.usefixtures("frozen_date")


def test_the_date_is_read_when_rendering(monkeypatch):
    assert "Today Date: 15 January 2026\n" in prompt_for(PRESET, "plain chat")
    monkeypatch.setattr(FrozenDate, "day", datetime(2025, 7, 8))
    assert "Today Date: 08 July 2025\n" in prompt_for(PRESET, "plain chat")


# ----- the format's facts --------------------------------------------------------------------------


def test_without_tools_the_system_turn_is_never_closed():
    prompt = prompt_for(PRESET, "system prompt")
    system, _, rest = prompt.partition("<|im_start|>user\n")
    assert system.endswith("## Custom Instructions\n\nYou are a concise assistant. Answer in one sentence.\n\n")
    assert "<|im_end|>" not in system
    assert rest.startswith("Why is the sky blue?<|im_end|>\n")


def test_with_tools_the_system_turn_is_closed_after_them():
    system = prompt_for(PRESET, "tools offered").partition("<|im_start|>user\n")[0]
    assert system.endswith("</tool_call>\n\n<|im_end|>\n")


def test_no_think_in_the_system_message_beats_enable_thinking():
    prompt = prompt_for(PRESET, "no_think in system prompt")
    assert PRESET.case("no_think in system prompt").template_kwargs == {}  # enable_thinking at its default, true
    assert "Reasoning Mode: /no_think\n" in prompt
    assert prompt.endswith(THINK_PREFILL)
    # The flag is removed: the custom instructions are empty, so the short default persona is used.
    short_persona = "You are a helpful AI assistant named SmolLM, trained by Hugging Face.\n\n"
    assert "## Custom Instructions\n\n" + short_persona + "<|im_start|>user" in prompt


def test_think_in_the_system_message_beats_enable_thinking_false():
    prompt = prompt_for(PRESET, "think in system prompt")
    assert "Reasoning Mode: /think\n" in prompt
    assert "## Custom Instructions\n\nYou are a patient math tutor.\n\n" in prompt
    assert prompt.endswith("<|im_start|>assistant\n")


def test_enable_thinking_false_prefills_an_empty_think_block_in_prompt_and_history():
    assert prompt_for(PRESET, "thinking off").endswith(THINK_PREFILL)
    history = prompt_for(PRESET, "thinking off in history")
    assert THINK_PREFILL + "The capital of France is Paris.<|im_end|>\n" in history
    assert prompt_for(PRESET, "multi-turn").endswith("<|im_start|>assistant\n")


def test_history_drops_reasoning_and_tool_calls():
    prompt = prompt_for(PRESET, "no generation prompt")
    assert "I'll call get_weather" not in prompt and "The tool says" not in prompt
    assert "<|im_start|>assistant\n<|im_end|>\n" in prompt  # the turn that only called a tool is empty
    assert prompt.endswith("<|im_start|>assistant\nIt's 18 °C and sunny in Copenhagen right now.<|im_end|>\n")
    assert "17 * 20" not in prompt_for(PRESET, "reasoning in history")


def test_tool_results_are_plain_user_turns_one_per_result():
    prompt = prompt_for(PRESET, "parallel tool calls")
    assert "<tool_response>" not in prompt
    assert '<|im_start|>user\n{"temperature": 21, "condition": "partly cloudy", "unit": "celsius"}<|im_end|>\n' \
           '<|im_start|>user\n{"temperature": 16, "condition": "light rain", "unit": "celsius"}<|im_end|>\n' in prompt


def test_tools_are_printed_as_python_reprs_and_tools_beat_xml_tools():
    weather = PRESET.case("tools offered").tools[0]
    messages = [{"role": "user", "content": "Hi"}]
    from_tools = chat(PRESET, messages, tools=[weather])
    assert "<tools>\n{'type': 'function', 'function': {'name': 'get_weather'" in from_tools
    assert '"get_weather"' not in from_tools
    assert chat(PRESET, messages, xml_tools=[weather]) == from_tools
    both = chat(PRESET, messages, tools=[weather], xml_tools=[{"name": "other_tool"}])
    assert both == from_tools


def test_python_tools_are_offered_for_code_blocks():
    prompt = prompt_for(PRESET, "python tools")
    assert "between '<code>' and '</code>' tags" in prompt
    assert "like regular functions:\n<tools>\n{'name': 'get_weather'" in prompt
    assert "<tool_call>" not in prompt.partition("<|im_start|>user")[0]


def test_system_override_replaces_the_metadata_block():
    prompt = prompt_for(PRESET, "system override")
    assert prompt.startswith("<|im_start|>system\nYou are a pirate. Answer like one.<|im_end|>\n<|im_start|>user\nHi!")
    assert "## Metadata" not in prompt


def test_assistant_turns_are_marked_for_training():
    result = rendered(PRESET, "multi-turn")
    assert [result.prompt[a:b] for a, b in result.generation_spans] == [
        "<|im_start|>assistant\nThe capital of France is Paris.<|im_end|>\n"
    ]


def test_template_kwargs_are_the_ones_the_template_reads():
    assert set(PRESET.template_kwargs) <= template_variables(PRESET.chat_template)
    assert {"enable_thinking", "xml_tools", "python_tools"} <= set(PRESET.template_kwargs)


# ----- recordings and round trip -------------------------------------------------------------------


def test_recordings_cover_every_kind():
    assert_recordings_cover_every_kind(PRESET, THINK_PREFILL, "<|im_end|>")


@pytest.mark.parametrize("recording", PRESET.recordings, ids=lambda r: r.name)
def test_round_trip_loses_only_the_documented_fields(recording):
    """The expected message, rendered into history and parsed back: SmolLM3's template renders
    content only, so reasoning_content and tool_calls come back missing, and nothing else changes."""
    back = parse_back(PRESET, PRESET.case(recording.case), recording.expected)
    lost = {k for k in recording.expected if k not in back}
    assert lost == set(recording.expected) & set(PRESET.round_trip_differences)
    assert back == {k: v for k, v in recording.expected.items() if k not in lost}
