"""`python -m engine publish --repo ID (--preset NAME | --chat-template F [--response-template F])
[--revision R] [--title T] [--description D] [--dry-run] [--zip FILE]`: open a pull request with
the templates on a model repo, showing the diff of every file first. The default description says
what changes for the model (engine.behaviour): how many conversations' prompts change, and each change.

The token comes from HF_TOKEN or `hf auth login` (never from an option: options end up in shell
history and process lists). `--dry-run` prints the diff and never calls a write endpoint."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..behaviour import Suite
from ..hub import local_token
from ..publish import plan_publish, publish
from ..presets import load_preset
from ..workspace import Workspace
from . import UsageError, print_diagnostics, read_text


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("publish", help="open a pull request with the templates on a model repo")
    parser.add_argument("--repo", required=True, metavar="ID",
                        help="the model repo (owner/name); a local folder works with --dry-run and --zip")
    parser.add_argument("--preset", metavar="NAME", help="publish a preset's chat and response templates")
    parser.add_argument("--chat-template", metavar="FILE", help="a .jinja file (default: keep the repo's)")
    parser.add_argument("--response-template", metavar="FILE", help="a response template JSON file "
                                                                    "(default: keep the repo's)")
    parser.add_argument("--revision", metavar="R", help="the branch to open the pull request against (default: main)")
    parser.add_argument("--title", metavar="T", help="the pull request title (default: says what changed)")
    parser.add_argument("--description", metavar="D", help="the pull request description (default: lists the files)")
    parser.add_argument("--dry-run", action="store_true", help="print the diff only; send nothing")
    parser.add_argument("--zip", metavar="FILE", help="write the files to a zip to upload by hand; send nothing")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    chat_template, response_template = _templates(args)
    token = local_token()
    # What changes for the model goes in the description: a preset's tokens, kwargs and cases with it.
    preset = Workspace.from_preset(load_preset(args.preset)) if args.preset else None
    suite = Suite(preset.cases, preset.recordings, preset.template_kwargs()) if preset else None
    plan = plan_publish(args.repo, chat_template, response_template, revision=args.revision, token=token,
                        special_tokens=preset.special_tokens if preset else None, suite=suite)
    print_diagnostics(plan.diagnostics)
    if any(d.severity == "error" for d in plan.diagnostics):
        return 1
    sys.stdout.write(_coloured(plan.diff()) if sys.stdout.isatty() else plan.diff())
    if plan.behaviour is not None:
        print(f"What changes for the model: {plan.behaviour.summary()}", file=sys.stderr)
    if args.zip:
        _write_zip(args.zip, plan.zip())
        print(f"Wrote {len(plan.files)} file(s) to {args.zip}", file=sys.stderr)
    if args.dry_run or args.zip or not plan.changed:
        return 0
    title = args.title or plan.title
    print(f"Opening a pull request on {plan.repo_id}: {title}", file=sys.stderr)
    result = publish(plan, token=token, title=title, description=args.description)
    if isinstance(result, str):
        print(f"Pull request: {result}")
        return 0
    print_diagnostics([result])
    return 1


def _templates(args: argparse.Namespace) -> tuple[str | None, str | None]:
    
    if args.preset and (args.chat_template or args.response_template):
        raise UsageError("use either --preset or --chat-template/--response-template, not both")
    if args.preset:
        try:
            preset = load_preset(args.preset)
        except (KeyError, ValueError) as e:
            raise UsageError(str(e).strip("\"'")) from e
        return preset.chat_template, preset.response_template
    if not (args.chat_template or args.response_template):
        raise UsageError("give --preset NAME, or --chat-template FILE and/or --response-template FILE")
    chat = read_text(args.chat_template) if args.chat_template else None
    response = read_text(args.response_template) if args.response_template else None
    return chat, response


def _write_zip(path: str, data: bytes) -> None:
    
    try:
        Path(path).write_bytes(data)
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror}") from e


def _coloured(diff: str) -> str:
    """The diff with added lines green, removed red and hunk headers cyan (for a terminal)."""
    styles = {"+++": "1", "---": "1", "@@": "36", "+": "32", "-": "31"}
    out = []
    for line in diff.splitlines(keepends=True):
        style = next((v for k, v in styles.items() if line.startswith(k)), None)
        out.append(f"\x1b[{style}m{line.rstrip(chr(10))}\x1b[0m\n" if style else line)
    return "".join(out)
