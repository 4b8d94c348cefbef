"""What a behaviour diff costs: one preset's real templates against another's.

`behaviour_diff_s` (in `python -m benchmarks`): seconds for `engine.behaviour.compare_bounded`, as
the command line and the page run it (in the killable worker, its answer bounded there), with one
preset as the base and another as the new version, on the standard conversations plus the new
preset's cases and recordings (what the page compares for a preset): every changed conversation
explained on both sides, every output parsed by both response templates. Best of N per ordered pair
of the four presets (`max` is the worst pair's); `first` is the first call, which also loads the
format library's index and compiles the templates in that worker.

Run: `python -m benchmarks.bench_behaviour [--repeat N]`."""

from __future__ import annotations

import argparse
import itertools
import time

from engine.behaviour import Suite, Version, compare_bounded
from engine.presets import load_preset
from engine.workspace import Workspace

PRESETS = ("smollm3", "qwen3", "gpt-oss", "command-r7b")
TIMEOUT = 60.0


def version(name: str) -> Version:
    preset = load_preset(name)
    return Version(preset.display_name, preset.chat_template, preset.response_template, dict(preset.special_tokens))


def suite(name: str) -> Suite:
    workspace = Workspace.from_preset(load_preset(name))
    return Suite(workspace.cases, workspace.recordings, workspace.template_kwargs())


def timed(base: str, new: str) -> tuple[float, int, int]:
    """Seconds for one diff, with how many conversations changed of how many."""
    start = time.perf_counter()
    diff, problem = compare_bounded(version(base), version(new), suite(new), timeout=TIMEOUT)
    seconds = time.perf_counter() - start
    if diff is None:
        raise RuntimeError(f"{base} → {new}: {problem.message if problem else 'no answer'}")
    return seconds, len(diff.changed), len(diff.conversations)


def behaviour_diff_s(repeat: int, pairs: list[tuple[str, str]] | None = None) -> dict:
    pairs = pairs or list(itertools.permutations(PRESETS, 2))
    first = timed(*pairs[0])[0]
    worst, shown = 0.0, {}
    for base, new in pairs:
        runs = [timed(base, new) for _ in range(repeat)]
        best = min(r[0] for r in runs)
        _, changed, total = runs[0]
        print(f"  {base:>12} → {new:<12} {best:.2f} s  ({changed} of {total} conversations change)")
        shown[f"{base}->{new}"] = best
        worst = max(worst, best)
    return {"max": worst, "first": first, **shown}


def figures(quick: bool = False) -> dict:
    """The figure `python -m benchmarks` reports (with --quick two pairs once each, else every
    ordered pair, best of 3)."""
    if quick:
        return {"behaviour_diff_s": behaviour_diff_s(1, [("smollm3", "qwen3"), ("qwen3", "gpt-oss")])}
    return {"behaviour_diff_s": behaviour_diff_s(3)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    result = behaviour_diff_s(args.repeat)
    print(f"worst pair: {result['max']:.2f} s; first call {result['first']:.2f} s")


if __name__ == "__main__":
    main()
