"""The simulated runner: the message it builds, the text the chat template writes for it, and that
parsing that text gives the message back (or the difference the preset documents), for a test
template and for every preset and case; `python -m engine run --runner simulated`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.cases import Case, render_case
from engine.presets import load_preset, preset_names
from engine.runners import RunnerError, SimulatedRunner, example_value, simulate_message
from engine.trace import trace_text
from engine.workspace import passed_kwargs
from tests.conftest import engine_process
from tests.tiny_model import (
    CHATML_RESPONSE_TEMPLATE,
    CHATML_SPECIAL_TOKENS,
    CHATML_TEMPLATE,
    WEATHER_TOOL,
)

SPEC = json.loads(CHATML_RESPONSE_TEMPLATE)
CALL = {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 1, "unit": "celsius"}}}
CHATML_CASES = [
    Case("plain", [{"role": "user", "content": "Why is the sky blue?"}]),
    Case("system", [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]),
    Case("tools", [{"role": "user", "content": "Weather in Paris?"}], tools=[WEATHER_TOOL]),
    Case("after result", [{"role": "user", "content": "Weather in Paris?"}, {"role": "assistant", "tool_calls": [CALL]},
                          {"role": "tool", "content": "sunny"}], tools=[WEATHER_TOOL]),
    Case("thinking off", [{"role": "user", "content": "Hi"}], template_kwargs={"enable_thinking": False}),
    Case("continue", [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}],
         add_generation_prompt=False, continue_final_message=True),
]


def run(chat_template, case, response_template, special_tokens, template_kwargs=None, stop_tokens=None):
    """Simulate `case`; return (runner, prompt, output, parsed message)."""
    prompt = render_case(chat_template, case, special_tokens, template_kwargs).prompt
    assert prompt is not None
    runner = SimulatedRunner(chat_template, case, response_template, special_tokens, template_kwargs, stop_tokens)
    output = "".join(chunk.text for chunk in runner.stream(prompt, tools=case.tools))
    spec = json.loads(response_template)
    result = trace_text(spec, output, prompt, case.tools, chunks=[output[i : i + 3] for i in range(0, len(output), 3)])
    assert not [d for d in result.diagnostics if d.severity == "error"], result.diagnostics
    return runner, prompt, output, result.message


def significant(message: dict) -> dict:
    """A message without empty fields (the parser drops those it did not see)."""
    return {k: v for k, v in message.items() if v not in (None, "", [], {})}


def test_message_has_reasoning_and_a_typed_call_to_an_offered_tool() -> None:
    message = simulate_message(CHATML_CASES[2], SPEC)
    assert message["role"] == "assistant"
    assert "Weather in Paris" in message["reasoning_content"] and "get_weather" in message["reasoning_content"]
    assert "content" not in message
    assert message["tool_calls"] == [{"type": "function", "function": {
        "name": "get_weather", "arguments": {"city": "Paris", "days": 3, "unit": "celsius"}}}]  # required only, typed


def test_message_answers_after_a_tool_result_and_only_uses_the_templates_fields() -> None:
    message = simulate_message(CHATML_CASES[3], SPEC)
    assert "tool_calls" not in message and message["content"].startswith("According to get_weather")
    no_reasoning = {**SPEC, "fields": {k: v for k, v in SPEC["fields"].items() if k != "reasoning_content"}}
    assert set(simulate_message(CHATML_CASES[0], no_reasoning)) == {"role", "content"}
    no_tools = {**SPEC, "fields": {k: v for k, v in SPEC["fields"].items() if k != "tool_calls"}}
    assert set(simulate_message(CHATML_CASES[2], no_tools)) == {"role", "reasoning_content", "content"}


def test_thinking_is_off_when_the_prompt_closed_the_reasoning_region() -> None:
    case = Case("hi", [{"role": "user", "content": "Hi"}])
    prefilled = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
    assert "reasoning_content" not in simulate_message(case, SPEC, prompt=prefilled)
    assert "reasoning_content" in simulate_message(case, SPEC, prompt="<|im_start|>assistant\n")
    assert "reasoning_content" not in simulate_message(CHATML_CASES[4], SPEC)  # enable_thinking false


def test_the_simulated_text_never_echoes_delimiters_the_user_typed() -> None:
    case = Case("markup", [{"role": "user", "content": "What does </think> or <|im_end|> mean?"}])
    message = simulate_message(case, SPEC)
    assert "<" not in message["content"] and "<" not in message["reasoning_content"]


def test_example_values_follow_the_json_schema() -> None:
    assert example_value({"type": "integer"}) == 3 and example_value({"type": "number"}) == 2.5
    assert example_value({"type": "boolean"}) is True and example_value({"type": "null"}) is None
    assert example_value({"type": "string", "enum": ["c", "f"]}) == "c"
    assert example_value({"type": "string", "default": "x"}) == "x"
    assert example_value({"type": "array", "items": {"type": "integer"}}) == [3]
    assert example_value({"type": "object", "properties": {"city": {"type": "string"}}}) == {"city": "Paris"}
    assert example_value({"anyOf": [{"type": "null"}, {"type": "number"}]}) == 2.5
    assert example_value({"type": ["null", "integer"]}) == 3
    assert isinstance(example_value({"type": "string"}, "name"), str)


@pytest.mark.parametrize("case", CHATML_CASES, ids=[c.name for c in CHATML_CASES])
def test_simulated_output_parses_back_to_the_message(case: Case) -> None:
    runner, prompt, output, parsed = run(CHATML_TEMPLATE, case, CHATML_RESPONSE_TEMPLATE, CHATML_SPECIAL_TOKENS)
    assert runner.output == output and output.endswith("<|im_end|>")  # cut at the end-of-turn token
    assert significant(parsed) == significant(runner.message)


def test_a_generation_prompt_the_history_does_not_continue_is_reported() -> None:
    # The test template prefills an empty think block when thinking is off, but renders an assistant
    # message without reasoning with no think block at all.
    runner, prompt, output, _ = run(CHATML_TEMPLATE, CHATML_CASES[4], CHATML_RESPONSE_TEMPLATE, CHATML_SPECIAL_TOKENS)
    assert prompt.endswith("<think>\n\n</think>\n\n") and not output.startswith("<think>")
    assert [d.severity for d in runner.diagnostics] == ["warning"]
    assert "does not continue the prompt" in runner.diagnostics[0].message


def test_a_reply_that_changes_earlier_turns_is_found_after_the_prompt() -> None:
    # Like gpt-oss: reasoning is rendered only for assistant turns no later assistant turn follows,
    # so adding the reply removes the tool-calling turn's reasoning from the history.
    drops = CHATML_TEMPLATE.replace(
        "{%- if message.reasoning_content %}",
        "{%- set later = messages[loop.index:] | selectattr('role', 'equalto', 'assistant') | list %}"
        "{%- if message.reasoning_content and not later %}",
    )
    thought = {"role": "assistant", "reasoning_content": "I need the weather.", "tool_calls": [CALL]}
    case = Case("after result", [CHATML_CASES[3].messages[0], thought, CHATML_CASES[3].messages[2]], tools=[WEATHER_TOOL])
    runner, prompt, output, parsed = run(drops, case, CHATML_RESPONSE_TEMPLATE, CHATML_SPECIAL_TOKENS)
    assert "I need the weather." in prompt
    assert output.startswith("<think>\nThe user asks: “Weather in Paris?”") and output.endswith("<|im_end|>")
    assert significant(parsed) == significant(runner.message)
    assert [d.severity for d in runner.diagnostics] == ["info"]
    assert "renders earlier turns differently" in runner.diagnostics[0].message


def test_a_case_without_generation_prompt_has_no_reply_to_simulate() -> None:
    case = Case("no gen", [{"role": "user", "content": "Hi"}], add_generation_prompt=False)
    runner = SimulatedRunner(CHATML_TEMPLATE, case, CHATML_RESPONSE_TEMPLATE, CHATML_SPECIAL_TOKENS)
    with pytest.raises(RunnerError) as error:
        list(runner.stream("<|im_start|>user\nHi<|im_end|>\n"))
    assert "no generation prompt" in error.value.diagnostic.message
    assert "add_generation_prompt" in error.value.diagnostic.hint


def test_template_errors_are_runner_errors() -> None:
    case = CHATML_CASES[0]
    with pytest.raises(RunnerError) as error:
        SimulatedRunner(CHATML_TEMPLATE, case, '{"fields": ').simulate("<|im_start|>assistant\n")
    assert "response template has errors" in error.value.diagnostic.message
    refuses = "{% for m in messages %}{% if m.role == 'assistant' %}{{ raise_exception('no replies here') }}{% endif %}{{ m.content }}{% endfor %}"
    with pytest.raises(RunnerError) as error:
        list(SimulatedRunner(refuses, case, CHATML_RESPONSE_TEMPLATE).stream("Why is the sky blue?"))
    assert error.value.diagnostic.source == "runner" and "no replies here" in error.value.diagnostic.message


def test_rendering_can_run_in_the_bounded_worker() -> None:
    case = CHATML_CASES[2]
    prompt = render_case(CHATML_TEMPLATE, case, CHATML_SPECIAL_TOKENS).prompt
    inline = SimulatedRunner(CHATML_TEMPLATE, case, CHATML_RESPONSE_TEMPLATE, CHATML_SPECIAL_TOKENS).simulate(prompt)
    bounded = SimulatedRunner(CHATML_TEMPLATE, case, CHATML_RESPONSE_TEMPLATE, CHATML_SPECIAL_TOKENS, timeout=20).simulate(prompt)
    assert bounded == inline


PRESET_CASES = [(name, case.name) for name in preset_names() for case in load_preset(name).cases]


@pytest.mark.parametrize("name, case_name", PRESET_CASES)
def test_every_preset_case_simulates_and_round_trips_with_documented_differences(name: str, case_name: str) -> None:
    preset = load_preset(name)
    case = preset.case(case_name)
    kwargs = passed_kwargs(preset.kwarg_specs())
    if not case.add_generation_prompt and not case.continue_final_message:
        runner = SimulatedRunner(preset.chat_template, case, preset.response_template, preset.special_tokens, kwargs)
        with pytest.raises(RunnerError, match="no generation prompt"):
            runner.simulate(render_case(preset.chat_template, case, preset.special_tokens, kwargs).prompt)
        return
    runner, prompt, output, parsed = run(preset.chat_template, case, preset.response_template, preset.special_tokens,
                                         kwargs, preset.stop_tokens)
    assert output
    built, back = significant(runner.message), significant(parsed)
    lost = {field for field in set(built) | set(back) if built.get(field) != back.get(field)}
    # Only fields the preset documents as not surviving history may differ; all others come back exactly.
    assert lost <= set(preset.round_trip_differences), (lost, output)
    # ... and the runner says so, naming exactly those fields.
    warnings = [d for d in runner.diagnostics if d.severity != "info"]
    assert {name for name in lost if f"`{name}`" in " ".join(d.message for d in warnings)} == lost
    assert all("does not write" in d.message for d in warnings), warnings


def test_a_simulation_says_what_the_template_drops_and_keeps_the_users_words():
    """SmolLM3 renders only the content of an assistant turn: a simulated tool call comes out as an
    empty turn, and the runner says why instead of "parsed without problems"."""
    preset = load_preset("smollm3")
    case = preset.case("tools offered")
    kwargs = passed_kwargs(preset.kwarg_specs())
    prompt = render_case(preset.chat_template, case, preset.special_tokens, kwargs).prompt
    runner = SimulatedRunner(preset.chat_template, case, preset.response_template, preset.special_tokens, kwargs,
                             preset.stop_tokens)
    output = runner.simulate(prompt)
    [warning] = [d for d in runner.diagnostics if d.severity == "warning"]
    assert "`reasoning_content`, `tool_calls`" in warning.message and repr(output) in warning.message
    user = case.messages[-1]["content"]
    assert f"“{user}”" in runner.message["reasoning_content"]  # punctuation intact
    hostile = Case("tags", [{"role": "user", "content": "What does <tool_call> do?"}])
    message = simulate_message(hostile, SPEC)
    assert "<tool_call>" not in json.dumps(message) and "“What does tool call do”" in message["reasoning_content"]


def test_cli_simulates_a_case_file(cli, tmp_path: Path) -> None:
    (tmp_path / "chat.jinja").write_text(CHATML_TEMPLATE)
    (tmp_path / "response.json").write_text(CHATML_RESPONSE_TEMPLATE)
    (tmp_path / "case.json").write_text(json.dumps({"messages": CHATML_CASES[2].messages, "tools": [WEATHER_TOOL],
                                                    "special_tokens": CHATML_SPECIAL_TOKENS}))
    result = cli("run", "--chat-template", tmp_path / "chat.jinja", "--response-template", tmp_path / "response.json",
                 "--case", tmp_path / "case.json", "--runner", "simulated", "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["message"]["tool_calls"][0]["function"]["arguments"] == {"city": "Paris", "days": 3, "unit": "celsius"}
    assert data["raw"].startswith("<think>\n") and data["raw"].endswith("</tool_call><|im_end|>")
    assert data["tokens"] > 10 and data["diagnostics"] == []


@pytest.mark.slow  # a real `python -m engine run` process
def test_cli_simulates_a_preset_case_with_kwargs(cli) -> None:
    name = preset_names()[0]
    preset = load_preset(name)
    case = next(c for c in preset.cases if c.add_generation_prompt)
    # The one real `python -m engine run` process: what a terminal user sees.
    result = engine_process("run", "--preset", name, "--case", case.name, "--runner", "simulated")
    assert result.returncode == 0, result.stderr
    assert "\x1b[" in result.stdout and '"role": "assistant"' in result.stdout
    assert "tokens in" in result.stderr
    bad = cli("run", "--preset", name, "--case", "no such case", "--runner", "simulated")
    assert bad.returncode == 2 and case.name in bad.stderr  # the error lists the preset's cases
