"""Examples: raw outputs with the message each must parse to (a format's examples in the library).
Each one is parsed in one piece by transformers' `parse_response`, which must give the expected
message, and streamed in every chunking by the streaming check, which must give what one piece
gives. A response template earns an example only by passing both."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from transformers.utils.chat_parsing import parse_response

from .. import limits
from ..cases import Case
from ..presets import thawed
from ..regex_bounds import RegexTimeout, regex_budget
from ..response_spec import load_response_spec
from ..text import short
from .context import CheckContext, Sample
from .results import CheckResult
from .streaming import check_streaming

if TYPE_CHECKING:
    from ..formats import FormatExample

PARSE = "example.parse"
STREAMING = "example.streaming"


def check_examples(
    response_template: str | Mapping,
    examples: Iterable[FormatExample],
    *,
    random_splits: int = 200,
    seed: int = 0,
    streaming: bool = True,
) -> list[CheckResult]:
    """For each example: whether it parses to its expected message (`example.parse`) and whether
    streaming it in any chunking gives the same message and events (`example.streaming`, the
    streaming check with `random_splits` seeded random splits). Never raises."""
    text = response_template if isinstance(response_template, str) else json.dumps(thawed(response_template), indent=2)
    loaded = load_response_spec(text)
    if not loaded.ok:
        return [CheckResult(PARSE, "fail", f"The response template does not load: {loaded.diagnostics[0].message}")]
    ctx = CheckContext(chat_template="", response_text=text, spec=loaded.spec or {}, template=loaded.template,  # type: ignore[arg-type]
                       cases=[], samples=[], random_splits=random_splits, seed=seed)  # fmt: skip
    results = []
    for example in examples:
        subject = f"example {example.name!r}"
        sample = Sample(example.name, Case(example.name, [], tools=example.tool_list()), example.output,
                        example.expected(), origin="example", prompt=example.prefix or "")  # fmt: skip
        with regex_budget(limits.REGEX_SECONDS * 5):
            try:
                results.append(_parse(ctx, sample, subject))
                if streaming:
                    result = check_streaming(ctx, sample)
                    result.name = STREAMING
                    results.append(result)
            except RegexTimeout as e:
                results.append(CheckResult(PARSE, "fail", f"Stopped: {e}", None, subject))
    return results


def _parse(ctx: CheckContext, sample: Sample, subject: str) -> CheckResult:
    try:
        message = parse_response(sample.output, ctx.template, prefix=sample.prompt, tools=sample.case.tools)
    except RegexTimeout:
        raise
    except Exception as e:  # noqa: BLE001 - the format's problem, reported as a failure
        return CheckResult(PARSE, "fail", f"parse_response fails: {type(e).__name__}: {short(str(e), 300)}", None, subject)
    expected = sample.expected or {}
    differing = sorted(k for k in set(message) | set(expected) if message.get(k) != expected.get(k))
    if not differing:
        return CheckResult(PARSE, "pass", "parse_response gives the expected message.", None, subject)
    lines = [f"parse_response differs from the expected message in {', '.join(differing)}:"]
    for key in differing:
        lines.append(f"  {key}: expected {_json(expected.get(key))}, parsed {_json(message.get(key))}")
    return CheckResult(PARSE, "fail", "\n".join(lines), None, subject)


def _json(value: Any) -> str:
    return "(missing)" if value is None else short(json.dumps(value, ensure_ascii=False), 200)
