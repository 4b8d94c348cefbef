"""What drafting a response template from the chat template gets right, and what it costs.

`draft_s` (in `python -m benchmarks`): seconds to draft each preset's chat template and each format
family's (the small templates written for the tests, tests/fixtures/draft/families.json) as the
page's Draft button does: in the killable worker, with the checks on the probes; best of N.

Presets (`python -m benchmarks.bench_draft`): each field's result, the library format matched,
whether every recording parses like the preset's own response template (or which fields differ),
and the draft's time without and with its checks, the first also as a ratio to one render of the
same template.

Corpus (`--corpus DIR [--meta FILE]`): real chat templates, `DIR/*.jinja` (never committed here).
`--meta` is a JSON file {"tools": {name: schema}, "templates": [{"file", "model", "format",
"special_tokens", "stop_tokens", "template_kwargs", "outputs": [{"output", "message", "tools"}]}]}:
the model's tokens, the format its model writes (null: no tools) and real outputs with the message
each must parse to. Per template: the format the draft matched, each field's result, whether the
real outputs' calls parse with the draft, and why not where they do not.
Run: `python -m benchmarks.bench_draft [--corpus DIR --meta FILE] [--repeat N] [--draft-s]`."""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from transformers.utils.chat_parsing import parse_response

from engine.checks import robustness, run_checks
from engine.checks.round_trip import compare_messages, normalise_message
from engine.formats import load_format
from engine.draft import Draft, FieldReport, draft_response_template
from engine.presets import load_preset, preset_names
from engine.render import render
from engine.workspace import Workspace

FIELDS = ("reasoning_content", "tool_calls", "content")
FAMILIES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "draft"
# As the page drafts (app/draft_panel.py): in the worker, bounded.
TIMEOUT = 60.0
# The robustness check's budget when the corpus measures each draft's robustness (every variation
# tried whatever the machine's load; the checks' own budget is engine.checks.robustness.BUDGET_SECONDS).
CORPUS_ROBUSTNESS_S = 20.0


def cell(report: FieldReport) -> str:
    """A field's result in a few words (pipes escaped for a markdown table)."""
    return _cell(report).replace("|", "\\|")


def _cell(report: FieldReport) -> str:
    if report.status == "verified":
        return f"✓ {report.shown}" if report.shown else "✓"
    if report.status == "unverified":
        why = report.message.split(" probes: ", 1)[-1].split(";")[0].rstrip(".") if " probes: " in report.message else \
            report.message.rsplit(". ", 1)[-1].rstrip(".")  # fmt: skip
        return f"✗ {why}"
    if " is left out: " in report.message:
        return "left out: " + report.message.split(" is left out: ", 1)[-1].split(";")[0]
    return "—" if report.shown == 0 else "left out"


def timed_draft(chat_template: str | dict, repeat: int, **options) -> tuple[Draft, float]:
    times, draft = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        draft = draft_response_template(chat_template, **options)
        times.append(time.perf_counter() - start)
    assert draft is not None
    return draft, statistics.median(times)


def families() -> dict[str, tuple[str, dict]]:
    """Each format family's template and special tokens, by name."""
    entries = json.loads((FAMILIES / "families.json").read_text())
    return {name: ((FAMILIES / f"{name}.jinja").read_text(), entry["special_tokens"]) for name, entry in entries.items()}


# The families a quick run drafts (a smoke test of the figure): one told only, one read off the
# history with a library format, one whose history disagrees with its instructions.
QUICK_FAMILIES = ("granite_told", "qwen3_coder_xml", "history_disagrees")


def draft_s(repeats: int = 3, only: tuple[str, ...] | None = None) -> dict:
    """Best seconds to draft each preset and each format family (or those `only` names) as the page
    does (worker, checks)."""
    Workspace.from_preset(load_preset("blank")).draft_response_template(timeout=TIMEOUT)  # the worker is up
    presets: dict[str, float] = {}
    for name in preset_names():
        workspace = Workspace.from_preset(load_preset(name))
        presets[name] = min(_seconds(lambda: workspace.draft_response_template(timeout=TIMEOUT)) for _ in range(repeats))
        print(f"draft of preset {name:<20} {presets[name]:5.2f} s")
    family: dict[str, float] = {}
    for name, (template, tokens) in families().items():
        if only is not None and name not in only:
            continue
        family[name] = min(_seconds(lambda: draft_response_template(template, tokens, timeout=TIMEOUT)) for _ in range(repeats))
        print(f"draft of family {name:<20} {family[name]:5.2f} s")
    worst = max([*presets.values(), *family.values()])
    print(f"worst {worst:.2f} s ({'within' if worst <= 2 else 'OVER'} 2 s)")
    return {"max": worst, "presets": presets, "families": family}


def figures(quick: bool = False) -> dict:
    """The figure `python -m benchmarks` reports (with --quick one draft of each preset and of a few
    families, else the best of 3 of every one)."""
    return {"draft_s": draft_s(1, QUICK_FAMILIES) if quick else draft_s(3)}


def _seconds(run) -> float:  # noqa: ANN001
    start = time.perf_counter()
    draft = run()
    assert draft.response_template is not None or draft.diagnostics
    return time.perf_counter() - start


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
    print("| preset | format | reasoning_content | tool_calls | content | recordings | draft | + checks | draft / render |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in preset_names():
        workspace = Workspace.from_preset(load_preset(name))
        options = dict(special_tokens=workspace.special_tokens, template_kwargs=workspace.template_kwargs(),
                       stop_tokens=workspace.stop_tokens, documented=workspace.round_trip_differences)  # fmt: skip
        _, bare = timed_draft(workspace.chat_template, repeat, checks=False, **options)
        draft, seconds = timed_draft(workspace.chat_template, repeat, **options)
        single = one_render(workspace.chat_template, workspace.special_tokens, workspace.template_kwargs())
        cells = " | ".join(cell(draft.report(f)) for f in FIELDS)  # type: ignore[arg-type]
        matched = draft.format.name if draft.format else "—"
        print(f"| {name} | {matched} | {cells} | {recordings(workspace, draft)} | {bare:.2f} s | {seconds:.2f} s | {bare / single:.0f}x |")


def corpus(folder: Path, meta: Path | None, repeat: int) -> dict:
    """Draft every template of the corpus; print a table and return the totals."""
    data = json.loads(meta.read_text()) if meta else {"tools": {}, "templates": []}
    known = {entry["file"]: entry for entry in data["templates"]}
    print("| template | model writes | draft matched | reasoning_content | tool_calls | content | real outputs' calls | why not "
          "| robustness | draft |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    totals = {"templates": 0, "tool templates": 0, "right": 0, "outputs": 0, "outputs parsed": 0,
              "robust drafts": 0, "drafts": 0, "variations": 0, "variations passed": 0}  # fmt: skip
    for path in sorted(folder.glob("*.jinja")):
        entry = known.get(path.name, {"file": path.name, "format": None, "outputs": []})
        source = path.read_text()
        options = dict(special_tokens=entry.get("special_tokens") or {}, stop_tokens=entry.get("stop_tokens"),
                       template_kwargs=entry.get("template_kwargs") or {})  # fmt: skip
        draft, seconds = timed_draft(source, repeat, **options)
        parsed = [_parses_output(source, draft, output, data["tools"], options) for output in entry.get("outputs", [])]
        good = sum(1 for why in parsed if why is None)
        totals["templates"] += 1
        if entry.get("format"):
            totals["tool templates"] += 1
            totals["right"] += bool(parsed) and good == len(parsed)
        totals["outputs"] += len(parsed)
        totals["outputs parsed"] += good
        reports = [draft.report(f) for f in FIELDS]
        why = _why(draft, parsed) if good < len(parsed) else ""
        matched = draft.format.name if draft.format else "—"
        outputs = f"{good}/{len(parsed)}" if parsed else "—"
        robust = robustness_cell(draft, totals, source, options)
        print(f"| {path.stem} | {entry.get('format') or '(no tools)'} | {matched} | {' | '.join(cell(r) for r in reports)} | "
              f"{outputs} | {_escape(why)} | {robust} | {seconds:.2f} s |")  # type: ignore[arg-type]  # fmt: skip
    print(f"\nTool templates whose real outputs' calls all parse with the draft: {totals['right']} of {totals['tool templates']}; "
          f"outputs: {totals['outputs parsed']} of {totals['outputs']}.")  # fmt: skip
    print(f"Drafts with no claimed variation broken (robustness): {totals['robust drafts']} of {totals['drafts']}; "
          f"variations passed: {totals['variations passed']} of {totals['variations']}.")  # fmt: skip
    return totals


def robustness_cell(draft: Draft, totals: dict, source: str = "", options: dict | None = None) -> str:
    """The robustness check of a draft: variations passed of those tried, the claimed ones that break
    (✗), those the chat template writes unreadably (⚠) and those only noted (a variation its format
    does not claim, or a limit of the spec). Run again here with a budget of CORPUS_ROBUSTNESS_S, so
    that the figure is the template's, not the machine's load (the draft's own run is bounded by
    the checks' budget)."""
    results = [c for c in draft.checks if c.name.startswith("robustness.")]
    if source and draft.response_template is not None:
        robustness.BUDGET_SECONDS, saved = CORPUS_ROBUSTNESS_S, robustness.BUDGET_SECONDS
        try:
            claims = (draft.format.name, dict(load_format(draft.format.name).variations)) if draft.format else None
            report = run_checks(source, draft.response_template, families=["robustness"], claims=claims,
                                special_tokens=(options or {}).get("special_tokens"), stop_tokens=(options or {}).get("stop_tokens"),
                                template_kwargs=(options or {}).get("template_kwargs"))  # fmt: skip
            results = [c for c in report.checks if c.name.startswith("robustness.")]
        finally:
            robustness.BUDGET_SECONDS = saved
    if draft.response_template is None or not results:
        return "—"
    passed = [c for c in results if c.status == "pass"]
    failed = [c.name.split(".", 1)[1] for c in results if c.status == "fail"]
    warned = [c.name.split(".", 1)[1] for c in results if c.status == "warn"]
    noted = [c.name.split(".", 1)[1] for c in results if c.status == "info" and "do not parse" in c.details]
    totals["drafts"] += 1
    totals["robust drafts"] += not failed
    totals["variations"] += len(passed) + len(failed) + len(warned) + len(noted)
    totals["variations passed"] += len(passed)
    text = f"{len(passed)}/{len(passed) + len(failed) + len(warned) + len(noted)}"
    text += f" ✗ {', '.join(failed)}" if failed else ""
    text += f" ⚠ {', '.join(warned)} (the chat template writes it unreadably)" if warned else ""
    return text + (f" (noted: {', '.join(noted)})" if noted else "")


def _why(draft: Draft, parsed: list[str | None]) -> str:
    """Why a template's real outputs do not parse, in a few words: what the draft says of its calls,
    what the template refuses, and whether any library format's texts appear in what it renders."""
    report = draft.report("tool_calls")
    assert report is not None
    if report.status == "not_inferable":
        said = report.message.split(", so its delimiters")[0].split("; write this field")[0]
        parts = [said.replace("`tool_calls` is left out: ", "history: ").rstrip(".")]
    else:
        parts = list(dict.fromkeys(w for w in parsed if w))
    refused = next((n for n in report.notes if n.startswith("the chat template refuses")), None)
    if refused:
        parts.append(refused[:110])
    if draft.format is None:
        parts.append("no library format's call texts appear in what it renders")
    return "; ".join(parts)


def _parses_output(source: str, draft: Draft, output: dict, tools: dict, options: dict) -> str | None:
    """None when a real output's calls (and the fields the draft has) parse to its message; else why."""
    if draft.response_template is None:
        return "no draft"
    schemas = [tools[name] for name in output.get("tools", [])]
    prompt = render(source, [{"role": "user", "content": "Hi"}], schemas or None, add_generation_prompt=True,
                    special_tokens=options["special_tokens"], template_kwargs=options["template_kwargs"])  # fmt: skip
    if not prompt.ok:
        return "the template does not render a prompt"
    try:
        message = parse_response(output["output"], draft.response_template, prefix=prompt.prompt, tools=schemas or None)
    except Exception as e:  # noqa: BLE001 - the parser's message is the finding
        return f"does not parse ({type(e).__name__})"
    got, want = normalise_message(message), normalise_message(output["message"])
    if got.get("tool_calls") != want.get("tool_calls"):
        return "calls come back as " + json.dumps(got.get("tool_calls"), ensure_ascii=False)[:80] if got.get("tool_calls") else \
            "the calls land in " + (", ".join(k for k in got if k != "tool_calls") or "no field")  # fmt: skip
    return None


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", "⏎")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, help="a folder of real chat templates (*.jinja)")
    parser.add_argument("--meta", type=Path, help="their tokens, formats and real outputs (JSON, see the docstring)")
    parser.add_argument("--repeat", type=int, default=5, help="drafts per template; the median time is shown")
    parser.add_argument("--draft-s", action="store_true", help="only the draft_s figure (best of --repeat)")
    args = parser.parse_args()
    if args.draft_s:
        draft_s(args.repeat)
    elif args.corpus:
        corpus(args.corpus, args.meta, args.repeat)
    else:
        presets(args.repeat)


if __name__ == "__main__":
    main()
