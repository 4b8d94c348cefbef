"""Subcommands of `python -m engine`; shared helpers for reading files and printing results."""

from __future__ import annotations

import argparse
import io
import json
import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stdout
from pathlib import Path
from typing import Any

from .. import limits
from ..diagnostics import Diagnostic
from ..inputs import load_json


class UsageError(Exception):
    """A problem with how the command was called (a missing file, a bad option): exit code 2."""


class CommandTimeout(BaseException):
    """The whole command (reading, the work, formatting and printing) went past its time bound:
    raised in the main thread by `bounded_command`. A BaseException: no `except Exception` on the way
    (a check, a decoder) may swallow it."""


class OutputOverflow(Exception):
    """The command printed more than `limits.MAX_COMMAND_OUTPUT_CHARS` (the message says so)."""


class BoundedOutput(io.TextIOBase):
    """Standard output that takes at most `limit` characters: the write that would go past it raises
    `OutputOverflow` (nothing of it is written), so a command stops formatting what it cannot print."""

    def __init__(self, stream: Any, limit: int):
        self.stream, self.limit, self.written = stream, limit, 0

    def write(self, text: str) -> int:
        if self.written + len(text) > self.limit:
            raise OutputOverflow(f"the output is over the {self.limit / 1e6:g} MB a command prints "
                                 "(PLAYGROUND_MAX_COMMAND_OUTPUT_MB); it was cut there")
        self.written += len(text)
        return self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()

    def writable(self) -> bool:
        return True


# A command's work stops at its --timeout with its own message (the worker is stopped); starting its
# worker process (Python and transformers: seconds on a loaded machine), then formatting and printing
# what it found may take this much more, then the whole command stops (`bounded_command`).
SLACK_SECONDS = 5
# Past that, a command still caught in code that does not return to Python (a C call) is ended this
# many seconds later, with the same message.
HARD_STOP_SECONDS = 5


@contextmanager
def bounded_command(seconds: float | None, what: str) -> Iterator[None]:
    """Everything inside, the command's whole work, within `seconds` (None: no bound) and printing at
    most `limits.MAX_COMMAND_OUTPUT_CHARS`. Past the time, `CommandTimeout` is raised in the main
    thread (a signal sent to it: a wait for a worker is interrupted too), and if that cannot land,
    the process ends `HARD_STOP_SECONDS` later. A timer thread, not the process's interval timer:
    an explanation in this process uses that one for its own bound."""
    out = BoundedOutput(sys.stdout, limits.MAX_COMMAND_OUTPUT_CHARS)
    if seconds is None or threading.current_thread() is not threading.main_thread():
        with redirect_stdout(out):
            yield
        return
    main = threading.main_thread().ident
    seconds += SLACK_SECONDS
    message = (f"{what} stopped: it took longer than {seconds:g} s, the time its --timeout gives the whole command "
               f"(the work, and {SLACK_SECONDS} s more to start a worker and print what it found)")

    def ring(*_: Any) -> None:
        raise CommandTimeout(message)

    def hard_stop() -> None:
        sys.stderr.write(f"error: {message}\n")
        sys.stderr.flush()
        os._exit(1)

    previous = signal.signal(signal.SIGUSR1, ring)
    timer = threading.Timer(seconds, lambda: signal.pthread_kill(main, signal.SIGUSR1))
    last = threading.Timer(seconds + HARD_STOP_SECONDS, hard_stop)
    for t in (timer, last):
        t.daemon = True
        t.start()
    try:
        with redirect_stdout(out):
            yield
    finally:
        timer.cancel()
        last.cancel()
        signal.signal(signal.SIGUSR1, previous)


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
    """`data` as indented JSON, written as it is encoded (a reader that stops early stops it). Within
    the output's bound (`BoundedOutput`): past it, it stops there, and the command says so."""
    json.dump(data, sys.stdout, ensure_ascii=False, indent=2)
    sys.stdout.write("\n")


def print_diagnostics(diagnostics: list[Diagnostic], label: str = "") -> None:
    for d in diagnostics:
        print(f"{label}{d}", file=sys.stderr)
        if d.snippet:
            print(f"    {d.snippet}", file=sys.stderr)
            if d.caret:
                print("    " + d.caret, file=sys.stderr)
