"""The gpt-oss preset: the official template's prompts (golden files), the harmony format's facts, and
every recording parsed back, in one piece and streamed."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from unittest import mock

import pytest
import transformers.utils.chat_template_utils as chat_template_utils

from engine.cases import Case, render_case
from engine.presets import load_preset
from engine.response_spec import load_response_spec
from engine.trace import trace_text

GOLDEN = Path(__file__).parent / "golden" / "gpt-oss"
PRESET = load_preset("gpt-oss")
SPEC = load_response_spec(PRESET.response_template).template


class FrozenDatetime(datetime):
    """The date the golden prompts were rendered on (strftime_now reads datetime.now())."""

    @classmethod
    def now(cls, tz=None):
        return datetime(2026, 1, 15)


@pytest.fixture(autouse=True)
def frozen_date():
    with mock.patch.object(chat_template_utils, "datetime", FrozenDatetime):
        yield


def prompt(case: Case | str, **changes) -> str:
    """Render a case (or a preset case by name) with the preset's tokens and default kwargs."""
    case = PRESET.case(case) if isinstance(case, str) else case
    if changes:
        case = Case.from_dict({**case.to_dict(), **changes})
    result = render_case(PRESET.chat_template, case, PRESET.special_tokens, PRESET.default_kwargs())
    assert result.prompt is not None, result.diagnostics
    return result.prompt


def conversation(*messages, **settings) -> Case:
    return Case(name="ad hoc", messages=list(messages), **settings)


def parse(output: str, case: Case, chunks: list[str] | None = None) -> dict:
    result = trace_text(SPEC, output, prompt=prompt(case), tools=case.tools, chunks=chunks)
    assert not result.diagnostics, result.diagnostics
    return result.message


USER = {"role": "user", "content": "What is 2 + 2?"}
ANSWER = {"role": "assistant", "reasoning_content": "Simple arithmetic.", "content": "2 + 2 = 4."}


# ----- fidelity: the official template's prompts --------------------------------------------------


def test_every_case_has_a_golden_prompt_and_no_golden_is_stale():
    assert sorted(p.stem for p in GOLDEN.glob("*.txt")) == sorted(c.name.replace(" ", "_") for c in PRESET.cases)


@pytest.mark.parametrize("name", [c.name for c in PRESET.cases])
def test_case_renders_exactly_as_the_official_template(name):
    golden = (GOLDEN / f"{name.replace(' ', '_')}.txt").read_bytes().decode("utf-8")
    assert prompt(name) == golden


def test_response_template_loads_without_diagnostics():
    loaded = load_response_spec(PRESET.response_template)
    assert loaded.ok and loaded.diagnostics == []


# ----- the format's facts -------------------------------------------------------------------------


def test_the_template_writes_its_own_system_message_with_date_and_effort():
    text = prompt("plain chat")
    assert text.startswith(
        "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
        "Knowledge cutoff: 2024-06\nCurrent date: 2026-01-15\n\nReasoning: medium\n\n"
    )
    assert "Reasoning: low\n" in prompt("reasoning effort low")
    assert "<|start|>developer" not in text  # no instructions, no tools: no developer message


def test_the_callers_system_message_becomes_the_developer_message():
    text = prompt("system prompt")
    assert "<|start|>developer<|message|># Instructions\n\nAlways respond in riddles.\n\n<|end|>" in text
    assert text.count("<|start|>system") == 1
    assert prompt("developer message").count("# Instructions\n\nAnswer in one short sentence.") == 1


def test_a_system_message_after_the_first_is_dropped():
    text = prompt(conversation(USER, {"role": "system", "content": "Late rules"}))
    assert "Late rules" not in text


def test_functions_are_a_typescript_namespace_in_the_developer_message():
    text = prompt("tools offered")
    assert "Calls to these tools must go to the commentary channel: 'functions'.<|end|>" in text
    assert "# Tools\n\n## functions\n\nnamespace functions {\n\n// Get the current weather in a city.\ntype get_weather = (_: {\n" in text
    assert 'unit?: "celsius" | "fahrenheit", // default: celsius,\n' in text  # enum default written bare
    assert "type get_location = () => any;\n\n" in text
    assert "passengers?: number, // default: 1,\n" in text
    assert "} // namespace functions<|end|>" in text


def test_built_in_tools_go_to_the_system_message():
    text = prompt("built-in tools")
    system = text[: text.index("<|end|>")]
    assert "## browser" in system and "## python" in system
    assert "<|start|>developer" not in text


def test_an_earlier_answer_loses_its_analysis_and_ends_with_end():
    text = prompt("reasoning in history")
    assert "<|channel|>analysis" not in text
    assert "<|start|>assistant<|channel|>final<|message|>2 + 2 = 4.<|end|><|start|>user" in text


def test_the_last_turn_without_generation_prompt_keeps_its_analysis_and_ends_with_return():
    text = prompt("no generation prompt")
    assert text.endswith(
        "<|start|>assistant<|channel|>analysis<|message|>User asks: \"What is 2 + 2?\" Simple arithmetic. "
        "Provide answer.<|end|><|start|>assistant<|channel|>final<|message|>2 + 2 = 4.<|return|>"
    )


def test_generation_prompt_opens_an_assistant_message_without_a_channel():
    assert prompt("plain chat").endswith("<|start|>user<|message|>What is 2 + 2?<|end|><|start|>assistant")
    assert not prompt("plain chat", add_generation_prompt=False).endswith("<|start|>assistant")


def test_reasoning_content_is_read_like_thinking():
    standard = conversation(USER, ANSWER, add_generation_prompt=False)
    legacy = conversation(USER, {"role": "assistant", "thinking": "Simple arithmetic.", "content": "2 + 2 = 4."}, add_generation_prompt=False)
    assert prompt(standard) == prompt(legacy)
    assert "<|channel|>analysis<|message|>Simple arithmetic.<|end|>" in prompt(standard)


def test_a_tool_calling_turn_keeps_its_analysis_until_a_final_answer_follows():
    analysis = "<|start|>assistant<|channel|>analysis<|message|>User asks for the weather in Paris. We should call get_weather.<|end|>"
    assert analysis in prompt("tool call and result")
    answered = prompt("tool call, result and answer")
    assert "<|channel|>analysis" not in answered
    assert "<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{\"location\": \"Paris, France\"}<|call|>" in answered


def test_tool_results_are_json_encoded_and_addressed_from_the_function():
    text = prompt("tool call and result")
    assert '<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>"{\\"temperature\\": 18, \\"condition\\": \\"sunny\\"}"<|end|>' in text


def test_only_the_first_of_several_calls_in_a_message_is_rendered():
    text = prompt("parallel tool calls")
    assert "to=functions.get_weather" in text and "to=functions.get_time" not in text
    assert text.count("<|start|>functions.get_weather to=assistant") == 2  # the time result is misaddressed too
    sequential = prompt("sequential tool calls")
    assert "<|start|>functions.get_time to=assistant" in sequential


def test_content_and_reasoning_together_on_a_tool_call_is_an_error():
    call = {"type": "function", "function": {"name": "get_weather", "arguments": {"location": "Paris"}}}
    case = conversation(USER, {"role": "assistant", "content": "Let me check.", "reasoning_content": "Need weather.", "tool_calls": [call]},
                        tools=PRESET.case("tool call and result").tools)
    result = render_case(PRESET.chat_template, case, PRESET.special_tokens, PRESET.default_kwargs())
    assert result.prompt is None
    assert "Cannot pass both content and thinking" in result.diagnostics[0].message


# ----- parsing what the model writes ---------------------------------------------------------------


@pytest.mark.parametrize("name", [r.name for r in PRESET.recordings])
def test_recording_parses_to_its_message_one_shot_and_streamed(name):
    recording = PRESET.recording(name)
    case = PRESET.case(recording.case)
    output = recording.output
    thirds = [output[: len(output) // 3], output[len(output) // 3 : 2 * len(output) // 3], output[2 * len(output) // 3 :]]
    for chunks in (None, list(output), thirds):
        assert parse(output, case, chunks) == recording.expected


def test_the_start_anchor_cuts_the_prompt_only():
    # The output re-opens <|start|>assistant before the final channel; the reasoning before it survives.
    message = PRESET.recording("reasoning then answer")
    assert "<|start|>assistant" in message.output
    assert "reasoning_content" in parse(message.output, PRESET.case(message.case))


def test_output_cut_off_in_the_analysis_gives_reasoning_only():
    output = "<|channel|>analysis<|message|>User asks for the sum of 1..100. Use n(n+1)/2 with n = 100, so"
    expected = {"role": "assistant", "reasoning_content": "User asks for the sum of 1..100. Use n(n+1)/2 with n = 100, so"}
    for chunks in (None, list(output)):
        assert parse(output, PRESET.case("reasoning effort low"), chunks) == expected


def test_a_call_to_a_builtin_tool_is_not_a_function_call():
    output = "<|channel|>analysis to=python code<|message|>print(1)<|call|>"
    assert parse(output, PRESET.case("built-in tools")) == {"role": "assistant"}


# ----- round trip: a parsed message rendered back into history -------------------------------------


def test_the_start_anchor_finds_where_the_turn_begins():
    # Continuing a final answer: the prompt already holds this turn's analysis, after its own
    # <|start|>assistant. The anchor is the turn's start (after the user message), so it is kept.
    case = conversation(USER, {"role": "assistant", "reasoning_content": "Simple arithmetic.", "content": "The answer is"},
                        add_generation_prompt=False, continue_final_message=True)
    assert prompt(case).endswith("<|start|>assistant<|channel|>final<|message|>The answer is")
    assert parse(" 4.<|return|>", case) == {"role": "assistant", "reasoning_content": "Simple arithmetic.", "content": "The answer is 4."}


def test_several_calls_in_one_output_all_parse_but_only_the_first_renders_back():
    # Only when <|call|> is not a stop token; the template renders one call per message.
    case = PRESET.case("after the first of two calls")
    output = (
        "<|channel|>analysis<|message|>Both at once.<|end|>"
        '<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"location":"Lyon"}<|call|>'
        '<|start|>assistant<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>{"timezone":"Asia/Tokyo"}<|call|>'
    )
    message = parse(output, case)
    assert [c["function"]["name"] for c in message["tool_calls"]] == ["get_weather", "get_time"]
    history = prompt(conversation(*case.messages, message, add_generation_prompt=False, tools=case.tools))
    assert history.endswith('<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{"location": "Lyon"}<|call|>')
    assert history.count("to=functions.get_time") == 0


def history_prompt(messages: list[dict], answer: dict, **settings) -> str:
    """The prompt before `answer` once it is in history. gpt-oss drops a tool-calling turn's analysis
    as soon as a final answer follows it, so for an answer the earlier prompt is not a prefix."""
    if "tool_calls" not in answer:
        messages = [{k: v for k, v in m.items() if not ("tool_calls" in m and k == "reasoning_content")} for m in messages]
    return prompt(conversation(*messages, **settings))


@pytest.mark.parametrize("name", [r.name for r in PRESET.recordings])
def test_recording_round_trips(name):
    recording = PRESET.recording(name)
    case = PRESET.case(recording.case)
    settings = {"tools": case.tools, "template_kwargs": case.template_kwargs}
    before = history_prompt(case.messages, recording.expected, **settings)
    full = prompt(conversation(*case.messages, recording.expected, add_generation_prompt=False, **settings))
    assert full.startswith(before)
    back = trace_text(SPEC, full[len(before) :], prompt=before, tools=case.tools).message
    assert PRESET.round_trip_differences == {}  # what the model writes survives; see the notes for the rest
    assert back == recording.expected


def test_an_answer_in_history_changes_the_prompt_before_it():
    case = PRESET.case("tool call and result")
    answer = PRESET.recording("answer after tool result").expected
    with_answer = prompt(conversation(*case.messages, answer, add_generation_prompt=False, tools=case.tools))
    assert not with_answer.startswith(prompt(case))
