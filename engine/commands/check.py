"""`python -m engine check (--preset NAME | --chat-template F --response-template F [--cases F]
[--recordings F]) [--json]`: run every check (round trip, streaming, lints) for CI.

Exit codes: 0 every check passes (warnings allowed unless --strict; notes never count), 1 a check
fails or an input has errors, 2 bad usage. `--json` prints {"checks": [{"name", "status", "details",
"location", "subject", "intended"}], "diagnostics": [...], "engines": {engine: {case: {"status", "details"}}}}."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace

from .. import limits
from ..cases import Case, Recording
from ..checks import CHECK_REGEX_PARSES, CheckReport, Location, run_checks
from ..checks.regex_portability import value_start
from ..diagnostics import Diagnostic, line_col
from ..engines import jinja_js
from ..hub.files import special_tokens_of
from ..presets import load_preset
from ..response_spec import key_offsets
from ..workspace import run_preset_checks
from . import UsageError, json_object, positive_timeout, print_diagnostics, print_json, read_json, read_text


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("check", help="check a template pair: round trip, streaming, portability lints")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--preset", metavar="NAME", help="a preset under presets/ (with its cases and recordings)")
    source.add_argument("--chat-template", metavar="FILE", help="a .jinja file (with --response-template)")
    parser.add_argument("--response-template", metavar="FILE",
                        help="the response template JSON, or a tokenizer_config.json holding it under \"response_template\"")
    parser.add_argument("--cases", metavar="FILE",
                        help='JSON: {"cases": [...]}, a list of cases, or one case (default: built-in conversations)')
    parser.add_argument("--recordings", metavar="FILE",
                        help='JSON: {"recordings": [{"name", "case", "output", "expected"}]} or a list of them')
    parser.add_argument("--special-tokens", metavar="JSON",
                        help='e.g. \'{"bos_token": "<s>", "eos_token": "</s>"}\' (default: those of a tokenizer_config.json)')
    parser.add_argument("--template-kwargs", metavar="JSON", help='e.g. \'{"enable_thinking": false}\'')
    parser.add_argument("--differences", metavar="FILE",
                        help='JSON {"key": "why"}: differences you intend (a field the chat template drops on purpose, '
                             'or a result such as "engines.minijinja-tgi" or "chat_lint.python_method"); also accepts '
                             'a preset.json with "round_trip_differences"')
    parser.add_argument("--stop-token", action="append", default=[], metavar="TEXT",
                        help="text that ends the model's turn (repeatable; default: the eos token)")
    parser.add_argument("--tokenizer", metavar="FILE", help="a tokenizer.json, or a folder with one: the token checks, and streaming token by token")
    parser.add_argument("--random-splits", type=int, default=200, metavar="N", help="random chunkings per output (default 200)")
    parser.add_argument("--seed", type=int, default=0, help="seed for the random chunkings (default 0)")
    parser.add_argument("--timeout", type=float, default=300.0, metavar="SECONDS",
                        help="stop the checks after this long, e.g. on a template that loops (default 300)")
    parser.add_argument("--strict", action="store_true", help="exit 1 on warnings too")
    parser.add_argument("--json", action="store_true", help='print {"checks": [...], "diagnostics": [...]}')
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.random_splits < 0:
        raise UsageError("--random-splits must be 0 or more")
    positive_timeout(args.timeout)
    # The other engines' renders need @huggingface/jinja: installed here, in this command's process
    # (the workers that run the checks only look for it).
    jinja_js.install()
    # The checks run in the killable worker: templates and regexes are untrusted code. The regexes get
    # at most half the time, so a backtracking one is named before the limit.
    options = {"random_splits": args.random_splits, "seed": args.seed, "tokenizer": _tokenizer(args.tokenizer),
               "timeout": args.timeout,
               "regex_seconds": min(limits.REGEX_SECONDS * CHECK_REGEX_PARSES, args.timeout / 2)}
    if args.stop_token:
        options["stop_tokens"] = args.stop_token
    intended = _differences(args.differences) if args.differences else {}
    for flag, key in (("special_tokens", "special_tokens"), ("template_kwargs", "template_kwargs")):
        if getattr(args, flag) is not None:
            options[key] = json_object(getattr(args, flag), "--" + flag.replace("_", "-"))
    shift = (0, 0)
    if args.preset:
        for flag in ("response_template", "cases", "recordings"):
            if getattr(args, flag):
                raise UsageError(f"--{flag.replace('_', '-')} goes with --chat-template; a preset has its own")
        try:
            preset = load_preset(args.preset)
        except KeyError as e:
            raise UsageError(str(e.args[0])) from e
        except ValueError as e:
            report = CheckReport(diagnostics=[Diagnostic("error", str(e), "preset")])
            return _finish(args, report)
        if intended:
            options["round_trip_differences"] = {**preset.intended_differences(), **intended}
        report = run_preset_checks(preset, **options)
    else:
        if not args.response_template:
            raise UsageError("--chat-template needs --response-template")
        chat_template = read_text(args.chat_template)
        response_text, shift, config_tokens = _response_template(read_text(args.response_template))
        if config_tokens and "special_tokens" not in options:
            options["special_tokens"] = config_tokens
        cases = _cases(args.cases) if args.cases else None
        recordings = _recordings(args.recordings) if args.recordings else None
        if recordings and not cases:
            raise UsageError("--recordings needs --cases: each recording names the case whose prompt it continues")
        report = run_checks(chat_template, response_text, cases, recordings, round_trip_differences=intended, **options)
    if shift != (0, 0):
        report = _shift_locations(report, shift)
    return _finish(args, report)


def _finish(args: argparse.Namespace, report: CheckReport) -> int:
    if args.json:
        print_json(report.to_dict())
    else:
        for result in report.checks:
            print(result)
        counts = report.counts()
        print(f"\n{counts['pass']} passed, {counts['info']} notes, {counts['warn']} warnings, {counts['fail']} failed")
    print_diagnostics(report.diagnostics)
    status = report.status
    return 1 if status == "fail" or (args.strict and status == "warn") else 0


def _differences(path: str) -> dict[str, str]:
    """The intended differences: {key: why}, or a preset.json's "round_trip_differences"."""
    data = read_json(path)
    if isinstance(data, dict) and isinstance(data.get("round_trip_differences"), dict):
        data = data["round_trip_differences"]
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise UsageError(f'{path}: expected {{"field or check": "why it is intended", ...}}')
    return data


def _tokenizer(path: str | None):
    """The tokenizer's files (they go to the worker, which builds it once), from a tokenizer.json
    or a folder holding one (with its tokenizer_config.json): what the token checks need."""
    if path is None:
        return None
    from ..tokens import load_tokenizer_path

    loaded, problems = load_tokenizer_path(path, allow_paths=True)
    if loaded is None:
        raise UsageError(f"cannot load tokenizer {path}: {problems[0].message if problems else 'unknown problem'}")
    return loaded.files


def _response_template(text: str) -> tuple[str, tuple[int, int], dict[str, str]]:
    """The response template's JSON text. From a tokenizer_config.json: the text of its
    "response_template" value, the (line, column) shift that maps locations back into the file, and
    the special tokens the file declares (what the chat template reads as bos_token, eos_token…)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return text, (0, 0), {}  # reported with line and column by the checks
    if not (isinstance(data, dict) and "fields" not in data and isinstance(data.get("response_template"), dict)):
        return text, (0, 0), {}
    start = value_start(text, key_offsets(text)[("response_template",)])
    assert start is not None  # the key exists: json.loads found it
    _, end = json.JSONDecoder().raw_decode(text, start)
    line, column = line_col(text, start)
    return text[start:end], (line - 1, column - 1), special_tokens_of(data)


def _shift_locations(report: CheckReport, shift: tuple[int, int]) -> CheckReport:
    """Move response-template locations from the extracted text back into the file it came from."""
    lines, columns = shift

    def move(line: int | None, column: int | None) -> tuple[int | None, int | None]:
        if line is None:
            return line, column
        return line + lines, (column + columns if line == 1 and column is not None else column)

    for result in report.checks:
        if result.location and result.location.source == "response_template":
            result.location = Location("response_template", *move(result.location.line, result.location.column))
    report.diagnostics = [
        replace(d, line=move(d.line, d.column)[0], column=move(d.line, d.column)[1]) if d.source == "response_template" else d
        for d in report.diagnostics
    ]
    return report


def _cases(path: str) -> list[Case]:
    data = read_json(path)
    items = data.get("cases") if isinstance(data, dict) and "cases" in data else data
    if isinstance(items, dict):
        items = [items]
    if not isinstance(items, list) or not all(isinstance(c, dict) for c in items):
        raise UsageError(f"{path}: expected {{\"cases\": [...]}}, a list of cases, or one case object")
    cases = []
    for i, item in enumerate(items):
        try:
            cases.append(Case.from_dict(item, name=item.get("name") or f"case {i + 1}"))
        except (TypeError, ValueError) as e:
            raise UsageError(f"{path}: {e}") from e
    names = [c.name for c in cases]
    if len(set(names)) != len(names):
        raise UsageError(f"{path}: case names must be unique (recordings refer to cases by name)")
    return cases


def _recordings(path: str) -> list[Recording]:
    data = read_json(path)
    items = data.get("recordings") if isinstance(data, dict) else data
    if not isinstance(items, list) or not all(isinstance(r, dict) for r in items):
        raise UsageError(f"{path}: expected {{\"recordings\": [...]}} or a list of recordings")
    out = []
    for i, item in enumerate(items):
        try:
            out.append(Recording.from_dict({"name": f"recording {i + 1}", **item}))
        except TypeError as e:
            raise UsageError(f"{path}: recording {i + 1}: {e} (keys: name, case, output, expected, description)") from e
        if not isinstance(out[-1].output, str) or not isinstance(out[-1].case, str):
            raise UsageError(f"{path}: recording {out[-1].name!r} needs \"case\" (a case name) and \"output\" (text)")
    return out

