"""The Qwen3 preset: the format's surprises hold, the recordings cover every kind of output, the
prefilled empty think block is read from the prompt, and a round trip gives the same message back
when the turn comes after the last user query. Golden prompts, loading and parsing every recording
are tested for every preset in tests/test_presets.py."""

from __future__ import annotations

import pytest
from transformers.utils.chat_parsing import parse_response

from engine.presets import load_preset
from engine.trace import Trace
from engine.transformers_compat import template_variables
from tests.preset_support import assert_recordings_cover_every_kind, chat, parse_back, prompt_for

PRESET = load_preset("qwen3")
EMPTY_THINK = "<think>\n\n</think>\n\n"



# ----- the format's facts --------------------------------------------------------------------------


def test_tools_share_the_system_turn_as_json_lines():
    prompt = prompt_for(PRESET, "tools with system prompt")
    assert prompt.startswith("<|im_start|>system\nYou are a weather assistant.\n\n# Tools\n\n")
    assert '<tools>\n{"type": "function", "function": {"name": "get_weather"' in prompt
    assert prompt.count("<|im_start|>system") == 1
    assert '</tool_call><|im_end|>\n<|im_start|>user\n' in prompt


def test_enable_thinking_false_prefills_an_empty_think_block():
    assert prompt_for(PRESET, "thinking off").endswith("<|im_start|>assistant\n" + EMPTY_THINK)
    assert prompt_for(PRESET, "thinking on explicitly") == prompt_for(PRESET, "plain chat")
    assert prompt_for(PRESET, "plain chat").endswith("<|im_start|>assistant\n")


def test_reasoning_is_dropped_before_the_last_user_query():
    prompt = prompt_for(PRESET, "reasoning in history")
    assert "17 * 20" not in prompt
    assert "<|im_start|>assistant\n17 × 24 = 408.<|im_end|>\n" in prompt


def test_reasoning_is_kept_for_every_step_after_the_last_user_query():
    prompt = prompt_for(PRESET, "multi-step tool calls")
    assert "<|im_start|>assistant\n<think>\nFirst Paris.\n</think>\n\n<tool_call>" in prompt
    assert "<|im_start|>assistant\n<think>\nNow London.\n</think>\n\n<tool_call>" in prompt


def test_the_last_turn_always_gets_a_think_block():
    messages = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}]
    last_turn = "<|im_start|>assistant\n" + EMPTY_THINK + "Hello!<|im_end|>\n"
    assert chat(PRESET, messages, add_generation_prompt=False).endswith(last_turn)
    # The same answer followed by another user message loses the block.
    assert "<|im_start|>assistant\nHello!<|im_end|>" in chat(PRESET, messages + [{"role": "user", "content": "Again"}])


def test_a_think_block_inside_content_is_split_out():
    messages = [{"role": "user", "content": "What is 2 + 2?"},
                {"role": "assistant", "content": "<think>\nSimple addition.\n</think>\n\n2 + 2 = 4."}]
    prompt = chat(PRESET, messages, add_generation_prompt=False)
    assert prompt.endswith("<|im_start|>assistant\n<think>\nSimple addition.\n</think>\n\n2 + 2 = 4.<|im_end|>\n")
    # Before the last user query the split-out reasoning is dropped like any other.
    assert "Simple addition." not in chat(PRESET, messages + [{"role": "user", "content": "And 3 + 3?"}])


def test_consecutive_tool_results_share_one_user_turn():
    prompt = prompt_for(PRESET, "parallel tool calls")
    turn = prompt.rpartition("<|im_start|>user\n")[2]
    assert turn.count("<tool_response>\n") == 2
    assert turn.endswith("</tool_response><|im_end|>\n<|im_start|>assistant\n")
    assert "</tool_response>\n<tool_response>" in turn


def test_parallel_calls_are_separated_by_a_newline():
    second = '</tool_call>\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "London"}}'
    assert second in prompt_for(PRESET, "parallel tool calls")


def test_a_tool_response_user_message_is_not_the_last_query():
    # The assistant turn before the <tool_response> user message is still after the last query,
    # so it keeps its reasoning; before a real user message it loses it.
    messages = PRESET.case("tool response as user message").messages
    with_reasoning = [messages[0], {**messages[1], "reasoning_content": "Call the tool."}, messages[2]]
    assert "<think>\nCall the tool.\n</think>" in chat(PRESET, with_reasoning, tools=PRESET.case("tools offered").tools)
    plain_user = [*with_reasoning[:2], {"role": "user", "content": "thanks"}]
    assert "Call the tool." not in chat(PRESET, plain_user, tools=PRESET.case("tools offered").tools)


def test_string_arguments_are_written_as_given():
    call = {"type": "function", "function": {"name": "f", "arguments": '{"x":1}'}}
    messages = [{"role": "user", "content": "Hi"}, {"role": "assistant", "tool_calls": [call]}]
    assert '<tool_call>\n{"name": "f", "arguments": {"x":1}}\n</tool_call>' in chat(PRESET, messages, add_generation_prompt=False)


def test_template_kwargs_are_the_ones_the_template_reads():
    assert set(PRESET.template_kwargs) == {"enable_thinking"}
    assert set(PRESET.template_kwargs) <= template_variables(PRESET.chat_template)


# ----- recordings and round trip -------------------------------------------------------------------


def test_recordings_cover_every_kind():
    assert_recordings_cover_every_kind(PRESET, EMPTY_THINK, "<|im_end|>")


def test_the_prefilled_empty_think_block_is_read_from_the_prompt():
    recording = PRESET.recording("thinking disabled")
    prompt = prompt_for(PRESET, recording.case)
    trace = Trace(PRESET.response_spec, prompt=prompt)
    events = [(e["type"], e["field"]) for e in trace.initial_events]
    assert events[:2] == [("region_open", "reasoning_content"), ("region_chunk", "reasoning_content")]
    kinds = [(s.kind, s.field) for s in trace.prefix_segments()]
    assert kinds[:3] == [("open", "reasoning_content"), ("body", "reasoning_content"), ("close", "reasoning_content")]
    trace.feed(recording.output)
    trace.finalize()
    assert trace.message == {"role": "assistant", "content": recording.expected["content"]}


@pytest.mark.parametrize("recording", PRESET.recordings, ids=lambda r: r.name)
def test_round_trip_gives_the_message_back(recording):
    """Rendered as the conversation's latest turn (after the last user query), nothing is lost."""
    assert parse_back(PRESET, PRESET.case(recording.case), recording.expected) == recording.expected


def test_round_trip_before_the_last_query_loses_only_reasoning():
    """Not a round-trip difference (the latest turn keeps everything) but a history rule the notes
    document: the same turn followed by a new user message comes back without its reasoning."""
    recording = PRESET.recording("reasoning then answer")
    case = PRESET.case(recording.case)
    messages = case.messages + [recording.expected, {"role": "user", "content": "Thanks!"}]
    history = chat(PRESET, messages, add_generation_prompt=False)
    turn = history[: history.rindex("<|im_start|>user\n")]
    prompt = chat(PRESET, case.messages)
    back = parse_response(turn[len(prompt) :], PRESET.response_spec, prefix=prompt)
    assert PRESET.round_trip_differences == {}
    assert any("after the last real user query" in note for note in PRESET.notes)
    assert back == {k: v for k, v in recording.expected.items() if k != "reasoning_content"}
