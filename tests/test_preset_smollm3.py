"""The SmolLM3 preset: its chat template renders every case exactly as the official template does
(golden prompts under tests/golden/smollm3, rendered by the official template with the date frozen),
the format's surprises hold, every recording parses to its expected message however it is chunked,
and a round trip loses exactly the fields the preset documents."""

from __future__ import annotations

import dataclasses
import random
from datetime import datetime
from pathlib import Path

import pytest
from transformers.utils.chat_parsing import parse_response
from transformers.utils.chat_template_utils import _get_template_variables

from engine.cases import Case, render_case
from engine.presets import load_preset
from engine.render import render
from engine.response_spec import load_response_spec
from engine.trace import trace_text

PRESET = load_preset("smollm3")
GOLDEN = Path(__file__).parent / "golden" / "smollm3"
THINK_PREFILL = "<|im_start|>assistant\n<think>\n\n</think>\n"


class FrozenDate(datetime):
    """What strftime_now sees: the date the golden prompts were rendered on."""

    day = datetime(2026, 1, 15)

    @classmethod
    def now(cls, tz=None):  # noqa: ARG003 - same signature as datetime.now
        return cls.day


@pytest.fixture(autouse=True)
def frozen_date(monkeypatch):
    monkeypatch.setattr("transformers.utils.chat_template_utils.datetime", FrozenDate)


def prompt_for(case: Case | str, **changes) -> str:
    """Our template's prompt for a case (by name), with the preset's tokens and default kwargs."""
    case = PRESET.case(case) if isinstance(case, str) else case
    case = dataclasses.replace(case, **changes)
    result = render_case(PRESET.chat_template, case, PRESET.special_tokens, PRESET.default_kwargs())
    assert result.ok, result.diagnostics
    return result.prompt


def chat(messages: list[dict], tools=None, add_generation_prompt=True, **kwargs) -> str:
    result = render(PRESET.chat_template, messages, tools, add_generation_prompt=add_generation_prompt,
                    template_kwargs=kwargs, special_tokens=PRESET.special_tokens)
    assert result.ok, result.diagnostics
    return result.prompt


def chunkings(text: str) -> list[list[str]]:
    out = [[text], list(text)] + [[text[i : i + n] for i in range(0, len(text), n)] for n in (2, 3, 7, 16)]
    for seed in range(15):
        rng, pieces, i = random.Random(seed), [], 0
        while i < len(text):
            n = rng.randint(1, 12)
            pieces.append(text[i : i + n])
            i += n
        out.append(pieces)
    return out


# ----- golden prompts ------------------------------------------------------------------------------


@pytest.mark.parametrize("case", PRESET.cases, ids=lambda c: c.name)
def test_case_renders_like_the_official_template(case):
    golden = (GOLDEN / f"{case.name.replace(' ', '_')}.txt").read_text(encoding="utf-8")
    assert prompt_for(case) == golden


def test_every_golden_prompt_has_a_case():
    names = {c.name.replace(" ", "_") for c in PRESET.cases}
    assert {p.stem for p in GOLDEN.glob("*.txt")} == names


def test_the_date_is_read_when_rendering(monkeypatch):
    assert "Today Date: 15 January 2026\n" in prompt_for("plain chat")
    monkeypatch.setattr(FrozenDate, "day", datetime(2025, 7, 8))
    assert "Today Date: 08 July 2025\n" in prompt_for("plain chat")


# ----- the format's facts --------------------------------------------------------------------------


def test_without_tools_the_system_turn_is_never_closed():
    prompt = prompt_for("system prompt")
    system, _, rest = prompt.partition("<|im_start|>user\n")
    assert system.endswith("## Custom Instructions\n\nYou are a concise assistant. Answer in one sentence.\n\n")
    assert "<|im_end|>" not in system
    assert rest.startswith("Why is the sky blue?<|im_end|>\n")


def test_with_tools_the_system_turn_is_closed_after_them():
    system = prompt_for("tools offered").partition("<|im_start|>user\n")[0]
    assert system.endswith("</tool_call>\n\n<|im_end|>\n")


def test_no_think_in_the_system_message_beats_enable_thinking():
    prompt = prompt_for("no_think in system prompt")
    assert PRESET.case("no_think in system prompt").template_kwargs == {}  # enable_thinking at its default, true
    assert "Reasoning Mode: /no_think\n" in prompt
    assert prompt.endswith(THINK_PREFILL)
    # The flag is removed: the custom instructions are empty, so the short default persona is used.
    short_persona = "You are a helpful AI assistant named SmolLM, trained by Hugging Face.\n\n"
    assert "## Custom Instructions\n\n" + short_persona + "<|im_start|>user" in prompt


def test_think_in_the_system_message_beats_enable_thinking_false():
    prompt = prompt_for("think in system prompt")
    assert "Reasoning Mode: /think\n" in prompt
    assert "## Custom Instructions\n\nYou are a patient math tutor.\n\n" in prompt
    assert prompt.endswith("<|im_start|>assistant\n")


def test_enable_thinking_false_prefills_an_empty_think_block_in_prompt_and_history():
    assert prompt_for("thinking off").endswith(THINK_PREFILL)
    history = prompt_for("thinking off in history")
    assert THINK_PREFILL + "The capital of France is Paris.<|im_end|>\n" in history
    assert prompt_for("multi-turn").endswith("<|im_start|>assistant\n")


def test_history_drops_reasoning_and_tool_calls():
    prompt = prompt_for("no generation prompt")
    assert "I'll call get_weather" not in prompt and "The tool says" not in prompt
    assert "<|im_start|>assistant\n<|im_end|>\n" in prompt  # the turn that only called a tool is empty
    assert prompt.endswith("<|im_start|>assistant\nIt's 18 °C and sunny in Copenhagen right now.<|im_end|>\n")
    assert "17 * 20" not in prompt_for("reasoning in history")


def test_tool_results_are_plain_user_turns_one_per_result():
    prompt = prompt_for("parallel tool calls")
    assert "<tool_response>" not in prompt
    assert '<|im_start|>user\n{"temperature": 21, "condition": "partly cloudy", "unit": "celsius"}<|im_end|>\n' \
           '<|im_start|>user\n{"temperature": 16, "condition": "light rain", "unit": "celsius"}<|im_end|>\n' in prompt


def test_tools_are_printed_as_python_reprs_and_tools_beat_xml_tools():
    weather = PRESET.case("tools offered").tools[0]
    messages = [{"role": "user", "content": "Hi"}]
    from_tools = chat(messages, tools=[weather])
    assert "<tools>\n{'type': 'function', 'function': {'name': 'get_weather'" in from_tools
    assert '"get_weather"' not in from_tools
    assert chat(messages, xml_tools=[weather]) == from_tools
    both = chat(messages, tools=[weather], xml_tools=[{"name": "other_tool"}])
    assert both == from_tools


def test_python_tools_are_offered_for_code_blocks():
    prompt = prompt_for("python tools")
    assert "between '<code>' and '</code>' tags" in prompt
    assert "like regular functions:\n<tools>\n{'name': 'get_weather'" in prompt
    assert "<tool_call>" not in prompt.partition("<|im_start|>user")[0]


def test_system_override_replaces_the_metadata_block():
    prompt = prompt_for("system override")
    assert prompt.startswith("<|im_start|>system\nYou are a pirate. Answer like one.<|im_end|>\n<|im_start|>user\nHi!")
    assert "## Metadata" not in prompt


def test_assistant_turns_are_marked_for_training():
    case = PRESET.case("multi-turn")
    result = render_case(PRESET.chat_template, case, PRESET.special_tokens, PRESET.default_kwargs())
    assert [result.prompt[a:b] for a, b in result.generation_spans] == [
        "<|im_start|>assistant\nThe capital of France is Paris.<|im_end|>\n"
    ]


def test_template_kwargs_are_the_ones_the_template_reads():
    assert set(PRESET.template_kwargs) <= _get_template_variables(PRESET.chat_template)
    assert {"enable_thinking", "xml_tools", "python_tools"} <= set(PRESET.template_kwargs)


# ----- recordings and round trip -------------------------------------------------------------------


def test_response_template_loads_cleanly():
    loaded = load_response_spec(PRESET.response_template)
    assert loaded.ok and loaded.diagnostics == []


def test_recordings_cover_every_kind():
    assert {r.case for r in PRESET.recordings} <= {c.name for c in PRESET.cases}
    messages = [r.expected for r in PRESET.recordings]
    assert any("reasoning_content" in m and "content" in m for m in messages)
    assert any(len(m.get("tool_calls", [])) == 1 for m in messages)
    assert any(len(m.get("tool_calls", [])) > 1 for m in messages)
    recordings = PRESET.recordings
    assert any(prompt_for(r.case).endswith(THINK_PREFILL) and "reasoning_content" not in r.expected for r in recordings)
    assert any(all(s in r.output for s in ("<", "</thi", "{")) and "tool_calls" not in r.expected for r in recordings)
    assert any(not r.output.endswith("<|im_end|>") for r in PRESET.recordings)


@pytest.mark.parametrize("recording", PRESET.recordings, ids=lambda r: r.name)
def test_recording_parses_to_its_expected_message(recording):
    case = PRESET.case(recording.case)
    prompt, spec = prompt_for(case), PRESET.response_spec
    assert parse_response(recording.output, spec, prefix=prompt, tools=case.tools) == recording.expected
    for chunks in chunkings(recording.output):
        result = trace_text(spec, recording.output, prompt=prompt, tools=case.tools, chunks=chunks)
        assert result.diagnostics == []
        assert result.message == recording.expected, chunks


@pytest.mark.parametrize("recording", PRESET.recordings, ids=lambda r: r.name)
def test_round_trip_loses_only_the_documented_fields(recording):
    """The expected message, rendered into history and parsed back: SmolLM3's template renders
    content only, so reasoning_content and tool_calls come back missing, and nothing else changes."""
    case = PRESET.case(recording.case)
    prompt = prompt_for(case)
    history = prompt_for(case, messages=case.messages + [recording.expected], add_generation_prompt=False)
    assert history.startswith(prompt)
    back = parse_response(history[len(prompt) :], PRESET.response_spec, prefix=prompt, tools=case.tools)
    lost = {k for k in recording.expected if k not in back}
    assert lost == set(recording.expected) & set(PRESET.round_trip_differences)
    assert back == {k: v for k, v in recording.expected.items() if k not in lost}
