"""Subcommands of `python -m engine`; shared helpers for reading files and printing results."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ..diagnostics import Diagnostic


class UsageError(Exception):
    """A problem with how the command was called (a missing file, a bad option): exit code 2."""


def read_text(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}") from e


def read_json(path: str) -> Any:
    text = read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise UsageError(f"{path}: invalid JSON at line {e.lineno}, column {e.colno}: {e.msg}") from e


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
            if d.column:
                print("    " + " " * (d.column - 1) + "^", file=sys.stderr)
