"""Every preset: loads, every case renders (exactly like the official template's golden prompt where
tests/golden/<preset>/ exists), every recording parses (one-shot and streamed in many chunkings) to
its expected message, and an assistant message survives being rendered into history and parsed
back, except for the differences the preset documents."""

from __future__ import annotations

from pathlib import Path

import pytest
from transformers.utils.chat_parsing import parse_response

from engine.workspace import run_preset_checks
from engine.presets import load_preset, preset_names
from engine.response_spec import load_response_spec
from engine.trace import Trace, trace_text
from tests.preset_support import chunkings, frozen_date, prompt_for  # noqa: F401 - frozen_date is a fixture

PRESETS = preset_names()
CASES = [(p, c.name) for p in PRESETS for c in load_preset(p).cases]
# Golden prompts: what the official template renders for each case, with the date frozen.
GOLDEN = Path(__file__).parent / "golden"
GOLDEN_PRESETS = [p for p in PRESETS if (GOLDEN / p).is_dir()]
GOLDEN_CASES = [(p, c.name) for p in GOLDEN_PRESETS for c in load_preset(p).cases]
RECORDINGS = [(p, r.name) for p in PRESETS for r in load_preset(p).recordings]
# Round trips apply to recordings of a new assistant turn (not a continued message).
ROUND_TRIPS = [
    (p, r.name)
    for p in PRESETS
    for r in load_preset(p).recordings
    if r.expected is not None and load_preset(p).case(r.case).add_generation_prompt
]


def golden_file(name: str, case_name: str) -> Path:
    return GOLDEN / name / f"{case_name.replace(' ', '_')}.txt"


def test_the_four_models_are_there() -> None:
    assert {"smollm3", "qwen3", "gpt-oss", "command-r7b"} <= set(PRESETS)


def test_the_four_models_have_golden_prompts() -> None:
    assert {"smollm3", "qwen3", "gpt-oss", "command-r7b"} <= set(GOLDEN_PRESETS)


@pytest.mark.parametrize("name", PRESETS)
def test_preset_is_complete(name: str) -> None:
    preset = load_preset(name)
    loaded = load_response_spec(preset.response_template)
    assert loaded.ok and loaded.diagnostics == []
    assert preset.display_name and preset.cases
    if name != "blank":
        assert preset.checkpoints and preset.stop_tokens and preset.notes and preset.recordings
    for kwarg, spec in preset.template_kwargs.items():
        assert "default" in spec and spec.get("type") in {"bool", "choice", "string", "json"}, kwarg
    case_names = [c.name for c in preset.cases]
    assert len(case_names) == len(set(case_names))
    for recording in preset.recordings:
        assert recording.case in case_names, recording.name


@pytest.mark.parametrize("name, case_name", CASES)
def test_every_case_renders(name: str, case_name: str) -> None:
    preset = load_preset(name)
    prompt = prompt_for(preset, preset.case(case_name))
    assert prompt


@pytest.mark.usefixtures("frozen_date")
@pytest.mark.parametrize("name, case_name", GOLDEN_CASES)
def test_case_renders_like_the_official_template(name: str, case_name: str) -> None:
    golden = golden_file(name, case_name).read_bytes().decode("utf-8")  # bytes: no newline translation
    assert prompt_for(load_preset(name), case_name) == golden


@pytest.mark.parametrize("name", GOLDEN_PRESETS)
def test_every_golden_prompt_has_a_case_and_every_case_a_golden_prompt(name: str) -> None:
    cases = sorted(golden_file(name, c.name).name for c in load_preset(name).cases)
    assert sorted(p.name for p in (GOLDEN / name).iterdir()) == cases


@pytest.mark.parametrize("name, recording_name", RECORDINGS)
def test_every_recording_parses_in_every_chunking(name: str, recording_name: str) -> None:
    preset = load_preset(name)
    recording = preset.recording(recording_name)
    case = preset.case(recording.case)
    prompt = prompt_for(preset, case)
    spec = preset.response_spec
    assert parse_response(recording.output, spec, prefix=prompt, tools=case.tools) == recording.expected
    reference = None
    for chunks in chunkings(recording.output):
        result = trace_text(spec, recording.output, prompt, case.tools, chunks)
        assert result.diagnostics == [], chunks
        assert result.message == recording.expected, chunks
        reference = reference or result.segments
        assert result.segments == reference


def assistant_turn(preset, prefix: str, full: str) -> str:
    """The assistant turn the template wrote after `prefix`: up to and including the first stop token."""
    turn = full[len(prefix) :]
    ends = [turn.find(stop) + len(stop) for stop in preset.stop_tokens if stop in turn]
    return turn[: min(ends)] if ends else turn


def round_trip(preset, recording) -> dict:
    """Render the expected message into history after its case, and parse that turn back."""
    case = preset.case(recording.case)
    full = prompt_for(preset, case, messages=case.messages + [recording.expected], add_generation_prompt=False)
    spec = preset.response_spec
    anchor_end = Trace(spec, prompt=full).anchor_end
    turn = assistant_turn(preset, full[:anchor_end], full)
    return parse_response(turn, spec, prefix=full[:anchor_end], tools=case.tools)


@pytest.mark.parametrize("name, recording_name", ROUND_TRIPS)
def test_round_trip_with_documented_differences(name: str, recording_name: str) -> None:
    """Every field survives being rendered into history and parsed back, except the ones the preset
    documents as not rendered back."""
    preset = load_preset(name)
    recording = preset.recording(recording_name)
    parsed = round_trip(preset, recording)
    for field in set(recording.expected) | set(parsed):
        if field not in preset.round_trip_differences:
            assert parsed.get(field) == recording.expected.get(field), field


@pytest.mark.parametrize("name", PRESETS)
def test_documented_differences_really_happen(name: str) -> None:
    """Documentation, not silence: the round-trip checks (message side over every case, output side
    over every recording) meet each documented difference at least once, and fail on nothing."""
    preset = load_preset(name)
    report = run_preset_checks(preset, families=("round_trip",))
    assert [c for c in report.checks if c.status == "fail"] == []
    for field in preset.round_trip_differences:
        assert any(f"`{field}`" in c.details and "documented" in c.details for c in report.checks), (
            f"{name}: {field} is documented as not surviving a round trip, but no check meets that difference"
        )
