"""What `check` says about real chat templates: run every check on each pair of a corpus folder the
way a new user runs `python -m engine check --chat-template … --response-template …` (built-in
conversations, the model's special and stop tokens), and print one line per model.

A corpus folder holds `index.json` ({"models": [{"slug", "model"}]}) and, per slug,
`chat_template.jinja`, `response_template.json` and `meta.json` ({"special_tokens", "stop_tokens",
"template_kwargs"}). Real templates are never committed here; collect them elsewhere.
Run: `python -m benchmarks.check_corpus /path/to/corpus [--markdown]`."""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path

from engine.checks import run_checks


def check_model(folder: Path) -> dict:
    meta = json.loads((folder / "meta.json").read_text())
    started = time.perf_counter()
    report = run_checks(
        (folder / "chat_template.jinja").read_text(),
        (folder / "response_template.json").read_text(),
        special_tokens=meta.get("special_tokens") or {},
        template_kwargs=meta.get("template_kwargs") or {},
        stop_tokens=meta.get("stop_tokens") or [],
        random_splits=20,
    )
    findings = Counter(f"{r.status} {r.name}" for r in report.checks if r.status != "pass")
    return {
        "exit": 1 if report.status == "fail" else 0,
        "status": report.status,
        "findings": dict(sorted(findings.items())),
        "engines": {e: dict(Counter(c["status"] for c in row.values())) for e, row in getattr(report, "engines", {}).items()},
        "diagnostics": [d.message for d in report.diagnostics if d.severity == "error"],
        "seconds": time.perf_counter() - started,
    }


def main(argv: list[str]) -> None:
    corpus = Path(argv[0])
    markdown = "--markdown" in argv
    models = json.loads((corpus / "index.json").read_text())["models"]
    if markdown:
        print("| model | exit | what `check` says |\n|---|---|---|")
    for entry in models:
        folder = corpus / entry["slug"]
        if not all((folder / name).exists() for name in ("chat_template.jinja", "response_template.json", "meta.json")):
            continue
        result = check_model(folder)
        said = ", ".join(f"{k} ×{n}" if n > 1 else k for k, n in result["findings"].items()) or "all pass"
        if markdown:
            print(f"| {entry['model']} | {result['exit']} | {said} |")
        else:
            print(json.dumps({"model": entry["model"], **result}, ensure_ascii=False))


if __name__ == "__main__":
    main(sys.argv[1:])
