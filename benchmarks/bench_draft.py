"""What drafting a response template from the chat template gets right, and what it costs.

Presets: each field's result, whether every recording parses like the preset's own response
template (or which fields differ), and the draft's time without and with its checks, the first also
as a ratio to one render of the same template (a draft renders it about 50 times and parses every
probe back; the checks then stream every probe output in many chunkings). A corpus of real chat templates (not in this repository: a folder with
`index.json` and `<slug>/chat_template.jinja` + `meta.json`): each field's result per model.
Run: `python -m benchmarks.bench_draft [--corpus DIR] [--repeat N]`."""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from transformers.utils.chat_parsing import parse_response

from engine.checks.round_trip import compare_messages
from engine.draft import Draft, FieldReport, draft_response_template
from engine.presets import load_preset, preset_names
from engine.render import render
from engine.workspace import Workspace

FIELDS = ("reasoning_content", "tool_calls", "content")


def cell(report: FieldReport) -> str:
    """A field's result in a few words (pipes escaped for a markdown table)."""
    return _cell(report).replace("|", "\\|")


def _cell(report: FieldReport) -> str:
    if report.status == "verified":
        return f"round-trips ({report.shown} probes)"
    if report.status == "unverified":
        why = report.message.split(" probes: ", 1)[-1].split(";")[0].rstrip(".")
        return f"fails: {why}"
    if " is left out: " in report.message:
        return "left out: " + report.message.split(" is left out: ", 1)[-1].split(";")[0]
    return "not rendered" if report.shown == 0 else "left out"


def timed_draft(chat_template: str | dict, repeat: int, **options) -> tuple[Draft, float]:
    times, draft = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        draft = draft_response_template(chat_template, **options)
        times.append(time.perf_counter() - start)
    assert draft is not None
    return draft, statistics.median(times)


def one_render(chat_template: str | dict, special_tokens: dict, kwargs: dict) -> float:
    messages = [{"role": "user", "content": "What is the weather in Paris?"}]
    render(chat_template, messages, add_generation_prompt=True, special_tokens=special_tokens, template_kwargs=kwargs)  # warm
    times = []
    for _ in range(20):
        start = time.perf_counter()
        render(chat_template, messages, add_generation_prompt=True, special_tokens=special_tokens, template_kwargs=kwargs)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def recordings(workspace: Workspace, draft: Draft) -> str:
    """How many recordings parse like the preset's template; the fields that differ otherwise."""
    same, differing = 0, set()
    for recording in workspace.recordings:
        case = workspace.find_case(recording.case)
        prompt = workspace.render(case).prompt
        ours = parse_response(recording.output, draft.response_template, prefix=prompt, tools=case.tools)
        theirs = parse_response(recording.output, json.loads(workspace.response_template), prefix=prompt, tools=case.tools)
        fields = {f for f, _, _ in compare_messages(theirs, ours)}
        same += not fields
        differing |= fields
    text = f"{same}/{len(workspace.recordings)} same"
    return text + (f"; differ: {', '.join(sorted(differing))}" if differing else "")


def presets(repeat: int) -> None:
    print("| preset | reasoning_content | tool_calls | content | recordings | draft | + checks | one render | draft / render |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in preset_names():
        workspace = Workspace.from_preset(load_preset(name))
        options = dict(special_tokens=workspace.special_tokens, template_kwargs=workspace.template_kwargs(),
                       stop_tokens=workspace.stop_tokens, documented=workspace.round_trip_differences)  # fmt: skip
        _, bare = timed_draft(workspace.chat_template, repeat, checks=False, **options)
        draft, seconds = timed_draft(workspace.chat_template, repeat, **options)
        single = one_render(workspace.chat_template, workspace.special_tokens, workspace.template_kwargs())
        cells = " | ".join(cell(draft.report(f)) for f in FIELDS)  # type: ignore[arg-type]
        print(f"| {name} | {cells} | {recordings(workspace, draft)} | {bare:.2f} s | {seconds:.2f} s | "
              f"{single * 1000:.2f} ms | {bare / single:.0f}x |")  # fmt: skip


def corpus(folder: Path, repeat: int) -> None:
    index = json.loads((folder / "index.json").read_text())
    print("| model | reasoning_content | tool_calls | content | checks | draft |")
    print("|---|---|---|---|---|---|")
    totals = {"rendered": 0, "round-trips": 0}
    for entry in index["models"]:
        slug = entry["slug"]
        meta = json.loads((folder / slug / "meta.json").read_text())
        named = {p.name[len("chat_template.") : -len(".jinja")]: p.read_text() for p in (folder / slug).glob("chat_template.*.jinja")}
        main = folder / slug / "chat_template.jinja"
        if not main.is_file() and not named:
            continue
        chat_template: str | dict = main.read_text() if main.is_file() else {}
        if named:
            chat_template = {**({"default": chat_template} if chat_template else {}), **named}
        draft, seconds = timed_draft(chat_template, repeat, special_tokens=meta.get("special_tokens"),
                                     template_kwargs=meta.get("template_kwargs") or {}, stop_tokens=meta.get("stop_tokens"),
                                     documented=meta.get("round_trip_differences"))  # fmt: skip
        reports = [draft.report(f) for f in FIELDS]
        for report in reports:
            if report is not None and report.shown:
                totals["rendered"] += 1
                totals["round-trips"] += report.status == "verified"
        failed = sum(1 for c in draft.checks if c.status == "fail")
        checks = f"{len(draft.checks) - failed}/{len(draft.checks)} pass"
        print(f"| {entry['model']} | {' | '.join(cell(r) for r in reports)} | {checks} | {seconds:.2f} s |")  # type: ignore[arg-type]
    print(f"\nFields a template renders: {totals['rendered']}; round-trip with the draft: {totals['round-trips']}.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", type=Path, help="a folder of real chat templates (index.json, <slug>/...)")
    parser.add_argument("--repeat", type=int, default=5, help="drafts per template; the median time is shown")
    args = parser.parse_args()
    if args.corpus:
        corpus(args.corpus, args.repeat)
    else:
        presets(args.repeat)


if __name__ == "__main__":
    main()
