"""Issue 11, item 12 (upstream, transformers 5.24): when one field's literals end inside one another
(`["<", "<|im_end|>"]`, `["<tool_call>", "a"]`), transformers' streaming parse depends on where
the output is cut. The streaming check catches such a template and says why; a response-template
lint names it before any output exists; harmless overlaps (a literal that ends with the other) and
the presets stay quiet."""

from __future__ import annotations

import json

import pytest

from engine.cases import Case, Recording
from engine.checks import run_checks
from engine.checks.overlap import overlapping_literals
from engine.presets import load_preset
from engine.response_spec import load_response_spec

CHAT = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
CASE = Case("plain", [{"role": "user", "content": "hi"}])


def response(**fields: dict) -> str:
    return json.dumps({"version": 1, "start_anchor": "<|im_start|>assistant\n", "fields": fields}, indent=2)


def overlaps(text: str) -> list:
    return overlapping_literals(load_response_spec(text).template)


@pytest.mark.parametrize(
    "literals, found",
    [(["<", "<|im_end|>"], ("<", "<|im_end|>")), (["<tool_call>", "a"], ("a", "<tool_call>")),
     (["<tool_call>", "<tool"], ("<tool", "<tool_call>"))],
)
def test_literals_that_end_inside_another_are_found(literals: list[str], found: tuple) -> None:
    [overlap] = overlaps(response(content={}, tool={"open": literals, "close": "</tool_call>"}))
    assert (overlap.field, overlap.key, overlap.inner, overlap.outer) == ("tool", "open", *found)


def test_harmless_overlaps_and_the_presets_are_quiet() -> None:
    # "call>" ends where "<tool_call>" ends: both complete together, and streaming is exact; a
    # prefix one character short is held back until the next character decides.
    assert overlaps(response(content={}, tool={"open": ["<tool_call>", "call>"], "close": "</tool_call>"})) == []
    assert overlaps(response(content={}, tool={"open": ["<tool_call>", "<tool_call>\n"], "close": "</tool_call>"})) == []
    for name in ("smollm3", "qwen3", "gpt-oss", "command-r7b", "blank"):
        assert overlaps(load_preset(name).response_template) == [], name


@pytest.mark.parametrize("literals, harmful", [(["ab", "abc"], False), (["ab", "abcd"], True), (["b", "abc"], True),
                                               (["c", "abc"], False), (["<tool_call>", "call>"], False)])
def test_the_rule_is_what_streaming_does(literals: list[str], harmful: bool) -> None:
    """The lint's rule against transformers itself: every split of an output into 4 chunks."""
    from transformers.utils.chat_parsing import ResponseParser, parse_response

    text = response(content={}, tool={"open": literals, "close": "</t>"})
    spec = json.loads(text)
    output = "x " + max(literals, key=len) + " y</t> z"
    reference = parse_response(output, spec, prefix="")
    n, differs = len(output), False
    for a in range(1, n):
        for b in range(a, n):
            for c in range(b, n):
                parser = ResponseParser(spec, prefix="")
                for chunk in (output[:a], output[a:b], output[b:c], output[c:]):
                    parser.feed(chunk)
                differs = differs or parser.finalize()[0] != reference
    assert differs is harmful and bool(overlaps(text)) is harmful


def test_the_lint_names_the_field_at_its_line() -> None:
    text = response(content={"close": ["<", "<|im_end|>"]})
    report = run_checks(CHAT, text, [CASE], families=["response_lints"])
    [finding] = [r for r in report.checks if r.name == "response_lint.overlapping_literals"]
    assert finding.status == "warn" and "'<' ends inside '<|im_end|>'" in finding.details
    assert finding.location.line == text.splitlines().index('      "close": [') + 1


def test_the_streaming_check_catches_it_and_says_why() -> None:
    text = response(content={"close": ["<", "<|im_end|>"]})
    report = run_checks(CHAT, text, [CASE], [Recording("reply", "plain", "Hello there<|im_end|>")],
                        families=["streaming"], random_splits=10)
    [result] = report.checks
    assert result.status == "fail" and "Streaming differs from one-shot parsing" in result.details
    assert "Why: Field `content`: the close literal '<' ends inside '<|im_end|>'" in result.details
