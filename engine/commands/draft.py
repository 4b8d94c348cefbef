"""`python -m engine draft [MODEL_FOLDER] [--chat-template FILE | --preset NAME] [--special-tokens
JSON|FILE] [--tokenizer FILE|FOLDER] [--json]`: draft the response template a chat template implies,
with a report of what it could and could not infer.

Prints the response template (the report goes to stderr), or with `--json`
{"response_template", "report": {"fields", "checks", "probes", "seconds", "format", "disagreement", "limits"},
"diagnostics"}: `format` is the library format the calls come from (name, title, how it was matched and
verified, its limits), `disagreement` the history's and the instructions' texts when they differ.
Exit codes: 0 a draft was made, 1 none could be (the chat template does not render, or shows no
field), 2 bad usage."""

from __future__ import annotations

import argparse
import sys

from ..draft import draft_response_template
from ..presets import load_preset
from ..workspace import Workspace
from . import UsageError, json_object, print_diagnostics, print_json
from ._model_inputs import add_model_inputs, read_model_inputs

# Drafting renders the untrusted template dozens of times: in the killable worker, bounded.
DEFAULT_TIMEOUT = 60.0


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("draft", help="draft the response template from the chat template")
    add_model_inputs(parser, response_template=False)
    parser.add_argument("--preset", metavar="NAME", help="a preset's chat template (with its tokens and notes)")
    parser.add_argument("--template-kwargs", metavar="JSON", help='passed to every probe, e.g. \'{"reasoning_effort": "low"}\'')
    parser.add_argument("--stop-token", action="append", default=[], metavar="TEXT",
                        help="text that ends the model's turn (repeatable; default: the eos token)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                        help=f"stop a template that renders too long (default {DEFAULT_TIMEOUT:g}; 0: no worker process)")
    parser.add_argument("--json", action="store_true", help='print {"response_template", "report", "diagnostics"}')
    # --timeout bounds the whole command (engine.cli): the work, then formatting and printing it.
    parser.set_defaults(handler=run, whole=lambda a: a.timeout or None)


def run(args: argparse.Namespace) -> int:
    if not args.timeout >= 0:  # NaN too
        raise UsageError("--timeout must be 0 or more")
    options: dict = {"timeout": args.timeout or None}
    if args.preset and (args.model or args.chat_template):
        raise UsageError("a preset has its own chat template: give --preset, or a model folder / --chat-template")
    if not (args.preset or args.model or args.chat_template):
        raise UsageError("give a model folder, --chat-template FILE, or --preset NAME")
    inputs = read_model_inputs(args)
    if args.preset:
        try:
            preset = load_preset(args.preset)
        except KeyError as e:
            raise UsageError(str(e.args[0])) from e
        workspace = Workspace.from_preset(preset)
        chat_template: str | None = workspace.chat_template
        options.update(stop_tokens=workspace.stop_tokens, template_kwargs=workspace.template_kwargs(),
                       documented=workspace.round_trip_differences)  # fmt: skip
        options["special_tokens"] = inputs.special_tokens_with(workspace.special_tokens)
    else:
        chat_template = inputs.one_chat_template(args.template_name)
        options["special_tokens"] = inputs.special_tokens
    if chat_template is None:  # a model folder without one
        print_diagnostics(inputs.diagnostics)
        return 1
    if args.template_kwargs is not None:
        options["template_kwargs"] = json_object(args.template_kwargs, "--template-kwargs")
    if args.stop_token:
        options["stop_tokens"] = args.stop_token
    draft = draft_response_template(chat_template, **options)
    if args.json:
        print_json(draft.to_dict())
    else:
        sys.stdout.write(draft.text)
        for report in draft.fields:
            print(f"{report.field}: {report.status.replace('_', ' ')}. {report.message}", file=sys.stderr)
            for note in report.notes:
                print(f"    - {note}", file=sys.stderr)
        if draft.format is not None:
            print(f"format: {draft.format.name} ({draft.format.title}); {'; '.join(draft.format.how)}", file=sys.stderr)
        if draft.disagreement is not None:
            print(f"history vs instructions: {draft.disagreement.describe()}", file=sys.stderr)
        for limit in dict.fromkeys([*(draft.format.limits if draft.format else []), *draft.limits]):
            print(f"the spec cannot say: {limit}", file=sys.stderr)
        counts = {s: sum(1 for c in draft.checks if c.status == s) for s in ("pass", "warn", "fail")}
        print(f"checks on the probes: {counts['pass']} passed, {counts['warn']} warnings, {counts['fail']} failed; "
              f"{draft.probes} probes in {draft.seconds:.2f} s", file=sys.stderr)  # fmt: skip
        for check in draft.checks:
            if check.status == "fail":
                print(f"    {check}", file=sys.stderr)
    print_diagnostics([*inputs.diagnostics, *draft.diagnostics])  # a model folder's own problems too
    return 0 if draft.response_template is not None else 1
