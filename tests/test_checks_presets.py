"""Every check on every preset: the round trips and streaming pass (documented differences are
reported inside a pass, as such), recordings parse to their messages, and the lints find nothing
that fails. Lint warnings on a preset are real portability findings about the official template."""

from __future__ import annotations

import pytest

from engine.workspace import run_preset_checks
from engine.presets import load_preset, preset_names

PRESETS = preset_names()
MUST_PASS = ("round_trip.message", "round_trip.output", "recording.expected", "streaming")


@pytest.fixture(scope="module", params=PRESETS)
def report(request):
    return request.param, run_preset_checks(request.param)


def test_the_inputs_load(report) -> None:
    name, result = report
    assert result.diagnostics == [], [str(d) for d in result.diagnostics]


def test_round_trips_and_streaming_pass(report) -> None:
    name, result = report
    preset = load_preset(name)
    checked = [r for r in result.checks if r.name in MUST_PASS]
    not_passing = [str(r) for r in checked if r.status != "pass"]
    assert not_passing == [], "\n\n".join(not_passing)
    # Each recording was checked on both sides and streamed; each case with an assistant message round-tripped.
    subjects = {(r.name, r.subject) for r in checked}
    for recording in preset.recordings:
        for name_ in ("round_trip.output", "streaming"):
            assert (name_, f"recording {recording.name!r}") in subjects
    with_assistant = [c for c in preset.cases if any(m.get("role") == "assistant" for m in c.messages)]
    assert {f"case {c.name!r}" for c in with_assistant} <= {s for n, s in subjects if n == "round_trip.message"}


def test_documented_differences_are_reported_as_such(report) -> None:
    name, result = report
    documented = load_preset(name).round_trip_differences
    text = "\n".join(r.details for r in result.checks if r.name.startswith("round_trip"))
    for why in documented.values():
        assert f"documented: {why}" in text


def test_lints_find_nothing_that_fails(report) -> None:
    name, result = report
    lints = [r for r in result.checks if r.name.startswith(("chat_lint.", "response_lint."))]
    assert len({r.name for r in lints}) == 16
    assert [str(r) for r in lints if r.status == "fail"] == []
