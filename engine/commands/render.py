"""`python -m engine render --chat-template FILE --case FILE [--json]`: print the rendered prompt."""

from __future__ import annotations

import argparse
import sys

from .. import limits
from ..cases import Case, render_case
from . import UsageError, add_timeout, positive_timeout, print_diagnostics, print_json, read_json, read_text


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("render", help="render a case with a chat template")
    parser.add_argument("--chat-template", required=True, metavar="FILE", help="a .jinja file")
    parser.add_argument("--case", required=True, metavar="FILE",
                        help='JSON: {"messages": [...], "tools", "documents", "add_generation_prompt", '
                             '"template_kwargs", "special_tokens"} (all but messages optional)')
    parser.add_argument("--json", action="store_true", help="print {prompt, generation_spans, diagnostics}")
    add_timeout(parser, limits.RENDER_SECONDS, "rendering (run in a killable, memory-capped worker)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    timeout = positive_timeout(args.timeout)
    template = read_text(args.chat_template)
    data = read_json(args.case)
    if not isinstance(data, dict):
        raise UsageError(f"{args.case}: a case file holds a JSON object with 'messages'")
    data.setdefault("add_generation_prompt", True)
    try:
        case = Case.from_dict(data, name=args.case)
    except (TypeError, ValueError) as e:
        raise UsageError(f"{args.case}: {e}") from e
    result = render_case(template, case, timeout=timeout)
    if args.json:
        print_json(result.to_dict())
    elif result.ok:
        sys.stdout.write(result.prompt)
    print_diagnostics(result.diagnostics)
    return 0 if result.ok else 1
