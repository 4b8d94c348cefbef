"""`python -m engine diff BASE NEW [--format text|json|github|markdown|html]`: what changes for the
model from BASE to NEW. Each is a model folder (read as a Hub load reads it), a chat template file,
or a Hub repo id (`--base-revision`, `--new-revision`: the branch, tag or commit). Both render the
standard conversations (engine/behaviour/conversations.json) and the folder's own cases
(`tests/templates/cases.json` or `cases.json` in NEW, else in BASE, or `--cases`); the report says
per conversation whether the prompt changed, where (the smallest character difference, whitespace
visible), which template line wrote it on each side, and the token counts when a tokenizer is at
hand; and which recorded or library-format outputs now parse to another message.

Exit codes: 0 compared (changes or not; `--exit-code`: 1 when something changed), 1 an input has
errors (no chat template, the Hub could not be read), 2 bad usage."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from .. import limits
from ..behaviour import Suite, Version, compare_bounded
from ..behaviour.report import markdown_report, text_report
from ..diagnostics import Diagnostic, has_errors
from ..hub import load_templates, local_token
from ..tokens import TokenizerFiles, read_tokenizer_path
from . import UsageError, json_object, positive_timeout, print_diagnostics, print_json, read_text
from ._annotations import behaviour_annotations, diagnostic_annotation
from ._case_files import read_cases, read_recordings
from ._model_inputs import Origin, read_model_inputs, special_tokens_arg

# Where a model folder keeps its own cases and recordings: docs/ci.md's layout, then a preset's.
OWN_FILES = ("tests/templates", ".")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("diff", help="what changes for the model between two versions of its templates")
    parser.add_argument("base", metavar="BASE", help="a model folder, a chat template file, or a Hub repo id")
    parser.add_argument("new", metavar="NEW", help="the same, for the new version")
    parser.add_argument("--base-revision", metavar="REV", help="the revision of a Hub BASE (default: main)")
    parser.add_argument("--new-revision", metavar="REV", help="the revision of a Hub NEW (default: main)")
    parser.add_argument("--base-label", metavar="TEXT", help="what the reports call BASE (default: as given)")
    parser.add_argument("--new-label", metavar="TEXT", help="what the reports call NEW (default: as given)")
    parser.add_argument("--cases", metavar="FILE", help="your own cases, rendered after the standard conversations "
                        "(default: a folder's tests/templates/cases.json or cases.json)")
    parser.add_argument("--recordings", metavar="FILE", help="outputs of those cases, parsed by both response "
                        "templates (default: the folder's recordings.json beside its cases)")
    parser.add_argument("--no-standard", action="store_true", help="render your own cases only")
    parser.add_argument("--template-kwargs", metavar="JSON", help='e.g. \'{"enable_thinking": false}\'')
    parser.add_argument("--template-name", metavar="NAME", help="which of the named chat templates (default: transformers' choice)")
    parser.add_argument("--special-tokens", metavar="JSON|FILE", help="special tokens for both, key by key over each "
                        "version's own (a chat template file alone takes the other version's)")
    parser.add_argument("--tokenizer", metavar="FILE|FOLDER", help="count tokens with this tokenizer.json "
                        "(default: NEW's folder's, else BASE's)")
    parser.add_argument("--format", choices=("text", "json", "github", "markdown", "html"), default="text",
                        help="text (default), json, GitHub Actions annotations, markdown (a pull request comment), "
                             "or a standalone html page")
    parser.add_argument("--json", action="store_true", help="the same as --format json")
    parser.add_argument("--exit-code", action="store_true", help="exit 1 when anything changes (as git diff --exit-code)")
    parser.add_argument("--timeout", type=float, default=limits.CHECK_SECONDS, metavar="SECONDS",
                        help=f"stop after this long, with an error (default {limits.CHECK_SECONDS:g}; the renders run "
                             "in a killable, memory-capped worker)")
    # --timeout bounds the whole command (engine.cli): the work, then formatting and printing it.
    parser.set_defaults(handler=run, whole=lambda a: a.timeout)


@dataclass
class Side:
    """One version as the command read it: the templates, where they are in the author's files (to
    annotate), the folder (its own cases, its tokenizer), and problems reading them."""

    version: Version
    kind: str  # "folder", "file" or "hub"
    origin: Callable[[str | None], Origin | None]
    folder: Path | None = None
    tokenizer: TokenizerFiles | None = None
    diagnostics: list[Diagnostic] | None = None


def run(args: argparse.Namespace) -> int:
    timeout = positive_timeout(args.timeout)
    if args.json:
        args.format = "json"
    base = _side(args.base, args.base_revision, args.special_tokens)
    new = _side(args.new, args.new_revision, args.special_tokens)
    problems = [*(base.diagnostics or []), *(new.diagnostics or [])]
    if has_errors(problems) or base.version.chat_template is None or new.version.chat_template is None:
        _print_problems(args, problems)
        return 1
    base.version, new.version = _borrow(base, new)
    if args.base_label:
        base.version = replace(base.version, label=args.base_label)
    if args.new_label:
        new.version = replace(new.version, label=args.new_label)
    suite = _suite(args, base, new)
    diff, problem = compare_bounded(base.version, new.version, suite, timeout=timeout, max_chars=None)
    if diff is None:
        _print_problems(args, [*problems, problem])
        return 1
    diff.diagnostics = [*problems, *diff.diagnostics]
    if args.format == "json":
        print_json(diff.to_dict())
    elif args.format == "github":
        for line in behaviour_annotations(diff, new.origin):
            print(line)
        for d in diff.diagnostics:
            print(diagnostic_annotation(d, {}))
    elif args.format == "markdown":
        sys.stdout.write(markdown_report(diff))
    elif args.format == "html":
        from ._diff_html import html_report  # pygments: on the command line only

        sys.stdout.write(html_report(diff, base.version, new.version))
    else:
        sys.stdout.write(text_report(diff))
    if args.format not in ("github",):
        print_diagnostics(diff.diagnostics)
    if has_errors(diff.diagnostics):
        return 1
    return 1 if args.exit_code and diff.any_change else 0


def _print_problems(args: argparse.Namespace, problems: list[Diagnostic]) -> None:
    if args.format == "github":
        for d in problems:
            print(diagnostic_annotation(d, {}))
    else:
        print_diagnostics(problems)


def _side(spec: str, revision: str | None, special_tokens: str | None) -> Side:
    """BASE or NEW read: a folder, a chat template file, or a Hub repo id; `special_tokens` is
    --special-tokens (over each one's own, key by key)."""
    explicit = special_tokens_arg(special_tokens) if special_tokens is not None else {}
    path = Path(spec)
    if path.is_dir():
        if revision:
            raise UsageError(f"{spec} is a folder: a revision goes with a Hub repo id")
        inputs = read_model_inputs(argparse.Namespace(model=spec, chat_template=None, response_template=None,
                                                      tokenizer=None, special_tokens=special_tokens))
        version = Version(spec, inputs.chat_template, inputs.response_template, dict(inputs.special_tokens))
        return Side(version, "folder", inputs.chat_template_origin, path, inputs.tokenizer, inputs.diagnostics)
    if path.is_file():
        if revision:
            raise UsageError(f"{spec} is a file: a revision goes with a Hub repo id")
        return Side(Version(spec, read_text(spec), None, explicit), "file", lambda name: Origin(spec))
    if spec.count("/") > 1 or spec.startswith((".", "~")) or "\\" in spec:
        raise UsageError(f"{spec}: no such folder or file (a Hub repo id is owner/name)")
    loaded = load_templates(spec, revision, token=local_token(), allow_folders=False)
    label = f"{spec}@{revision}" if revision else spec
    diagnostics = [d for d in loaded.diagnostics if d.severity == "error"]
    if loaded.ok and loaded.chat_template is None:
        diagnostics.append(Diagnostic("error", f"{label} has no chat template.", "hub"))
    tokens = {**loaded.special_tokens, **explicit}
    return Side(Version(label, loaded.chat_template, loaded.response_template, tokens), "hub", lambda name: None,
                diagnostics=diagnostics)


def _borrow(base: Side, new: Side) -> tuple[Version, Version]:
    """A chat template file is only a chat template: the special tokens and the response template
    are the other version's (its own special tokens, from --special-tokens, over them)."""
    versions = [base.version, new.version]
    for i, side in enumerate((base, new)):
        other = (new, base)[i]
        if side.kind == "file" and other.kind != "file":
            versions[i] = replace(side.version, response_template=other.version.response_template,
                                  special_tokens={**other.version.special_tokens, **side.version.special_tokens})
    return versions[0], versions[1]


def _suite(args: argparse.Namespace, base: Side, new: Side) -> Suite:
    cases_file, recordings_file = args.cases, args.recordings
    for side in (new, base):
        for place in OWN_FILES if side.folder is not None else ():
            folder = side.folder / place
            if cases_file is None and (folder / "cases.json").is_file():
                cases_file = str(folder / "cases.json")
                if recordings_file is None and (folder / "recordings.json").is_file():
                    recordings_file = str(folder / "recordings.json")
    cases = read_cases(cases_file) if cases_file else []
    recordings = read_recordings(recordings_file) if recordings_file else []
    if args.tokenizer:
        tokenizer, problems = read_tokenizer_path(args.tokenizer, allow_paths=True)
        if tokenizer is None:
            raise UsageError(f"cannot load tokenizer {args.tokenizer}: {problems[0].message if problems else 'unknown problem'}")
    else:
        tokenizer = new.tokenizer or base.tokenizer
    kwargs = json_object(args.template_kwargs, "--template-kwargs") if args.template_kwargs else {}
    if args.no_standard and not cases:
        raise UsageError("--no-standard needs cases of your own (--cases, or a folder's cases.json)")
    return Suite(cases=cases, recordings=recordings, template_kwargs=kwargs, tokenizer=tokenizer,
                 template_name=args.template_name, standard=not args.no_standard)
