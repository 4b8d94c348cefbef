"""Helpers shared by the preset tests (tests/test_presets.py and tests/test_preset_<model>.py): the
frozen date the golden prompts were rendered on, rendering a preset's cases and ad-hoc chats,
parsing outputs back, and the chunkings a streamed output must survive."""

from __future__ import annotations

import dataclasses
import random
from datetime import datetime

import pytest
from transformers.utils.chat_parsing import parse_response

from engine.cases import Case, render_case
from engine.presets import Preset
from engine.render import RenderResult, render
from engine.trace import trace_text
from engine.workspace import passed_kwargs


class FrozenDate(datetime):
    """What strftime_now sees: the date the golden prompts were rendered on (set `day` to move it)."""

    day = datetime(2026, 1, 15)

    @classmethod
    def now(cls, tz=None):  # noqa: ARG003 - same signature as datetime.now
        return cls.day


@pytest.fixture
def frozen_date(monkeypatch: pytest.MonkeyPatch) -> type[FrozenDate]:
    """Freeze the date templates read (strftime_now reads datetime.now() in this module)."""
    monkeypatch.setattr("transformers.utils.chat_template_utils.datetime", FrozenDate)
    return FrozenDate


def conversation(*messages: dict, **settings) -> Case:
    """An ad-hoc case: these messages, with any Case settings (tools, add_generation_prompt, ...)."""
    return Case(name="ad hoc", messages=list(messages), **settings)


def rendered(preset: Preset, case_or_name: Case | str, **changes) -> RenderResult:
    """Render a case (or the preset's case of that name, with `changes` to its fields) with the
    preset's special tokens and default kwargs; the case's own kwargs win."""
    case = preset.case(case_or_name) if isinstance(case_or_name, str) else case_or_name
    case = dataclasses.replace(case, **changes)
    return render_case(preset.chat_template, case, preset.special_tokens, passed_kwargs(preset.kwarg_specs()))


def prompt_for(preset: Preset, case_or_name: Case | str, **changes) -> str:
    """The prompt `rendered` gives, which must come without diagnostics."""
    result = rendered(preset, case_or_name, **changes)
    assert result.diagnostics == [], result.diagnostics
    return result.prompt


def chat(preset: Preset, messages: list[dict], tools: list | None = None, add_generation_prompt: bool = True, **kwargs) -> str:
    """The preset's prompt for plain messages, with exactly these template kwargs (no defaults)."""
    result = render(preset.chat_template, messages, tools, add_generation_prompt=add_generation_prompt,
                    template_kwargs=kwargs, special_tokens=preset.special_tokens)
    assert result.ok and result.diagnostics == [], result.diagnostics
    return result.prompt


def parse(preset: Preset, output: str, case: Case, chunks: list[str] | None = None) -> dict:
    """The message the trace parses from `output` after the case's prompt (fed as `chunks`, or whole)."""
    result = trace_text(preset.response_spec, output, prompt=prompt_for(preset, case), tools=case.tools, chunks=chunks)
    assert result.diagnostics == [], result.diagnostics
    return result.message


def parse_back(preset: Preset, case: Case, message: dict) -> dict:
    """`message` rendered as the latest turn after `case`, then parsed back with the case's prompt
    as prefix. The case's prompt must be a prefix of that history; one-shot parsing and the trace
    must agree."""
    before = prompt_for(preset, case)
    history = prompt_for(preset, case, messages=case.messages + [message], add_generation_prompt=False)
    assert history.startswith(before)
    turn = history[len(before) :]
    back = parse_response(turn, preset.response_spec, prefix=before, tools=case.tools)
    assert trace_text(preset.response_spec, turn, prompt=before, tools=case.tools).message == back
    return back


def random_split(text: str, seed: int, longest: int = 12) -> list[str]:
    """`text` cut into pieces of 1 to `longest` characters, reproducibly for a seed."""
    rng, pieces, i = random.Random(seed), [], 0
    while i < len(text):
        n = rng.randint(1, longest)
        pieces.append(text[i : i + n])
        i += n
    return pieces


def chunkings(text: str) -> list[list[str]]:
    """Every chunking a streamed output must survive: whole, 1-char, thirds, sizes 2, 3, 7 and 16,
    and 15 seeded random splits."""
    third = len(text) // 3
    thirds = [text[:third], text[third : 2 * third], text[2 * third :]]
    sized = [[text[i : i + n] for i in range(0, len(text), n)] for n in (2, 3, 7, 16)]
    return [[text], list(text), thirds, *sized] + [random_split(text, seed) for seed in range(15)]


def assert_recordings_cover_every_kind(preset: Preset, empty_think: str, end_of_turn: str) -> None:
    """A thinking preset's recordings include: reasoning with an answer, one call, parallel calls, a
    prompt that prefills an empty think block (so no reasoning is parsed), delimiter-like text that
    is not a call, and an output cut off before `end_of_turn`."""
    messages = [r.expected for r in preset.recordings]
    assert any("reasoning_content" in m and "content" in m for m in messages)
    assert any(len(m.get("tool_calls", [])) == 1 for m in messages)
    assert any(len(m.get("tool_calls", [])) > 1 for m in messages)
    recordings = preset.recordings
    assert any(prompt_for(preset, r.case).endswith(empty_think) and "reasoning_content" not in r.expected for r in recordings)
    assert any(all(s in r.output for s in ("<", "</thi", "{")) and "tool_calls" not in r.expected for r in recordings)
    assert any(not r.output.endswith(end_of_turn) for r in recordings)
