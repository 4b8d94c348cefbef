"""Every benchmark in one run, and one table: `python -m benchmarks [--quick] [--json] [--markdown]`.

Runs bench_trace, bench_stream, bench_checks, bench_draft, bench_behaviour, bench_tokens, bench_local and bench_browser (the app served by
`python app.py`, driven by Chromium) in this order, each printing its own detail, then prints one
table with every figure of issue 15, its target and whether it is met. `--json` prints only one
object with exactly those keys (the details go to stderr), so the figures can be tracked over time;
`--markdown` prints the table as docs/benchmarks.md shows it; `--quick` runs a reduced version (smaller
inputs, fewer repeats) in under 50 seconds. `--draft` adds bench_draft's presets table and
`--corpus DIR` runs check_corpus on a folder of real templates, `--public` runs bench_public (a public
server under load and under attack; several minutes) (each prints its own tables).

A full run starts the app first and waits until it is up and idle; `--quick` lets its start overlap
the in-process benchmarks, so its figures are a smoke test (every key reported), not for judging.
The machine is shared: each section repeats its measurements and reports medians or the best run,
as its own docstring says."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Figure:
    """One key of the report: what it measures, its target, and how to read the headline number."""

    key: str
    what: str
    target: str
    headline: Callable[[Any], str]
    met: Callable[[Any], bool | None]  # None: reported, no target


def _ratio(value: float) -> str:
    return f"{value:.2f}x"


FIGURES = (
    Figure("trace_overhead", "trace / bare ResponseParser.feed, each preset's format (worst case)", "≤ 1.3",
           lambda v: f"max {_ratio(v['max'])}", lambda v: v["max"] <= 1.3),
    Figure("parser_scaling", "bare parser 400 KB / 100 KB at 4-char chunks", "report",
           _ratio, lambda v: None),
    Figure("stream_scaling", "streaming callback, 20k / 10k tokens, no pace", "≤ 2.2",
           _ratio, lambda v: v <= 2.2),
    Figure("stream_wire_ratio", "bytes sent for a 20k-token run / bytes of its output", "≤ 3",
           lambda v: f"{_ratio(v['ratio'])} ({v['sent_bytes'] / 1e6:.2f} MB)", lambda v: v["ratio"] <= 3),
    Figure("stream_updates_per_s", "updates/s at 200 tokens/s; last update after last token", "≤ 15; ≤ 100 ms",
           lambda v: f"{v['updates_per_s']:.1f}/s; {v['lag_ms']:.0f} ms",
           lambda v: v["updates_per_s"] <= 15 and v["lag_ms"] <= 100),
    Figure("render_ms", "median render per preset in the worker (worst preset)", "≤ 20 ms",
           lambda v: f"max {v['max']:.1f} ms", lambda v: v["max"] <= 20),
    Figure("explain_ratio", "a keystroke's render with provenance / without, in the worker (worst preset; "
           "a just-edited template)", "≤ 2", lambda v: f"max {_ratio(v['max'])} (edit {_ratio(v['edit_max'])})",
           lambda v: v["max"] <= 2),
    Figure("check_s", "every check on a preset, as the Checks tab runs them (worst preset)", "≤ 2 s",
           lambda v: f"max {v['max']:.2f} s", lambda v: v["max"] <= 2),
    Figure("draft_s", "draft of each preset and format family, as the Draft button runs it (worst)", "≤ 2 s",
           lambda v: f"max {v['max']:.2f} s", lambda v: v["max"] <= 2),
    Figure("behaviour_diff_s", "what changes for the model: one preset's templates against another's, in the worker "
           "(worst ordered pair of the four)", "≤ 2 s", lambda v: f"max {v['max']:.2f} s (first {v['first']:.2f} s)",
           lambda v: v["max"] <= 2),
    Figure("local_runner_ratio", "local runner tokens/s / bare generate tokens/s (tiny model)", "≥ 0.9",
           _ratio, lambda v: v >= 0.9),
    Figure("real_model_ratio", "the same on SmolLM2-135M-Instruct (GGUF from PyPI); its tokens/s, first region, "
           "load of the converted folder", "≥ 0.9",
           lambda v: f"{_ratio(v['ratio'])} ({v['runner_tokens_per_s']:.1f} / {v['bare_tokens_per_s']:.1f} tokens/s; "
                     f"first region {v['first_region_s']:.2f} s; load {v['load_s']:.1f} s)",
           lambda v: v["ratio"] >= 0.9),
    Figure("page_load_s", "Chromium: request → first prompt visible (p50; first load)", "≤ 2 s",
           lambda v: f"{v['p50']:.2f} s (first {v['first']:.2f} s)", lambda v: v["p50"] <= 2),
    Figure("preset_switch_ms", "Chromium: pick a preset → its prompt visible (p50, p95)", "p95 ≤ 250 ms",
           lambda v: f"{v['p50']:.0f} / {v['p95']:.0f} ms", lambda v: v["p95"] <= 250),
    Figure("keystroke_ms", "Chromium: type a character → updated prompt (p50, p95); the author pausing → it explained (p50)",
           "p95 ≤ 100 ms", lambda v: f"{v['p50']:.0f} / {v['p95']:.0f} ms; {v.get('explained_p50', float('nan')):.0f} ms",
           lambda v: v["p95"] <= 100),
    Figure("token_view_ms", "a keystroke with Tokens on, minus one without a tokenizer (1.5k-char prompt; 21k)",
           "≤ 50 ms", lambda v: f"{v['typical']:.1f} ms ({v['keystroke_ms']:.1f} → {v['with_tokens_ms']:.1f}); "
           f"{v['long']:.0f} ms", lambda v: v["typical"] <= 50),
    Figure("app_rss_mb", "app memory after one run of each preset (server + render workers)", "report; ≤ 600",
           lambda v: f"{v['total']:.0f} MB ({v['server']:.0f} + {v['workers']:.0f})", lambda v: v["total"] <= 600),
)
KEYS = tuple(f.key for f in FIGURES)


def run(quick: bool = False) -> dict[str, Any]:
    """Every benchmark; the figures by key (values are numbers or small objects)."""
    from benchmarks import (bench_behaviour, bench_browser, bench_checks, bench_draft, bench_local, bench_stream,
                            bench_tokens, bench_trace)

    results: dict[str, Any] = {}
    with bench_browser.AppServer() as server:
        if not quick:  # a full run measures on a quiet machine: the app is up and idle first
            server.ready()
            time.sleep(2)
        for title, section in (("trace", bench_trace.main), ("streaming", bench_stream.main),
                               ("rendering and checks", bench_checks.main), ("drafting", bench_draft.figures),
                               ("what changes for the model", bench_behaviour.figures),
                               ("token view", bench_tokens.main),
                               ("local runner", bench_local.main)):  # fmt: skip
            started = time.perf_counter()
            print(f"\n== {title}")
            figures = section(quick=quick)
            results.update({k: v for k, v in figures.items() if k in KEYS})
            print(f"({time.perf_counter() - started:.0f} s)")
        print("\n== the app in Chromium")
        started = time.perf_counter()
        results.update(bench_browser.main(quick=quick, server=server))
        print(f"({time.perf_counter() - started:.0f} s)")
    missing = [k for k in KEYS if k not in results]
    if missing:
        raise RuntimeError(f"benchmarks did not report {missing}")
    return {k: results[k] for k in KEYS}


def verdict(figure: Figure, value: Any) -> str:
    met = figure.met(value)
    return "report" if met is None else ("met" if met else "MISSED")


def text_table(results: dict[str, Any]) -> str:
    rows = [("key", "measured", "target", "")] + [
        (f.key, f.headline(results[f.key]), f.target, verdict(f, results[f.key])) for f in FIGURES
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows)


def markdown_table(results: dict[str, Any]) -> str:
    lines = ["| figure | what | measured | target | |", "|---|---|---|---|---|"]
    for f in FIGURES:
        lines.append(f"| `{f.key}` | {f.what} | {f.headline(results[f.key])} | {f.target} | {verdict(f, results[f.key])} |")
    return "\n".join(lines)


def _plain(value: Any) -> Any:
    """JSON-ready: floats rounded to what the machine can tell apart, NaN as null."""
    if isinstance(value, float):
        return None if math.isnan(value) else round(value, 4)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a reduced run (under a minute)")
    parser.add_argument("--json", action="store_true", help="print one JSON object with every figure (details to stderr)")
    parser.add_argument("--markdown", action="store_true", help="print the table as markdown (for docs/benchmarks.md)")
    parser.add_argument("--draft", action="store_true", help="also print bench_draft's presets table")
    parser.add_argument("--corpus", help="also run check_corpus on this folder of real templates")
    parser.add_argument("--public", action="store_true",
                        help="also run bench_public: a public server under load and under each attack of issue 25")
    args = parser.parse_args(argv)
    detail = sys.stderr if args.json else sys.stdout
    with contextlib.redirect_stdout(detail):
        results = run(quick=args.quick)
        if args.draft:
            from benchmarks import bench_draft

            print("\n== drafting")
            bench_draft.presets(1 if args.quick else 5)
        if args.public:
            from benchmarks import bench_public

            print("\n== a public server under attack")
            bench_public.main([])
        if args.corpus:
            from benchmarks import check_corpus

            print("\n== check on real templates")
            check_corpus.main([args.corpus, "--markdown"])
    if args.json:
        print(json.dumps(_plain(results), indent=1))
    else:
        print("\n" + (markdown_table(results) if args.markdown else text_table(results)))
    return results


if __name__ == "__main__":
    main()
