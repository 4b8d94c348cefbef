"""`python -m engine trace [MODEL_FOLDER] [--response-template FILE] --output FILE [--prefix FILE]
[--tools FILE] [--chunk-size N | --random-chunks SEED | --tokenizer FILE|FOLDER] [--explain] [--json]`:
parse an output and show where every character went (the response template from a model folder's
tokenizer_config.json, or the file; with `--tokenizer`, the output is fed one token at a time;
`--explain`: and which key of the response template claimed it)."""

from __future__ import annotations

import argparse
import random
from dataclasses import replace

from .. import limits
from ..provenance.listing import output_listing
from ..provenance.output import explain_segments
from ..response_spec import load_response_spec
from ..runners.recorded import split_tokens
from ..terminal import field_colours, legend, paint
from ..tokens import cached_tokenizer
from ..trace import trace_text
from . import UsageError, add_timeout, positive_timeout, print_diagnostics, print_json, read_json, read_text
from ._model_inputs import add_model_inputs, read_model_inputs


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("trace", help="parse model output with a response template, with exact spans")
    add_model_inputs(parser, chat_template=False, special_tokens=False)
    parser.add_argument("--output", required=True, metavar="FILE", help="the raw model output")
    parser.add_argument("--prefix", metavar="FILE", help="the prompt the output continues (default: none)")
    parser.add_argument("--tools", metavar="FILE", help="JSON list of tools, to type tool-call arguments")
    split = parser.add_mutually_exclusive_group()
    split.add_argument("--chunk-size", type=int, metavar="N", help="feed the output N characters at a time")
    split.add_argument("--random-chunks", type=int, metavar="SEED", help="feed it in random-sized chunks")
    parser.add_argument("--json", action="store_true",
                        help='print {"message", "events", "prefix_events", "segments", "diagnostics"}')
    parser.add_argument("--explain", action="store_true",
                        help="list each segment with the key of the response template that claimed it (its line "
                             "and column) and, for held-back text, the delimiters it may still become")
    add_timeout(parser, limits.REGEX_SECONDS, "the response template's regexes (summed over the whole parse)")
    # (--timeout is the regexes' budget here: the whole command may take PLAYGROUND_RENDER_SECONDS more, engine.cli.)
    parser.set_defaults(handler=run, whole=lambda a: a.timeout + limits.RENDER_SECONDS)


def _placed(place, site) -> dict:
    """A field site's line and columns in the file (`Origin.place`)."""
    (line, column), (end_line, end_column) = place(site.line, site.column), place(site.end_line, site.end_column)
    return {"line": line, "column": column, "end_line": end_line, "end_column": end_column}


def split_text(text: str, chunk_size: int | None = None, seed: int | None = None) -> list[str]:
    """Cut `text` into fixed-size or seeded random-size (1-16 characters) chunks."""
    if seed is not None:
        rng = random.Random(seed)
        chunks, i = [], 0
        while i < len(text):
            n = rng.randint(1, 16)
            chunks.append(text[i : i + n])
            i += n
        return chunks
    size = chunk_size or len(text) or 1
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def run(args: argparse.Namespace) -> int:
    timeout = positive_timeout(args.timeout)
    if args.chunk_size is not None and args.chunk_size < 1:
        raise UsageError("--chunk-size must be at least 1")
    if args.model is None and not args.response_template:
        raise UsageError("give a model folder or --response-template FILE")
    inputs = read_model_inputs(args, folder_tokenizer=False)  # only --tokenizer cuts the output in tokens
    if inputs.response_template is None and inputs.diagnostics:  # the folder's tokenizer_config.json is broken
        print_diagnostics(inputs.diagnostics)
        return 1
    if inputs.response_template is None:
        raise UsageError(f"{args.model} has no response template (tokenizer_config.json has no \"response_template\"); "
                         "draft one with: python -m engine draft " + args.model)
    label = inputs.origins["response_template"].path
    loaded = load_response_spec(inputs.response_template)
    if not loaded.ok:
        if args.json:
            print_json({"message": None, "events": [], "prefix_events": [], "segments": [],
                        "diagnostics": [d.to_dict() for d in loaded.diagnostics]})
        print_diagnostics(loaded.diagnostics, f"{label}: ")
        return 1
    output = read_text(args.output)
    prefix = read_text(args.prefix) if args.prefix else ""
    tools = read_json(args.tools, "tools") if args.tools else None
    if tools is not None and not (isinstance(tools, list) and all(isinstance(t, dict) for t in tools)):
        raise UsageError(f"{args.tools}: tools must be a JSON list of tool objects, e.g. "
                         '[{"type": "function", "function": {"name": ..., "parameters": {...}}}]')
    if args.tokenizer and args.chunk_size is None and args.random_chunks is None:
        try:
            chunks = split_tokens(output, cached_tokenizer(inputs.tokenizer))
        except ValueError as e:
            raise UsageError(f"cannot load tokenizer {args.tokenizer}: {e}") from None
    else:
        chunks = split_text(output, args.chunk_size, args.random_chunks)
    # Lines of the response template are named when it is a file of its own (not inside a config).
    whole_file = inputs.origins["response_template"].start is None
    result = trace_text(loaded.template, output, prefix, tools, chunks, regex_seconds=timeout,
                        response_text=inputs.response_template if whole_file else None)
    diagnostics = loaded.diagnostics + result.diagnostics
    origins = None
    if args.explain:  # where each key is written in the file (a tokenizer_config.json holds the template inside)
        place = inputs.origins["response_template"].place
        origins = [o if o.site is None else replace(o, site=replace(o.site, **_placed(place, o.site)))
                   for o in explain_segments(result.segments, inputs.response_template, loaded.template, output)]
    if args.json:
        data = result.to_dict()
        data["diagnostics"] = [d.to_dict() for d in diagnostics]
        if origins is not None:
            data["segments"] = [o.to_dict() for o in origins]
        print_json(data)
    elif origins is not None:
        print(output_listing(output, origins))
        print()
        print_json(result.message)
    else:
        colours = field_colours(loaded.template.fields)
        print(legend(colours))
        print(paint(output, result.segments, colours))
        print()
        print_json(result.message)
    print_diagnostics(diagnostics)
    return 1 if any(d.severity == "error" for d in diagnostics) else 0
