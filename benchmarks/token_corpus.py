"""What the token checks say about real chat templates: every corpus entry (a folder like
`benchmarks.check_corpus` reads, with `cases.json`) checked with a tiny tokenizer built to mimic its
format's: the model's special and stop tokens and every `<|…|>`-style text its template writes are
special tokens, and BOS is added on `tokenizer(text)` for the families whose real tokenizers do
(Llama, Gemma, Mistral, DeepSeek, Command). No real tokenizer is read (none is downloadable here),
so this measures the judgements that depend on the template (training masks, double BOS with the
family's BOS rule, delimiters against a byte-level BPE), not a real vocabulary's splits.
Run: `python -m benchmarks.token_corpus /path/to/corpus [--markdown]`."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from engine.cases import Case
from engine.checks import run_checks
from tests.token_support import format_tokenizer

# Families whose real tokenizers add BOS when encoding text (add_bos_token, or a post-processor).
ADDS_BOS = ("llama", "gemma", "mistral", "devstral", "ministral", "deepseek", "command", "hermes", "functionary",
            "firefunction")


def check_entry(folder: Path) -> dict:
    meta = json.loads((folder / "meta.json").read_text())
    template = (folder / meta.get("check_template", "chat_template.jinja")).read_text()
    special = meta.get("special_tokens") or {}
    adds_bos = "bos_token" in special and any(f in folder.name for f in ADDS_BOS)
    response = (folder / "response_template.json").read_text()
    # The response template's `<|…|>` delimiters are tokens of the real tokenizer too (Phi-4-mini's
    # <|tool_call|>, which its template never writes).
    loaded = format_tokenizer(template + response, special, meta.get("stop_tokens") or [], add_bos=adds_bos)
    cases = [Case.from_dict(c) for c in json.loads((folder / "cases.json").read_text())["cases"]]
    report = run_checks(template, response, cases, families=["tokens"],
                        tokenizer=loaded.tokenizer, special_tokens=special,
                        template_kwargs=meta.get("template_kwargs") or {}, stop_tokens=meta.get("stop_tokens") or [])
    return {"findings": dict(Counter(f"{r.status} {r.name}" for r in report.checks if r.status != "pass")),
            "details": [f"{r.status} {r.name}: {r.details.splitlines()[0][:160]}" for r in report.checks
                        if r.status in ("warn", "fail")],
            "errors": [d.message for d in report.diagnostics if d.severity == "error"]}


def main(argv: list[str]) -> None:
    corpus = Path(argv[0])
    total: Counter = Counter()
    for folder in sorted(p for p in corpus.iterdir() if (p / "meta.json").is_file() and (p / "cases.json").is_file()):
        result = check_entry(folder)
        total.update(result["findings"])
        said = ", ".join(f"{k} ×{n}" if n > 1 else k for k, n in sorted(result["findings"].items())) or "all pass"
        print(f"| {folder.name} | {said} |" if "--markdown" in argv else json.dumps({"entry": folder.name, **result}))
    print(json.dumps({"total": dict(sorted(total.items()))}))


if __name__ == "__main__":
    main(sys.argv[1:])
