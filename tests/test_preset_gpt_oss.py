"""The gpt-oss preset: the harmony format's facts, parsing what the model writes (the start anchor,
cut-off and built-in tool outputs), and every recording rendered back into history and parsed again.
Golden prompts, loading and parsing every recording are tested for every preset in
tests/test_presets.py."""

from __future__ import annotations

import pytest

from engine.presets import load_preset
from engine.trace import trace_text
from tests.preset_support import conversation, frozen_date, parse, prompt_for, rendered  # noqa: F401 - frozen_date is a fixture

PRESET = load_preset("gpt-oss")
# The system message carries the current date: render on the date the facts below were written for.
pytestmark = pytest.mark.usefixtures("frozen_date")

USER = {"role": "user", "content": "What is 2 + 2?"}
ANSWER = {"role": "assistant", "reasoning_content": "Simple arithmetic.", "content": "2 + 2 = 4."}


# ----- the format's facts -------------------------------------------------------------------------


def test_the_template_writes_its_own_system_message_with_date_and_effort():
    text = prompt_for(PRESET, "plain chat")
    assert text.startswith(
        "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
        "Knowledge cutoff: 2024-06\nCurrent date: 2026-01-15\n\nReasoning: medium\n\n"
    )
    assert "Reasoning: low\n" in prompt_for(PRESET, "reasoning effort low")
    assert "<|start|>developer" not in text  # no instructions, no tools: no developer message


def test_the_callers_system_message_becomes_the_developer_message():
    text = prompt_for(PRESET, "system prompt")
    assert "<|start|>developer<|message|># Instructions\n\nAlways respond in riddles.\n\n<|end|>" in text
    assert text.count("<|start|>system") == 1
    assert prompt_for(PRESET, "developer message").count("# Instructions\n\nAnswer in one short sentence.") == 1


def test_a_system_message_after_the_first_is_dropped():
    text = prompt_for(PRESET, conversation(USER, {"role": "system", "content": "Late rules"}))
    assert "Late rules" not in text


def test_functions_are_a_typescript_namespace_in_the_developer_message():
    text = prompt_for(PRESET, "tools offered")
    assert "Calls to these tools must go to the commentary channel: 'functions'.<|end|>" in text
    assert "# Tools\n\n## functions\n\nnamespace functions {\n\n// Get the current weather in a city.\ntype get_weather = (_: {\n" in text
    assert 'unit?: "celsius" | "fahrenheit", // default: celsius,\n' in text  # enum default written bare
    assert "type get_location = () => any;\n\n" in text
    assert "passengers?: number, // default: 1,\n" in text
    assert "} // namespace functions<|end|>" in text


def test_built_in_tools_go_to_the_system_message():
    text = prompt_for(PRESET, "built-in tools")
    system = text[: text.index("<|end|>")]
    assert "## browser" in system and "## python" in system
    assert "<|start|>developer" not in text


def test_an_earlier_answer_loses_its_analysis_and_ends_with_end():
    text = prompt_for(PRESET, "reasoning in history")
    assert "<|channel|>analysis" not in text
    assert "<|start|>assistant<|channel|>final<|message|>2 + 2 = 4.<|end|><|start|>user" in text


def test_the_last_turn_without_generation_prompt_keeps_its_analysis_and_ends_with_return():
    text = prompt_for(PRESET, "no generation prompt")
    assert text.endswith(
        "<|start|>assistant<|channel|>analysis<|message|>User asks: \"What is 2 + 2?\" Simple arithmetic. "
        "Provide answer.<|end|><|start|>assistant<|channel|>final<|message|>2 + 2 = 4.<|return|>"
    )


def test_generation_prompt_opens_an_assistant_message_without_a_channel():
    assert prompt_for(PRESET, "plain chat").endswith("<|start|>user<|message|>What is 2 + 2?<|end|><|start|>assistant")
    assert not prompt_for(PRESET, "plain chat", add_generation_prompt=False).endswith("<|start|>assistant")


def test_reasoning_content_is_read_like_thinking():
    standard = conversation(USER, ANSWER, add_generation_prompt=False)
    legacy = conversation(USER, {"role": "assistant", "thinking": "Simple arithmetic.", "content": "2 + 2 = 4."}, add_generation_prompt=False)
    assert prompt_for(PRESET, standard) == prompt_for(PRESET, legacy)
    assert "<|channel|>analysis<|message|>Simple arithmetic.<|end|>" in prompt_for(PRESET, standard)


def test_a_tool_calling_turn_keeps_its_analysis_until_a_final_answer_follows():
    analysis = "<|start|>assistant<|channel|>analysis<|message|>User asks for the weather in Paris. We should call get_weather.<|end|>"
    assert analysis in prompt_for(PRESET, "tool call and result")
    answered = prompt_for(PRESET, "tool call, result and answer")
    assert "<|channel|>analysis" not in answered
    assert "<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{\"location\": \"Paris, France\"}<|call|>" in answered


def test_tool_results_are_json_encoded_and_addressed_from_the_function():
    text = prompt_for(PRESET, "tool call and result")
    assert '<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>"{\\"temperature\\": 18, \\"condition\\": \\"sunny\\"}"<|end|>' in text


def test_only_the_first_of_several_calls_in_a_message_is_rendered():
    text = prompt_for(PRESET, "parallel tool calls")
    assert "to=functions.get_weather" in text and "to=functions.get_time" not in text
    assert text.count("<|start|>functions.get_weather to=assistant") == 2  # the time result is misaddressed too
    sequential = prompt_for(PRESET, "sequential tool calls")
    assert "<|start|>functions.get_time to=assistant" in sequential


def test_content_and_reasoning_together_on_a_tool_call_is_an_error():
    call = {"type": "function", "function": {"name": "get_weather", "arguments": {"location": "Paris"}}}
    case = conversation(USER, {"role": "assistant", "content": "Let me check.", "reasoning_content": "Need weather.", "tool_calls": [call]},
                        tools=PRESET.case("tool call and result").tools)
    result = rendered(PRESET, case)
    assert result.prompt is None
    assert "Cannot pass both content and thinking" in result.diagnostics[0].message


# ----- parsing what the model writes ---------------------------------------------------------------


def test_the_start_anchor_cuts_the_prompt_only():
    # The output re-opens <|start|>assistant before the final channel; the reasoning before it survives.
    message = PRESET.recording("reasoning then answer")
    assert "<|start|>assistant" in message.output
    assert "reasoning_content" in parse(PRESET, message.output, PRESET.case(message.case))


def test_output_cut_off_in_the_analysis_gives_reasoning_only():
    output = "<|channel|>analysis<|message|>User asks for the sum of 1..100. Use n(n+1)/2 with n = 100, so"
    expected = {"role": "assistant", "reasoning_content": "User asks for the sum of 1..100. Use n(n+1)/2 with n = 100, so"}
    for chunks in (None, list(output)):
        assert parse(PRESET, output, PRESET.case("reasoning effort low"), chunks) == expected


def test_a_call_to_a_builtin_tool_is_not_a_function_call():
    output = "<|channel|>analysis to=python code<|message|>print(1)<|call|>"
    assert parse(PRESET, output, PRESET.case("built-in tools")) == {"role": "assistant"}


# ----- round trip: a parsed message rendered back into history -------------------------------------


def test_the_start_anchor_finds_where_the_turn_begins():
    # Continuing a final answer: the prompt already holds this turn's analysis, after its own
    # <|start|>assistant. The anchor is the turn's start (after the user message), so it is kept.
    case = conversation(USER, {"role": "assistant", "reasoning_content": "Simple arithmetic.", "content": "The answer is"},
                        add_generation_prompt=False, continue_final_message=True)
    assert prompt_for(PRESET, case).endswith("<|start|>assistant<|channel|>final<|message|>The answer is")
    assert parse(PRESET, " 4.<|return|>", case) == {"role": "assistant", "reasoning_content": "Simple arithmetic.", "content": "The answer is 4."}


def test_several_calls_in_one_output_all_parse_but_only_the_first_renders_back():
    # Only when <|call|> is not a stop token; the template renders one call per message.
    case = PRESET.case("after the first of two calls")
    output = (
        "<|channel|>analysis<|message|>Both at once.<|end|>"
        '<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"location":"Lyon"}<|call|>'
        '<|start|>assistant<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>{"timezone":"Asia/Tokyo"}<|call|>'
    )
    message = parse(PRESET, output, case)
    assert [c["function"]["name"] for c in message["tool_calls"]] == ["get_weather", "get_time"]
    history = prompt_for(PRESET, conversation(*case.messages, message, add_generation_prompt=False, tools=case.tools))
    assert history.endswith('<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"location": "Lyon"}<|call|>')
    assert history.count("to=functions.get_time") == 0


def history_prompt(messages: list[dict], answer: dict, **settings) -> str:
    """The prompt before `answer` once it is in history. gpt-oss drops a tool-calling turn's analysis
    as soon as a final answer follows it, so for an answer the earlier prompt is not a prefix."""
    if "tool_calls" not in answer:
        messages = [{k: v for k, v in m.items() if not ("tool_calls" in m and k == "reasoning_content")} for m in messages]
    return prompt_for(PRESET, conversation(*messages, **settings))


@pytest.mark.parametrize("name", [r.name for r in PRESET.recordings])
def test_recording_round_trips(name):
    recording = PRESET.recording(name)
    case = PRESET.case(recording.case)
    settings = {"tools": case.tools, "template_kwargs": case.template_kwargs}
    before = history_prompt(case.messages, recording.expected, **settings)
    full = prompt_for(PRESET, conversation(*case.messages, recording.expected, add_generation_prompt=False, **settings))
    assert full.startswith(before)
    back = trace_text(PRESET.response_spec, full[len(before) :], prompt=before, tools=case.tools).message
    # What the model writes survives whole here, even the fields preset.json documents as round-trip
    # differences: those are met by the round-trip checks (tests/test_presets.py).
    assert back == recording.expected


def test_an_answer_in_history_changes_the_prompt_before_it():
    case = PRESET.case("tool call and result")
    answer = PRESET.recording("answer after tool result").expected
    with_answer = prompt_for(PRESET, conversation(*case.messages, answer, add_generation_prompt=False, tools=case.tools))
    assert not with_answer.startswith(prompt_for(PRESET, case))
