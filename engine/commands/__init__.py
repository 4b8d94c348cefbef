"""Subcommands of `python -m engine`; shared helpers for reading files and printing results."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .. import limits
from ..diagnostics import Diagnostic
from ..inputs import load_json


class UsageError(Exception):
    """A problem with how the command was called (a missing file, a bad option): exit code 2."""


def read_text(path: str) -> str:
    """A UTF-8 text file (a UTF-8 byte order mark is dropped); anything else is a usage error."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}") from e
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise UsageError(f"{path} is not UTF-8 text: byte 0x{data[e.start]:02x} at line {line} "
                         f"(offset {e.start}) cannot be decoded; save the file as UTF-8") from None


def read_json(path: str, what: str = "JSON") -> Any:
    """A JSON file, within the playground's limits (size, nesting, valid Unicode)."""
    value, problems = load_json(read_text(path), "case", what, max_chars=limits.MAX_CASE_CHARS * 10)
    if problems:
        problem = problems[0]
        where = f" at line {problem.line}, column {problem.column}" if problem.line else ""
        raise UsageError(f"{path}{where}: {problem.message}")
    return value


def add_timeout(parser: argparse.ArgumentParser, default: float, what: str) -> None:
    """`--timeout SECONDS`: the same bound the app uses by default."""
    parser.add_argument("--timeout", type=float, default=default, metavar="SECONDS",
                        help=f"stop {what} after this long, with an error (default {default:g})")


def positive_timeout(value: float) -> float:
    if not value > 0:
        raise UsageError("--timeout must be more than 0 seconds")
    return value


def json_object(text: str, flag: str) -> dict:
    """A JSON object given inline to an option (`--special-tokens '{"eos_token": "</s>"}'`)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        raise UsageError(f"{flag}: invalid JSON: {e.msg}") from e
    if not isinstance(value, dict):
        raise UsageError(f"{flag} must be a JSON object")
    return value


def print_json(data: Any) -> None:
    json.dump(data, sys.stdout, ensure_ascii=False, indent=2)
    sys.stdout.write("\n")


def print_diagnostics(diagnostics: list[Diagnostic], label: str = "") -> None:
    for d in diagnostics:
        print(f"{label}{d}", file=sys.stderr)
        if d.snippet:
            print(f"    {d.snippet}", file=sys.stderr)
            if d.caret:
                print("    " + d.caret, file=sys.stderr)
