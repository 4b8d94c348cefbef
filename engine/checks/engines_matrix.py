"""Where does this template work? Every case rendered by each engine that serves models, compared
byte for byte with transformers (the reference): identical, differs at line:column (both texts,
whitespace visible), error (the engine's own message), or not checked (the engine is not on this
machine). A fact to show, never a reason to change the reference.

The matrix is `{engine: {case: {"status", "details", ...}}}` (`check --json` prints it under
"engines"); each engine also gets one result in the checks list."""

from __future__ import annotations

from ..engines import ENGINES, LABELS, EngineOutput, render_all
from ..diagnostics import line_col
from ..text import first_difference, show_difference
from .context import CheckContext
from .results import CheckResult, Location

NAME = "engines"


def engine_matrix(ctx: CheckContext, engines: tuple[str, ...] = ENGINES) -> tuple[dict[str, dict[str, dict]], list[CheckResult]]:
    """The matrix and one result per engine."""
    references: list[tuple[str, str | None]] = []  # (case name, transformers' text)
    contexts = []
    for case in ctx.cases:
        rendered = ctx.render(case, continue_final_message=False)
        references.append((case.name, rendered.prompt))
        contexts.append(ctx.variables(case))
    outputs = render_all(ctx.chat_template, contexts, engines) if contexts else {e: [] for e in engines}
    matrix: dict[str, dict[str, dict]] = {}
    results = []
    for engine in engines:
        row = {name: cell(reference, output) for (name, reference), output in zip(references, outputs[engine])}
        matrix[engine] = row
        results.append(_summary(engine, row))
    return matrix, results


def cell(reference: str | None, output: EngineOutput) -> dict:
    """One case in one engine, compared with transformers' text."""
    if output.not_checked is not None:
        return {"status": "not checked", "details": output.not_checked}
    if reference is None:
        return {"status": "not checked", "details": "transformers does not render this case (see the round-trip checks)"}
    if output.error is not None:
        return {"status": "error", "details": output.error}
    text = output.text or ""
    index = first_difference(reference, text)
    if index is None:
        return {"status": "identical", "details": f"identical ({len(text):,} characters)"}
    line, column = line_col(reference, index)
    picture = show_difference(reference, text, index, ("transformers", "this engine"))
    return {
        "status": "differs",
        "details": f"differs at line {line}, column {column}:\n{picture}",
        "line": line,
        "column": column,
        "expected": reference,
        "got": text,
    }


def _summary(engine: str, row: dict[str, dict]) -> CheckResult:
    label = LABELS[engine]
    name = f"{NAME}.{engine}"
    statuses = {c["status"] for c in row.values()}
    if not row:
        return CheckResult(name, "pass", f"{label}: no case to render.")
    if statuses == {"not checked"}:
        return CheckResult(name, "info", f"{label}: {next(iter(row.values()))['details']}.")
    bad = {case: c for case, c in row.items() if c["status"] in ("differs", "error")}
    if not bad:
        return CheckResult(name, "pass", f"{label} renders every case exactly as transformers does.")
    lines = [f"{label} renders {len(bad)} of {len(row)} case{'s' if len(row) > 1 else ''} differently from transformers:"]
    for case, c in bad.items():
        head, _, rest = c["details"].partition("\n")
        lines.append(f"case {case!r}: {head}" + (f"\n{rest}" if rest else ""))
    return CheckResult(name, "warn", "\n".join(lines), Location("chat_template"))
