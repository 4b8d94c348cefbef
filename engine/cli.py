"""`python -m engine …`: the command line, also how other tools and our own checks drive the engine.

Each subcommand lives in `engine/commands/<name>.py` with `register(subparsers)` (modules named
`_<name>.py` there are the commands' shared helpers); exit codes:
0 success, 1 the input has errors (diagnostics printed), 2 bad usage."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from . import commands
from .commands import CommandTimeout, OutputOverflow, UsageError, bounded_command

# The order `--help` lists subcommands in; any other module in engine/commands/ comes after.
ORDER = ["render", "trace", "run", "check", "diff", "draft", "formats", "publish"]


def command_names() -> list[str]:
    found = [m.name for m in pkgutil.iter_modules(commands.__path__) if not m.name.startswith("_")]
    return sorted(found, key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m engine", description="The template playground's engine.")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name in command_names():
        importlib.import_module(f".commands.{name}", __package__).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    # A command's --timeout covers everything it does (reading, its work, formatting and printing),
    # and what it prints is bounded: each command says its time bound (`whole`, None: none).
    whole = getattr(args, "whole", None)
    seconds = whole(args) if whole else None
    try:
        with bounded_command(seconds if seconds is not None and seconds > 0 else None, args.command):
            return args.handler(args)
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except CommandTimeout as e:
        sys.stdout.flush()
        print(f"\nerror: {e}", file=sys.stderr)
        return 1
    except OutputOverflow as e:
        sys.stdout.flush()
        print(f"\nerror: {e}", file=sys.stderr)
        return 1
