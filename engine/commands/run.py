"""`python -m engine run (--preset NAME | --chat-template F --response-template F) --case NAME|FILE
--runner recorded|simulated|local|remote [...] [--json]`: run a case and watch the output stream in,
each region in its colour as it arrives (a teaching view), then print the parsed message."""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from ..cases import Case, render_case
from ..diagnostics import Diagnostic
from ..response_spec import load_response_spec
from ..runners import LocalRunner, RecordedRunner, RemoteRunner, RunnerError, SimulatedRunner
from ..terminal import field_colours, legend, paint
from ..trace import Segment, Trace
from . import UsageError, print_diagnostics, print_json, read_json, read_text

RUNNERS = ["recorded", "simulated", "local", "remote"]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("run", help="run a case with a recorded, simulated, local or remote model")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--preset", metavar="NAME", help="a preset under presets/ (templates, cases, recordings)")
    source.add_argument("--chat-template", metavar="FILE", help="a .jinja file (with --response-template)")
    parser.add_argument("--response-template", metavar="FILE", help="the response template JSON (with --chat-template)")
    parser.add_argument("--case", required=True, metavar="NAME|FILE", help="a case of the preset, or a case JSON file")
    parser.add_argument("--runner", required=True, choices=RUNNERS)
    parser.add_argument("--recording", metavar="NAME|FILE", help="recorded: a recording of the preset, or a file of "
                        "raw output (default: the case's first recording)")
    parser.add_argument("--model", metavar="ID_OR_PATH", help="local: a Hub id or folder; remote: the served model's "
                        "name (default: the preset's first checkpoint)")
    parser.add_argument("--url", metavar="URL", help="remote: the server, e.g. http://127.0.0.1:8000")
    parser.add_argument("--api-key-env", metavar="VAR", help="remote: the environment variable holding the API key")
    parser.add_argument("--max-new-tokens", type=int, metavar="N", help="local/remote: most tokens to generate")
    parser.add_argument("--temperature", type=float, help="local/remote: 0 for greedy decoding")
    parser.add_argument("--top-p", type=float)
    parser.add_argument("--seed", type=int)
    parser.add_argument("--device", default="auto", help="local: auto, cuda, mps or cpu")
    parser.add_argument("--max-size-gb", type=float, help="local: refuse checkpoints with more weights than this")
    parser.add_argument("--template-kwargs", metavar="JSON", help='e.g. \'{"enable_thinking": false}\'')
    parser.add_argument("--speed", type=float, default=0, metavar="TPS",
                        help="recorded/simulated: tokens per second (default 0: as fast as possible)")
    parser.add_argument("--json", action="store_true",
                        help='print {"raw", "message", "events", "segments", "diagnostics", "tokens", "seconds"}')
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    setup = _setup(args)
    rendered = render_case(setup["chat_template"], setup["case"], setup["special_tokens"], setup["template_kwargs"])
    loaded = load_response_spec(setup["response_template"])
    problems = rendered.diagnostics + loaded.diagnostics
    if not rendered.ok or not loaded.ok:
        return _finish(args, "", None, [], [], problems, 0, 0.0)
    prompt, tools = rendered.prompt, setup["case"].tools
    try:
        runner = _runner(args, setup)
    except RunnerError as e:
        return _finish(args, "", None, [], [], problems + [e.diagnostic], 0, 0.0)

    trace = Trace(loaded.template, prompt=prompt, tools=tools)
    colours = field_colours(loaded.template.fields)
    view = None if args.json else _TeachingView(trace, prompt, colours)
    stop = threading.Event()
    tokens, started = 0, time.monotonic()
    chunks = runner.stream(prompt, tools=tools, stop=stop)
    try:
        for chunk in chunks:
            step = trace.feed(chunk.text)
            tokens = chunk.tokens
            if view is not None:
                view.show(step.pending)
    except RunnerError as e:
        problems.append(e.diagnostic)
    except KeyboardInterrupt:  # Ctrl-C is the terminal's Stop button
        stop.set()
        chunks.close()
        problems.append(Diagnostic("info", "Stopped.", "runner"))
    trace.finalize()
    if view is not None:
        view.show(None)
        print()
    seconds = time.monotonic() - started
    diagnostics = problems + runner.diagnostics + trace.diagnostics
    return _finish(args, trace.output, trace, trace.events, trace.segments(), diagnostics, tokens, seconds)


class _TeachingView:
    """Prints the output as it arrives, each character once, coloured by the region it belongs to.
    Only text the parser has committed is printed; held-back text waits until it is resolved."""

    def __init__(self, trace: Trace, prompt: str, colours: dict[str, int]):
        self.trace, self.colours, self.shown = trace, colours, 0
        print(legend(colours))
        if prefix := trace.prefix_segments():  # regions the prompt already opened (a prefilled <think>)
            print("\x1b[2m(from the prompt)\x1b[0m " + paint(prompt, prefix, colours))

    def show(self, pending: Segment | None) -> None:
        text = self.trace.output
        end = pending.start if pending is not None else len(text)
        if end <= self.shown:
            return
        clipped = [Segment(max(s.start, self.shown), min(s.end, end), s.kind, s.field)
                   for s in self.trace.segments() if s.end > self.shown and s.start < end and s.kind != "pending"]
        sys.stdout.write(paint(text, clipped, self.colours))
        sys.stdout.flush()
        self.shown = end


def _finish(args: argparse.Namespace, raw: str, trace: Trace | None, events: list, segments: list,
            diagnostics: list[Diagnostic], tokens: int, seconds: float) -> int:
    message = trace.message if trace is not None else None
    if args.json:
        print_json({
            "raw": raw, "message": message, "events": events, "segments": [s.to_dict() for s in segments],
            "diagnostics": [d.to_dict() for d in diagnostics], "tokens": tokens, "seconds": round(seconds, 3),
        })  # fmt: skip
    elif message is not None:
        print_json(message)
        rate = f" ({tokens / seconds:.1f} tokens/s)" if seconds > 0 and tokens else ""
        print(f"{tokens} tokens in {seconds:.2f} s{rate}", file=sys.stderr)
    print_diagnostics(diagnostics)
    return 1 if any(d.severity == "error" for d in diagnostics) else 0


def _setup(args: argparse.Namespace) -> dict[str, Any]:
    """The templates, case, tokens and kwargs to run with, from a preset or from files."""
    setup: dict[str, Any] = {"preset": None, "special_tokens": {}, "template_kwargs": {}, "stop_tokens": []}
    if args.preset:
        from ..presets import load_preset

        try:
            preset = load_preset(args.preset)
        except (KeyError, ValueError, OSError) as e:
            raise UsageError(str(e).strip('"')) from None
        setup.update(preset=preset, chat_template=preset.chat_template, response_template=preset.response_template,
                     special_tokens=preset.special_tokens, stop_tokens=preset.stop_tokens,
                     template_kwargs={k: v for k, v in preset.default_kwargs().items() if v is not None})
    else:
        if not args.response_template:
            raise UsageError("--chat-template needs --response-template (or use --preset)")
        setup.update(chat_template=read_text(args.chat_template), response_template=read_text(args.response_template))
    if args.template_kwargs:
        try:
            extra = json.loads(args.template_kwargs)
        except json.JSONDecodeError as e:
            raise UsageError(f"--template-kwargs is not valid JSON: {e.msg}") from None
        if not isinstance(extra, dict):
            raise UsageError("--template-kwargs must be a JSON object")
        setup["template_kwargs"] = {**setup["template_kwargs"], **extra}
    setup["case"] = _case(args.case, setup["preset"])
    return setup


def _case(name: str, preset: Any) -> Case:
    if preset is not None and any(c.name == name for c in preset.cases):
        return preset.case(name)
    if not Path(name).is_file():
        known = f" Cases of {preset.name}: {[c.name for c in preset.cases]}" if preset is not None else ""
        raise UsageError(f"no case {name!r} (neither a case of the preset nor a file).{known}")
    data = read_json(name)
    if not isinstance(data, dict):
        raise UsageError(f"{name}: a case file holds a JSON object with 'messages'")
    data.setdefault("add_generation_prompt", True)
    try:
        return Case.from_dict(data, name=name)
    except (TypeError, ValueError) as e:
        raise UsageError(f"{name}: {e}") from None


def _runner(args: argparse.Namespace, setup: dict[str, Any]) -> Any:
    preset, case = setup["preset"], setup["case"]
    checkpoint = args.model or (preset.checkpoints[0] if preset is not None and preset.checkpoints else None)
    generation = preset.generation if preset is not None else {}
    sampling = {
        "temperature": args.temperature if args.temperature is not None else generation.get("temperature", 0.7),
        "top_p": args.top_p if args.top_p is not None else generation.get("top_p", 1.0),
        "seed": args.seed,
    }
    max_new = args.max_new_tokens or generation.get("max_new_tokens", 512)
    if args.runner == "recorded":
        return RecordedRunner(_recording(args.recording, preset, case), tokens_per_second=args.speed)
    if args.runner == "simulated":
        return SimulatedRunner(setup["chat_template"], case, setup["response_template"], setup["special_tokens"],
                               setup["template_kwargs"], stop_tokens=setup["stop_tokens"], tokens_per_second=args.speed)
    if args.runner == "local":
        if not checkpoint:
            raise UsageError("--runner local needs --model (a Hub id or a local folder)")
        extra = {"max_size_gb": args.max_size_gb} if args.max_size_gb is not None else {}
        return LocalRunner(checkpoint, max_new_tokens=max_new, stop_tokens=setup["stop_tokens"], device=args.device,
                           **sampling, **extra)
    if not args.url:
        raise UsageError("--runner remote needs --url (the server, e.g. http://127.0.0.1:8000)")
    api_key = None
    if args.api_key_env:
        api_key = os.environ.get(args.api_key_env)
        if not api_key:
            raise UsageError(f"the environment variable {args.api_key_env} is not set")
    return RemoteRunner(args.url, checkpoint or "default", api_key=api_key, max_tokens=max_new,
                        response_template=setup["response_template"], **sampling)


def _recording(name: str | None, preset: Any, case: Case) -> str:
    """The raw output to replay: a preset recording by name, a file, or the case's first recording."""
    recordings = preset.recordings if preset is not None else []
    if name is None:
        for recording in recordings:
            if recording.case == case.name:
                return recording.output
        raise UsageError(f"--runner recorded needs --recording (a recording name or a file of raw output); "
                         f"no recording of case {case.name!r}")
    for recording in recordings:
        if recording.name == name:
            return recording.output
    if Path(name).is_file():
        return read_text(name)
    known = f" Recordings: {[r.name for r in recordings]}" if recordings else ""
    raise UsageError(f"no recording {name!r} (neither a recording of the preset nor a file).{known}")
