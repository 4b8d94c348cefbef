"""`python -m engine check [MODEL_FOLDER] [--chat-template F] [--response-template F] [--preset NAME]
[--cases F] [--recordings F] [--format text|json|github]`: run every check (round trip, streaming,
lints, engines, tokens) for CI, on what an author has: a model folder as it sits in a model repo
(read as a Hub load reads it), or the files named by flags, which override the folder's.

Without a response template, the chat template alone is checked (rendering, lints, engines, tokens),
and the checks that need one say so. Exit codes: 0 every check passes (warnings allowed unless
--strict; notes never count), 1 a check fails or an input has errors, 2 bad usage. `--format json`
(or `--json`) prints {"checks": [{"name", "status", "details", "location", "subject", "intended"}],
"diagnostics": [...], "engines": {engine: {case: {"status", "details"}}}}; `--format github` prints
GitHub Actions annotations (engine/commands/_annotations.py)."""

from __future__ import annotations

import argparse
from dataclasses import replace

from .. import limits
from ..checks import CHECK_REGEX_PARSES, CheckReport, Location, run_checks
from ..diagnostics import Diagnostic
from ..engines import jinja_js
from ..presets import load_preset
from ..workspace import run_preset_checks
from . import UsageError, json_object, positive_timeout, print_diagnostics, print_json, read_json
from ._annotations import github_annotations
from ._case_files import read_cases, read_recordings
from ._model_inputs import Origin, add_model_inputs, read_model_inputs


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("check", help="check a chat template (and its response template): round trip, "
                                   "streaming, portability, tokens")  # fmt: skip
    add_model_inputs(parser)
    parser.add_argument("--preset", metavar="NAME", help="a preset under presets/ (with its cases and recordings)")
    parser.add_argument("--cases", metavar="FILE",
                        help='JSON: {"cases": [...]}, a list of cases, or one case (default: built-in conversations)')
    parser.add_argument("--recordings", metavar="FILE",
                        help='JSON: {"recordings": [{"name", "case", "output", "expected"}]} or a list of them')
    parser.add_argument("--template-kwargs", metavar="JSON", help='e.g. \'{"enable_thinking": false}\'')
    parser.add_argument("--differences", metavar="FILE",
                        help='JSON {"key": "why"}: differences you intend (a field the chat template drops on purpose, '
                             'or a result such as "engines.minijinja-tgi" or "chat_lint.python_method"); also accepts '
                             'a preset.json with "round_trip_differences"')
    parser.add_argument("--stop-token", action="append", default=[], metavar="TEXT",
                        help="text that ends the model's turn (repeatable; default: the eos token)")
    parser.add_argument("--random-splits", type=int, default=200, metavar="N", help="random chunkings per output (default 200)")
    parser.add_argument("--seed", type=int, default=0, help="seed for the random chunkings (default 0)")
    parser.add_argument("--timeout", type=float, default=300.0, metavar="SECONDS",
                        help="stop the checks after this long, e.g. on a template that loops (default 300)")
    parser.add_argument("--strict", action="store_true", help="exit 1 on warnings too")
    parser.add_argument("--format", choices=("text", "json", "github"), default="text",
                        help="text (default), json, or GitHub Actions annotations (::error file=…,line=…::…)")
    parser.add_argument("--json", action="store_true", help="the same as --format json")
    # --timeout bounds the whole command (engine.cli): the work, then formatting and printing it.
    parser.set_defaults(handler=run, whole=lambda a: a.timeout)


def run(args: argparse.Namespace) -> int:
    if args.random_splits < 0:
        raise UsageError("--random-splits must be 0 or more")
    positive_timeout(args.timeout)
    if args.json:
        args.format = "json"
    # The other engines' renders need @huggingface/jinja: installed here, in this command's process
    # (the workers that run the checks only look for it).
    jinja_js.install()
    # The checks run in the killable worker: templates and regexes are untrusted code. The regexes get
    # at most half the time, so a backtracking one is named before the limit.
    options = {"random_splits": args.random_splits, "seed": args.seed, "timeout": args.timeout,
               "regex_seconds": min(limits.REGEX_SECONDS * CHECK_REGEX_PARSES, args.timeout / 2)}
    if args.stop_token:
        options["stop_tokens"] = args.stop_token
    if args.template_kwargs is not None:
        options["template_kwargs"] = json_object(args.template_kwargs, "--template-kwargs")
    intended = _differences(args.differences) if args.differences else {}
    if args.preset:
        return _check_preset(args, options, intended)
    if args.model is None and not args.chat_template:
        raise UsageError("give a model folder, --chat-template FILE, or --preset NAME")
    inputs = read_model_inputs(args)
    chat_template = inputs.one_chat_template(args.template_name)
    origins = dict(inputs.origins)
    if args.cases:
        origins["case"] = Origin(args.cases)
    if chat_template is None:  # a folder without one: a located diagnostic, not a usage error
        return _finish(args, CheckReport(diagnostics=inputs.diagnostics), origins)
    cases = read_cases(args.cases) if args.cases else None
    recordings = read_recordings(args.recordings) if args.recordings else None
    if recordings and not cases:
        raise UsageError("--recordings needs --cases: each recording names the case whose prompt it continues")
    report = run_checks(chat_template, inputs.response_template, cases, recordings, round_trip_differences=intended,
                        special_tokens=inputs.special_tokens, tokenizer=inputs.tokenizer, **options)
    report.diagnostics = [*inputs.diagnostics, *report.diagnostics]
    return _finish(args, report, origins)


def _check_preset(args: argparse.Namespace, options: dict, intended: dict[str, str]) -> int:
    """A preset's checks, exactly as the Checks tab runs them, with a tokenizer's special tokens
    (and --special-tokens) by the same rule as a model folder's."""
    for flag in ("model", "chat_template", "response_template", "cases", "recordings"):
        if getattr(args, flag):
            name = "a model folder" if flag == "model" else f"--{flag.replace('_', '-')}"
            raise UsageError(f"{name} goes without --preset; a preset has its own")
    try:
        preset = load_preset(args.preset)
    except KeyError as e:
        raise UsageError(str(e.args[0])) from e
    except ValueError as e:
        return _finish(args, CheckReport(diagnostics=[Diagnostic("error", str(e), "preset")]), {})
    inputs = read_model_inputs(args)
    options.update(special_tokens=inputs.special_tokens_with(preset.special_tokens), tokenizer=inputs.tokenizer)
    if intended:
        options["round_trip_differences"] = {**preset.intended_differences(), **intended}
    return _finish(args, run_preset_checks(preset, **options), inputs.origins)


def _finish(args: argparse.Namespace, report: CheckReport, origins: dict[str, Origin]) -> int:
    if args.format != "github" and "response_template" in origins:
        _response_in_file(report, origins["response_template"])
    if args.format == "json":
        print_json(report.to_dict())
        print_diagnostics(report.diagnostics)
    elif args.format == "github":
        for line in github_annotations(report, origins):
            print(line)
    else:
        for result in report.checks:
            print(result)
        counts = report.counts()
        print(f"\n{counts['pass']} passed, {counts['info']} notes, {counts['warn']} warnings, {counts['fail']} failed")
        print_diagnostics(report.diagnostics)
    status = report.status
    return 1 if status == "fail" or (args.strict and status == "warn") else 0


def _response_in_file(report: CheckReport, origin: Origin) -> None:
    """Response-template locations moved into the file it came from (a tokenizer_config.json's
    `response_template` starts on one of its lines)."""
    for result in report.checks:
        if result.location and result.location.source == "response_template":
            result.location = Location("response_template", *origin.place(result.location.line, result.location.column))
    report.diagnostics = [replace(d, line=origin.place(d.line, d.column)[0], column=origin.place(d.line, d.column)[1])
                          if d.source == "response_template" else d for d in report.diagnostics]


def _differences(path: str) -> dict[str, str]:
    """The intended differences: {key: why}, or a preset.json's "round_trip_differences"."""
    data = read_json(path)
    if isinstance(data, dict) and isinstance(data.get("round_trip_differences"), dict):
        data = data["round_trip_differences"]
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise UsageError(f'{path}: expected {{"field or check": "why it is intended", ...}}')
    return data
