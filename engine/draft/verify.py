"""Verify a draft: the probes parsed back with it (`engine.reading.outcomes`), then the round-trip,
streaming and robustness checks on the probe conversations; and how robust each library candidate
is (`rank_by_robustness`: the variations its format claims that break with the graft)."""

from __future__ import annotations

from ..cases import Case
from ..checks import CheckResult, run_checks
from ..reading.outcomes import expected_message
from ..reading.probes import Turn
from ..render import select_template
from ..checks.robustness_run import check_format_robustness, format_claims
from ..reading.library import Candidate

# Seconds the robustness check of one library candidate may take (a few candidates per draft).
CANDIDATE_SECONDS = 0.15

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
                     stop_tokens: list[str], documented: dict[str, str],
                     claims: tuple[str, dict] | None = None) -> list[CheckResult]:  # fmt: skip
    """The round-trip (both sides) and streaming checks of the draft on the probe conversations, and
    the robustness check (held to `claims`, the matched format's). With named templates, each case is
    checked with the one transformers picks for it (tool_use with tools)."""
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
            round_trip_differences=documented, random_splits=RANDOM_SPLITS, claims=claims,
            families=("round_trip", "streaming", "robustness") if source == next(iter(groups)) else ("round_trip", "streaming"),
        )  # fmt: skip
        results += report.checks
    return results


def rank_by_robustness(found: list[Candidate], most: int = 4) -> list[Candidate]:
    """`found` best first again, once each verified candidate (the first `most`) knows how many of the
    variations its format claims break with the graft: a robust candidate beats one that is not
    where what the model is told and the history tie."""
    for candidate in [c for c in found if c.verifies][:most]:
        results = check_format_robustness(candidate.spec, candidate.examples_here(), format_claims(candidate.format),
                                          budget=CANDIDATE_SECONDS)  # fmt: skip
        candidate.unsound = sum(r.status == "fail" for r in results)
    return sorted(found, key=Candidate.rank, reverse=True)
