"""`python -m engine render [MODEL_FOLDER] [--chat-template FILE] --case FILE [--special-tokens JSON|FILE]
[--tokenizer FILE|FOLDER] [--explain] [--json]`: print the rendered prompt, with the special tokens the
model's tokenizer brings (engine.tokens.special); `--explain`: which template line and message wrote
each piece of it."""

from __future__ import annotations

import argparse
import sys

from .. import limits
from ..cases import Case, render_case
from ..diagnostics import has_errors
from ..provenance.listing import prompt_listing
from ..render import select_template
from . import UsageError, add_timeout, positive_timeout, print_diagnostics, print_json, read_json
from ._model_inputs import add_model_inputs, read_model_inputs


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("render", help="render a case with a chat template")
    add_model_inputs(parser, response_template=False)
    parser.add_argument("--case", required=True, metavar="FILE",
                        help='JSON: {"messages": [...], "tools", "documents", "add_generation_prompt", '
                             '"template_kwargs", "special_tokens"} (all but messages optional)')
    parser.add_argument("--json", action="store_true", help="print {prompt, generation_spans, diagnostics}")
    parser.add_argument("--explain", action="store_true",
                        help="say where each piece of the prompt came from: its template line, the message the "
                             'template was handling, its kind (with --json: "pieces", each {start, end, line, '
                             'column, message, kind, …})')
    add_timeout(parser, limits.RENDER_SECONDS, "rendering (run in a killable, memory-capped worker)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    timeout = positive_timeout(args.timeout)
    if args.model is None and not args.chat_template:
        raise UsageError("give a model folder or --chat-template FILE")
    inputs = read_model_inputs(args)
    data = read_json(args.case)
    if not isinstance(data, dict):
        raise UsageError(f"{args.case}: a case file holds a JSON object with 'messages'")
    data.setdefault("add_generation_prompt", True)
    try:
        case = Case.from_dict(data, name=args.case)
    except (TypeError, ValueError) as e:
        raise UsageError(f"{args.case}: {e}") from e
    if inputs.chat_template is None:  # a model folder without one
        print_diagnostics(inputs.diagnostics)
        return 1
    try:  # transformers' choice among named templates: tool_use with tools, else default (or --template-name)
        template, _ = select_template(inputs.chat_template, case.tools, args.template_name)
    except ValueError as e:
        raise UsageError(str(e)) from None
    result = render_case(template, case, inputs.special_tokens, timeout=timeout, explain=args.explain)
    result.diagnostics = [*inputs.diagnostics, *result.diagnostics]  # a model folder's own problems too
    if args.json:
        print_json(result.to_dict())
    elif result.ok and args.explain and result.explanation is not None and result.explanation.pieces is not None:
        print(prompt_listing(result.prompt, result.explanation.pieces))
    elif result.ok:
        sys.stdout.write(result.prompt)
    if args.explain and result.explanation is not None and result.explanation.note:
        print(f"note: {result.explanation.note}", file=sys.stderr)
    print_diagnostics(result.diagnostics)
    return 0 if result.ok and not has_errors(result.diagnostics) else 1
