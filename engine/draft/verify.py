"""Verify a draft: the probes parsed back with it (`engine.reading.outcomes`), then the round-trip
and streaming checks on the probe conversations."""

from __future__ import annotations

from ..cases import Case
from ..checks import CheckResult, run_checks
from ..reading.outcomes import expected_message
from ..reading.probes import Turn
from ..render import select_template

# Random chunkings per output in the streaming check: probe turns are short, and there are a dozen.
RANDOM_SPLITS = 20


def probe_cases(turns: list[Turn], drafted: set[str]) -> list[Case]:
    """The primary probes as conversations ending with the assistant message, as far as the draft
    has fields for it (what the round-trip and streaming checks run on)."""
    cases = []
    for turn in turns:
        if not turn.probe.primary:
            continue
        message = expected_message(turn, drafted)
        if len(message) == 1:
            continue
        context = turn.probe.context
        if "content" not in message and "content" in turn.message:
            message["content"] = turn.message["content"]  # the empty content some templates need
        cases.append(Case(turn.probe.label, [*turn.messages[:-1], message], context.tools,
                          add_generation_prompt=False, template_kwargs=dict(context.kwargs)))  # fmt: skip
    return cases


def run_probe_checks(chat_template: str | dict, spec: dict, cases: list[Case], special_tokens: dict,
                     stop_tokens: list[str], documented: dict[str, str]) -> list[CheckResult]:  # fmt: skip
    """The round-trip (both sides) and streaming checks of the draft on the probe conversations. With
    named templates, each case is checked with the one transformers picks for it (tool_use with tools)."""
    groups: dict[str, list[Case]] = {}
    for case in cases:
        try:
            source, _ = select_template(chat_template, case.tools)
        except ValueError:
            continue
        groups.setdefault(source, []).append(case)
    results: list[CheckResult] = []
    for source, group in groups.items():
        report = run_checks(
            source, spec, group, special_tokens=special_tokens, stop_tokens=stop_tokens,
            round_trip_differences=documented, random_splits=RANDOM_SPLITS, families=("round_trip", "streaming"),
        )  # fmt: skip
        results += report.checks
    return results
