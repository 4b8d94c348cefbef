"""Provenance on real chat templates: every render explained, equal to transformers'.

For each `*.jinja` file of a folder, the built-in conversations `check` uses (fitted to what the
template accepts: `engine.checks.fitting`) are rendered with and without a generation prompt, with
provenance (`render(explain=True)`), and each explanation is checked: its pieces tile the prompt
transformers rendered, byte for byte. Each render runs as `render --explain` runs it: in the killable
worker, within the command's time limit (templates are code). Prints one line per template and the totals (`--markdown`: a
table). Real templates are never committed here; collect them elsewhere.
Run: `python -m benchmarks.explain_corpus /path/to/templates [--markdown]`."""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from pathlib import Path

from engine import limits
from engine.cases import render_case
from engine.checks.context import CheckContext, default_cases
from engine.checks.fitting import fit_cases
from engine.checks.template_fields import analyse_fields

# Special tokens for templates that read them (a corpus of bare templates has no tokenizer config).
TOKENS = {"bos_token": "<s>", "eos_token": "</s>"}


def explain_template(source: str) -> dict:
    """Renders, explained renders, coarse ones (macros shown whole), the notes, and the slowest."""
    try:
        fields = analyse_fields(source)
    except Exception as e:  # noqa: BLE001 - a template that does not parse is reported as such
        return {"renders": 0, "explained": 0, "whole": 0, "coarse": 0, "notes": [f"does not parse: {e}"], "ms": 0.0}
    context = CheckContext(source, "", {}, None, [], [], special_tokens=TOKENS)  # type: ignore[arg-type]
    cases, _ = fit_cases(context, default_cases(fields))
    out = {"renders": 0, "explained": 0, "whole": 0, "coarse": 0, "notes": [], "ms": 0.0}
    for case in cases:
        for generation in (True, False):
            start = time.perf_counter()
            result = render_case(source, replace(case, add_generation_prompt=generation), TOKENS, explain=True,
                                 timeout=limits.RENDER_SECONDS)
            out["ms"] = max(out["ms"], (time.perf_counter() - start) * 1000)
            if not result.ok:
                continue
            out["renders"] += 1
            pieces = result.explanation.pieces
            tiles = pieces is not None and "".join(result.prompt[p.start : p.end] for p in pieces) == result.prompt and all(
                a.end == b.start for a, b in zip(pieces, pieces[1:]))  # fmt: skip
            out["explained"] += tiles
            out["coarse"] += result.explanation.coarse
            out["whole"] += bool(result.explanation.note) and tiles and not result.explanation.coarse
            if result.explanation.note and result.explanation.note not in out["notes"]:
                out["notes"].append(result.explanation.note)
    return out


def main(argv: list[str]) -> dict:
    folder = Path(argv[0])
    markdown = "--markdown" in argv
    totals = {"templates": 0, "renders": 0, "explained": 0, "whole": 0, "coarse": 0}
    if markdown:
        print("| template | renders | explained | slowest (ms) | note |\n|---|---|---|---|---|")
    for path in sorted(folder.glob("*.jinja")):
        row = explain_template(path.read_text(encoding="utf-8"))
        totals["templates"] += 1
        for key in ("renders", "explained", "whole", "coarse"):
            totals[key] += row[key]
        note = "; ".join(row["notes"])
        if markdown:
            print(f"| {path.stem} | {row['renders']} | {row['explained']} | {row['ms']:.0f} | {note} |")
        else:
            print(f"{path.stem:<55} {row['explained']:>3}/{row['renders']:<3} {row['ms']:6.0f} ms  {note}")
    print(f"\n{totals['templates']} templates: {totals['explained']} of {totals['renders']} renders explained and equal to "
          f"transformers' ({totals['whole']} with a macro shown whole, {totals['coarse']} coarse)")
    return totals


if __name__ == "__main__":
    main(sys.argv[1:])
