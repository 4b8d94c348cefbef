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
from .commands import UsageError

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
    try:
        return args.handler(args)
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
