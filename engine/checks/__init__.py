"""Checks for template authors: proof that the chat template and the response template are inverses
(round trip, both sides), that streaming cannot change the parsed result, and that both templates
work outside Python (lints). Each result is pass / warn / fail with details and a location.

    report = run_checks(chat_template, response_template_json, cases, recordings)
    report = Workspace.from_preset(load_preset("smollm3")).run_checks()   # engine.workspace
    report.status, report.to_dict()   # {"checks": [...], "diagnostics": [...]}
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from .. import limits
from ..cases import Case, Recording
from ..diagnostics import Diagnostic
from ..errors import log_failure
from ..jinja_analysis import environment
from ..regex_bounds import RegexTimeout, regex_budget
from ..render import template_error
from ..response_spec import LoadedSpec, load_response_spec
from ..sandbox import bounded_or_why
from ..tokens.load import TokenizerFiles, cached_load
from .chat_lints import check_chat_lints
from .context import CheckContext, Sample, default_cases
from .engines_matrix import engine_matrix
from .fitting import fit_cases
from .response_lints import check_response_lints
from .results import CheckReport, CheckResult, Location, Status
from .round_trip import assistant_turns, check_message_round_trip
from .round_trip_output import check_output_round_trip
from .robustness import Claims
from .robustness_run import check_pair_robustness
from .streaming import check_streaming
from .tokens import check_tokens

FAMILIES = ("round_trip", "streaming", "robustness", "chat_lints", "response_lints", "engines", "tokens")

__all__ = [
    "FAMILIES",
    "CheckReport",
    "CheckResult",
    "Location",
    "Sample",
    "Status",
    "mark_intended",
    "run_checks",
]


# The regexes of a whole run of checks (every chunking of every output) share this many times
# the budget of one parse.
CHECK_REGEX_PARSES = 5


def run_checks(
    chat_template: str,
    response_template: str | dict,
    cases: Iterable[Case] | None = None,
    recordings: Iterable[Recording] | None = None,
    runs: Iterable[Sample | tuple[Case, str]] | None = None,
    *,
    special_tokens: dict | None = None,
    template_kwargs: dict | None = None,
    stop_tokens: list[str] | None = None,
    round_trip_differences: dict[str, str] | None = None,
    tokenizer: Any = None,
    random_splits: int = 200,
    seed: int = 0,
    families: Iterable[str] = FAMILIES,
    timeout: float | None = None,
    regex_seconds: float | None = None,
    owner: Any = None,
    claims: tuple[str, dict] | None = None,
) -> CheckReport:
    """Run every check (or the named `families`) on a pair of templates. Never raises: inputs that
    cannot be read become diagnostics, and the checks that need them fail with "not run".

    With `timeout` (seconds), the checks run in the killable, memory-capped worker (engine.sandbox),
    as `render(timeout=)` does: they render and parse untrusted templates many times; `owner` is
    whose checks they are (one call at a time each). Every parse they make shares one regex budget,
    `regex_seconds` (default CHECK_REGEX_PARSES parses' worth): a backtracking pattern stops them
    with a message instead of taking the time of every parse.

    `tokenizer` is a transformers tokenizer, or the `TokenizerFiles` of one (what the app sends to
    the worker: built there once and kept, keyed by the files' hash); without one the token checks
    say once that they did not run.

    `cases` default to built-in conversations fitted to what the chat template reads; `recordings`
    name their case; `runs` are outputs a runner produced, as (case, text) pairs. `round_trip_differences`
    are the differences the author intends: a field the chat template drops on purpose (a preset's),
    reported as documented, or a result's key (`name` or `name [subject]`, e.g. "engines.minijinja-tgi"),
    reported as intended (`info`) instead of a warning or failure. `claims` are (format name, its
    `variations`): what the robustness check holds the pair to (the draft passes its format's)."""
    options = dict(locals())
    del options["timeout"], options["owner"], options["regex_seconds"]
    if timeout is not None:
        return _run_bounded(timeout, {**options, "regex_seconds": regex_seconds}, owner)
    with regex_budget(regex_seconds or limits.REGEX_SECONDS * CHECK_REGEX_PARSES):
        return _run(**options)


def _run(
    chat_template: str,
    response_template: str | dict,
    cases: Iterable[Case] | None,
    recordings: Iterable[Recording] | None,
    runs: Iterable[Sample | tuple[Case, str]] | None,
    *,
    special_tokens: dict | None,
    template_kwargs: dict | None,
    stop_tokens: list[str] | None,
    round_trip_differences: dict[str, str] | None,
    tokenizer: Any,
    random_splits: int,
    seed: int,
    families: Iterable[str],
    claims: tuple[str, dict] | None = None,
) -> CheckReport:
    families = [f for f in families if f in FAMILIES]
    report = CheckReport()
    response_text = response_template if isinstance(response_template, str) else json.dumps(response_template, indent=2)
    # A chat template alone (no response template yet) is checked too; what needs one says so.
    chat_only = response_template is None or not response_text.strip()
    loaded = _loaded_templates(chat_template, response_text, chat_only, families, report)
    if loaded is None:
        return report
    tokenizer = _tokenizer(tokenizer, report)
    ctx = CheckContext(
        chat_template=chat_template,
        response_text=response_text,
        spec={} if chat_only else loaded.spec or {},
        template=None if chat_only else loaded.template,  # type: ignore[arg-type]
        cases=[],
        samples=[],
        special_tokens=dict(special_tokens or {}),
        template_kwargs=dict(template_kwargs or {}),
        stop_tokens=list(stop_tokens or []),
        documented=dict(round_trip_differences or {}),
        tokenizer=tokenizer,
        random_splits=random_splits,
        seed=seed,
        claims=claims,
    )
    _cases_and_samples(ctx, list(cases or []), recordings or [], runs or [], report)
    if chat_only:
        _chat_template_only(ctx, families, report)
    else:
        _with_response_template(ctx, families, report)
    mark_intended(report, ctx.documented)
    return report


def _loaded_templates(chat_template: str, response_text: str, chat_only: bool, families: list[str],
                      report: CheckReport) -> LoadedSpec | None:  # fmt: skip
    """The response template loaded, and the chat template compiled as transformers compiles it
    (every compile-time error placed), their problems on `report`; None when either has errors, and
    then every family says it was not run."""
    loaded = load_response_spec("{}" if chat_only else response_text)
    report.diagnostics += [] if chat_only else loaded.diagnostics
    try:
        environment(chat_template)  # compiled as transformers compiles it: every compile-time error, placed
        chat_ok = True
    except Exception as e:  # noqa: BLE001 - a syntax or compile error: the author's to see, on its token
        report.diagnostics.append(template_error(e, chat_template))
        chat_ok = False
    if (loaded.ok or chat_only) and chat_ok:
        return loaded
    broken = "the chat template" if not chat_ok else "the response template"
    for family in families:
        report.checks.append(CheckResult(family, "fail", f"Not run: {broken} has errors (see diagnostics)."))
    return None


def _tokenizer(tokenizer: Any, report: CheckReport) -> Any:
    """The tokenizer the token checks use: `TokenizerFiles` built (once, cached), with a special token
    it lacks on `report`; None when they do not build."""
    if not isinstance(tokenizer, TokenizerFiles):
        return tokenizer
    try:
        built = cached_load(tokenizer)
    except ValueError as e:
        report.diagnostics.append(Diagnostic("error", f"The tokenizer could not be loaded: {e}", "tokenizer"))
        return None
    report.diagnostics += [d for d in built.notes if d.severity == "error"]  # a special token it lacks
    return built.tokenizer


def _cases_and_samples(ctx: CheckContext, cases: list[Case], recordings: Iterable[Recording],
                       runs: Iterable[Sample | tuple[Case, str]], report: CheckReport) -> None:  # fmt: skip
    """What the checks run on: the author's cases (those of a shape rendering needs), or built-in
    conversations fitted to what the chat template requires; and the recordings and runs as samples."""
    ctx.cases = [c for c in cases if _valid_case(c, report.diagnostics)] if cases else default_cases(ctx.fields)
    ctx.default_cases = not cases
    if ctx.default_cases:
        # Built-in conversations must not make a correct template fail: adapt them to what it requires.
        ctx.cases, fitted = _guarded_pair("template.requires", lambda: fit_cases(ctx, ctx.cases), ctx.cases)
        report.checks += fitted
    ctx.samples = _samples(ctx.cases, recordings, runs, report.diagnostics)


def _with_response_template(ctx: CheckContext, families: list[str], report: CheckReport) -> None:
    """Every family asked for, on the samples (or, without any, the assistant turns the chat template
    writes), each check guarded so that one crashing cannot hide the others."""
    try:
        turns, problems = assistant_turns(ctx)
    except Exception as e:  # noqa: BLE001 - see _guarded
        turns, problems = [], [_crashed("round_trip.message", e)]
    outputs = ctx.samples or [turn.sample() for turn in turns]
    if "round_trip" in families:
        report.checks += problems
        report.checks += _guarded("round_trip.message", lambda: check_message_round_trip(ctx, turns))
        if not turns and not problems:
            report.checks.append(CheckResult("round_trip.message", "pass", "No case has an assistant message to round-trip."))
        for sample in outputs:
            report.checks += _guarded("round_trip.output", lambda: check_output_round_trip(ctx, sample), subject=sample.subject)
    if "streaming" in families:
        for sample in outputs:
            report.checks += _guarded("streaming", lambda: [check_streaming(ctx, sample)], subject=sample.subject)
        if not outputs:
            report.checks.append(CheckResult("streaming", "pass", "No output to stream: add a recording or an assistant message."))
    if "robustness" in families:
        report.checks += _guarded("robustness", lambda: check_pair_robustness(ctx, _claims(ctx.claims)))
    if "chat_lints" in families:
        report.checks += _guarded("chat_lint", lambda: check_chat_lints(ctx))
    if "response_lints" in families:
        report.checks += _guarded("response_lint", lambda: check_response_lints(ctx))
    if "engines" in families:
        report.engines, engine_results = _guarded_pair("engines", lambda: engine_matrix(ctx), {})
        report.checks += engine_results
    if "tokens" in families:
        report.checks += _guarded("tokens", lambda: check_tokens(ctx, outputs))
    _name_the_built_in_cases(ctx, report)


def _claims(claims: tuple[str, dict] | None) -> Claims | None:
    return None if claims is None else Claims.from_json(claims[1], f"the library format `{claims[0]}`")


def _name_the_built_in_cases(ctx: CheckContext, report: CheckReport) -> None:
    """A result about a built-in conversation names them, and says to give cases of one's own."""
    if ctx.default_cases and ctx.cases:
        names = ", ".join(repr(c.name) for c in ctx.cases)
        for result in report.checks:
            if result.subject and result.subject.startswith(("case", "rendered turn")):
                result.details += f"\n(built-in case{'s' if len(ctx.cases) > 1 else ''} {names}: give cases of your own to check with them)"


NEEDS_RESPONSE_TEMPLATE = (
    "Not run: there is no response template yet, and this check parses the model's output with it. Draft one from "
    "the chat template (python -m engine draft MODEL_FOLDER, or “Draft from the chat template” in the playground), "
    "save it as response_template in tokenizer_config.json, and check again.")


def _chat_template_only(ctx: CheckContext, families: list[str], report: CheckReport) -> None:
    """The checks a chat template alone gets: every case renders, the chat lints, the engines and the
    token checks; those that parse output say they need a response template (and name the draft)."""
    results = report.checks
    rendered = []
    for case in ctx.cases if "round_trip" in families else []:  # rendering stands in for the round trip
        result = ctx.render(case)
        if not result.ok:
            problem = result.diagnostics[0] if result.diagnostics else None
            where = Location("chat_template", problem.line, problem.column) if problem and problem.source == "chat_template" else None
            results.append(CheckResult("template.renders", "fail", f"Rendering failed: {problem.message if problem else 'unknown error'}",
                                       where, f"case {case.name!r}"))  # fmt: skip
        else:
            rendered.append(case.name)
    if rendered:
        results.append(CheckResult("template.renders", "pass", f"Every case renders: {', '.join(map(repr, rendered))}."))
    for family, name in (("round_trip", "round_trip"), ("streaming", "streaming"), ("robustness", "robustness"),
                         ("response_lints", "response_lint")):
        if family in families:
            results.append(CheckResult(name, "info", NEEDS_RESPONSE_TEMPLATE))
    if "chat_lints" in families:
        results += _guarded("chat_lint", lambda: check_chat_lints(ctx))
    if "engines" in families:
        report.engines, engine_results = _guarded_pair("engines", lambda: engine_matrix(ctx), {})
        results += engine_results
    if "tokens" in families:
        results += _guarded("tokens", lambda: check_tokens(ctx, ctx.samples))


def mark_intended(report: CheckReport, intended: dict[str, str]) -> None:
    """Results the author marked as intended (by `name [subject]` or `name`) become `info`, with why."""
    for result in report.checks:
        why = intended.get(result.key, intended.get(result.name))
        if why is not None and result.status in ("warn", "fail"):
            result.intended = why
            result.status = "info"
            result.details = f"Intended: {why}\n{result.details}"


def _run_bounded(timeout: float, options: dict, owner: Any) -> CheckReport:
    report, problem = bounded_or_why(run_checks, options, timeout, owner, doing="The checks", it="they", long=True,
                                     hint="Look for loops over large ranges, or a catastrophic regex.")
    return report if problem is None else CheckReport(diagnostics=[problem])


def _guarded(name: str, run: Any, subject: str | None = None) -> list[CheckResult]:
    """Run one check; an unexpected error becomes a failed result instead of a traceback (a bug in a
    check must not hide the other checks' results from the author)."""
    try:
        return run()
    except Exception as e:  # noqa: BLE001
        return [_crashed(name, e, subject)]


def _guarded_pair(name: str, run: Any, fallback: Any) -> tuple[Any, list[CheckResult]]:
    """`_guarded` for a step that returns (value, results)."""
    try:
        return run()
    except Exception as e:  # noqa: BLE001
        return fallback, [_crashed(name, e)]


def _crashed(name: str, error: Exception, subject: str | None = None) -> CheckResult:
    if isinstance(error, RegexTimeout):
        return CheckResult(name, "fail", f"Stopped: {error}. A pattern with nested quantifiers, such as (a+)+, can "
                           "take exponential time; rewrite it.", None, subject)
    log_failure(f"The check {name} crashed", error)
    return CheckResult(name, "fail", f"The check could not run: {type(error).__name__}: {error}", None, subject)


def _valid_case(case: Any, diagnostics: list[Diagnostic]) -> bool:
    """Whether a case has the shape rendering needs; if not, a diagnostic says what is wrong."""
    name = getattr(case, "name", "?")
    problem = None
    if not isinstance(case, Case):
        problem = f"is a {type(case).__name__}, not a case"
    elif not isinstance(case.messages, list) or not all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in case.messages):
        problem = "needs messages: a list of objects, each with a role"
    elif not isinstance(case.template_kwargs, dict) or not isinstance(case.special_tokens, dict):
        problem = "needs template_kwargs and special_tokens to be objects"
    elif case.tools is not None and not (isinstance(case.tools, list) and all(isinstance(t, dict) for t in case.tools)):
        problem = "needs tools to be a list of objects"
    if problem:
        diagnostics.append(Diagnostic("error", f"Case {name!r} {problem}.", "case"))
    return problem is None


def _samples(
    cases: list[Case], recordings: Iterable[Recording], runs: Iterable[Sample | tuple[Case, str]], diagnostics: list[Diagnostic]
) -> list[Sample]:
    """Recordings and runs as samples; a recording naming an unknown case becomes a diagnostic."""
    by_name = {case.name: case for case in cases}
    samples = []
    for recording in recordings:
        if not isinstance(recording.output, str):
            diagnostics.append(Diagnostic("error", f"Recording {recording.name!r} has no output text.", "case"))
            continue
        case = by_name.get(recording.case)
        if case is None:
            diagnostics.append(Diagnostic(
                "error", f"Recording {recording.name!r} names case {recording.case!r}, which is not among the cases.",
                "case", hint=f"Cases: {', '.join(sorted(by_name)) or 'none'}.",
            ))  # fmt: skip
            continue
        samples.append(Sample(recording.name, case, recording.output, recording.expected, "recording"))
    for i, run in enumerate(runs):
        if isinstance(run, Sample):
            samples.append(run)
        else:
            case, output = run
            samples.append(Sample(f"run {i + 1}", case, output, origin="run"))
    return samples
