"""`python -m engine formats [NAME] [--search WORDS] [--json] [--check]`: the format library.

Without NAME, a table of every format (name, examples, portable, stream-safe, limits, title); with
NAME, that format's response template (ready for `tokenizer_config.json`'s `response_template`),
its description and limits on stderr. `--json` prints a list of objects with "name", "title",
"description", "models", "preset", "signature", "portable", "stream_safe", "limits",
"response_template" (the template as a JSON object) and "examples". `--check` parses every example
in one piece and streamed in many chunkings, runs the robustness check against what the format
claims its models write (`variations`), and fails (exit 1) if an example differs from its message or
a claimed variation breaks; per format it prints the examples, the robustness variations passed and
the spec limits it meets.
Exit codes: 0 success, 1 a check failed, 2 bad usage (an unknown format)."""

from __future__ import annotations

import argparse
import sys

from ..checks.examples import check_examples
from ..checks.robustness_run import check_library_format
from ..formats import Format, load_format, load_formats
from . import UsageError, print_json


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("formats", help="list the library of tool-call formats (response templates with examples)")
    parser.add_argument("name", nargs="?", help="one format: print its response template")
    parser.add_argument("--search", metavar="WORDS", help="only formats whose name, title, description, models or "
                        "signature contain every word (e.g. 'mistral', '<tool_call>')")
    parser.add_argument("--json", action="store_true", help="print the formats as JSON (a list of objects)")
    parser.add_argument("--check", action="store_true",
                        help="verify every example: it parses to its message, and streams to the same in any chunking")
    parser.add_argument("--random-splits", type=int, default=200, metavar="N",
                        help="random chunkings per example for --check (default 200)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    formats = _selected(args)
    status = 0
    if args.check:
        status = _check(formats, args.random_splits)
    if args.json:
        print_json([f.to_dict() for f in formats] if args.name is None else formats[0].to_dict())
    elif args.name is not None:
        fmt = formats[0]
        sys.stdout.write(fmt.response_template_text.rstrip("\n") + "\n")
        print(f"{fmt.title}\n{fmt.description}", file=sys.stderr)
        for limit in fmt.limits:
            print(f"  limit: {limit}", file=sys.stderr)
    elif not args.check:
        _table(formats)
    return status


def _selected(args: argparse.Namespace) -> list[Format]:
    if args.name is not None:
        try:
            return [load_format(args.name)]
        except ValueError as e:
            raise UsageError(str(e)) from e
    formats = list(load_formats())
    if args.search:
        formats = [f for f in formats if f.matches(args.search)]
    return formats


def _table(formats: list[Format]) -> None:
    width = max((len(f.name) for f in formats), default=4)
    print(f"{'name':<{width}}  examples  portable  stream-safe  limits  title")
    for f in formats:
        print(f"{f.name:<{width}}  {len(f.examples):>8}  {_yes(f.portable):>8}  {_yes(f.stream_safe):>11}  "
              f"{len(f.limits):>6}  {f.title}")  # fmt: skip


def _yes(value: bool) -> str:
    return "yes" if value else "no"


def _check(formats: list[Format], random_splits: int) -> int:
    """Verify each format's examples; one line per format, the failures in full. 1 if any failed."""
    if random_splits < 0:
        raise UsageError("--random-splits must be 0 or more")
    failed = 0
    for fmt in formats:
        results = check_examples(fmt.response_template_text, fmt.examples, random_splits=random_splits)
        robust = [r for r in check_library_format(fmt, budget=10.0) if "." in r.name]
        bad = [r for r in results if r.status == "fail"]
        unsound = [r for r in robust if r.status == "fail"]
        passed = [r.name.split(".", 1)[1] for r in robust if r.status == "pass"]
        noted = [r.name.split(".", 1)[1] for r in robust if r.status == "info"]
        print(f"{fmt.name}: {len(fmt.examples)} examples, {len(results) - len(bad)} of {len(results)} checks passed; "
              f"robustness: {len(passed)} of {len(robust)} variations passed"
              + (f" (noted, not claimed or a limit: {', '.join(noted)})" if noted else "")
              + f"; limits: {', '.join(fmt.limit_ids) or 'none'}", file=sys.stderr)  # fmt: skip
        for result in bad:
            print(f"  {result.subject}: {result.details}", file=sys.stderr)
        for result in unsound:
            print(f"  {result.name}: {result.details}", file=sys.stderr)
        failed += bool(bad or unsound)
    return 1 if failed else 0
