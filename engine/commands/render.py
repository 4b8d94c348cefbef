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
    # --timeout bounds the whole command (engine.cli): the work, then formatting and printing it.
    parser.set_defaults(handler=run, whole=lambda a: a.timeout)


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
    # What it prints is bounded (limits.MAX_COMMAND_OUTPUT_CHARS): the prompt, then its pieces within
    # what is left, or a message saying they were too many to print.
    room = limits.MAX_COMMAND_OUTPUT_CHARS - 2 * len(result.prompt or "") - 100_000
    note = result.explanation.note if args.explain and result.explanation is not None else None
    cut = False
    if args.json:
        data = result.to_dict(max_chars=room)
        cut = args.explain and data.get("pieces") is None and result.explanation is not None and result.explanation.ok
        note = data.get("explanation_note", note)
        print_json(data)
    elif result.ok and args.explain and result.explanation is not None and result.explanation.ok:
        listing = prompt_listing(result.prompt, result.explanation.pieces, max_chars=room)
        cut = listing.endswith("(PLAYGROUND_MAX_COMMAND_OUTPUT_MB)")
        print(listing)
    elif result.ok:
        sys.stdout.write(result.prompt)
    if note:
        print(f"note: {note}", file=sys.stderr)
    print_diagnostics(result.diagnostics)
    if cut:  # not everything asked for was printed
        print("error: the explanation was not printed whole: it is over the output a command prints", file=sys.stderr)
    return 0 if result.ok and not has_errors(result.diagnostics) and not cut else 1
