"""The robustness check: outputs varied the way models vary them, judged against what is claimed.

Every library format passes every variation it claims (a test per format) and claims only limits it
names; a deliberately fragile pair is reported with its smallest failing output on the response
template's line; a value that breaks only in combination is shrunk; a variation nobody claims is
never a failure; the library's formats for the families transformers ships fallbacks for agree with
them, or the difference is explained; hypothesis searches string values per format."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from transformers.cli.serving.utils import _RESPONSE_TEMPLATE_FALLBACKS
from transformers.utils.chat_parsing import parse_response

from engine.cases import normalise_message
from engine.checks import run_checks
from engine.checks.context import CheckContext
from engine.checks.robustness import VARIATIONS, Claims
from engine.checks.robustness_outputs import find_slot, substituted
from engine.checks.robustness_run import check_library_format, format_claims, format_variants
from engine.formats import load_format, load_formats, load_limits
from engine.response_spec import load_response_spec

FORMATS = [f.name for f in load_formats()]
CLAIM_KEYS = set(VARIATIONS) - {"optional", "reasoning", "wrappers"}

# A ChatML template that writes calls as Hermes does (arguments with tojson), and a response
# template that reads the one argument `city` as raw text: fragile on purpose.
CHATML = (
    "{%- for m in messages %}<|im_start|>{{ m.role }}\n"
    "{% if m.content %}{{ m.content }}{% endif %}"
    "{%- for c in m.tool_calls or [] %}<tool_call>\n"
    '{"name": "{{ c.function.name }}", "arguments": {{ c.function.arguments | tojson }}}\n</tool_call>'
    "{%- endfor %}<|im_end|>\n{%- endfor %}{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def fragile(close: str = '"}}') -> dict:
    return {
        "version": 1, "defaults": {"role": "assistant"}, "start_anchor": "<|im_start|>assistant\n",
        "fields": {
            "tool_calls": {
                "open_pattern": r'<tool_call>\s*\{"name": "(?P<name>[^"]+)", "arguments": \{"city": "',
                "close": close, "repeats": True, "content": "text",
                "transform": {"type": "function", "function": {"name": "{name}", "arguments": {"city": "{content}"}}},
            },
            "content": {"close": "<|im_end|>", "content": "text", "repeats": True, "join": ""},
        },
    }  # fmt: skip


def robustness(chat_template: str, response_template: dict) -> dict:
    report = run_checks(chat_template, response_template, families=["robustness"], special_tokens={"eos_token": "<|im_end|>"})
    return {r.name: r for r in report.checks}


@pytest.mark.parametrize("name", FORMATS)
def test_every_format_passes_every_variation_it_claims(name: str) -> None:
    fmt = load_format(name)
    results = check_library_format(fmt, budget=30)
    failed = [str(r) for r in results if r.status == "fail"]
    assert not failed, "\n".join(failed)
    claims = format_claims(fmt)
    tried = {r.name.split(".", 1)[1] for r in results if "." in r.name}
    # What a format claims its models write is tried (a claim no variant exercises proves nothing) ...
    for variation in ("values.strings", "values.typed", "whitespace", "calls.count"):
        if claims.demanded(variation) is True:
            assert variation in tried, f"{name} claims {variation}, and no variant tried it"
    # ... and a variation it marks with a limit names one of its own limits.
    for variation, claim in claims.writes.items():
        if isinstance(claim, str):
            assert claim in fmt.limit_ids and claim in load_limits(), (variation, claim)


@pytest.mark.parametrize("name", FORMATS)
def test_every_format_says_what_its_models_write(name: str) -> None:
    claims = load_format(name).variations
    assert CLAIM_KEYS <= set(claims), f"{name}'s format.json does not say: {sorted(CLAIM_KEYS - set(claims))}"
    assert all(v is True or v is False or isinstance(v, str) for k, v in claims.items() if k not in ("optional", "wrappers"))


def test_a_fragile_pair_is_reported_with_its_smallest_failing_output_on_the_template_line() -> None:
    results = robustness(CHATML, fragile())
    strings = results["robustness.values.strings"]
    assert strings.status == "fail"
    # The smallest output that breaks: `a"b` shrunk to one quote, which tojson writes as \".
    assert "The smallest output that breaks (the string argument '\"'):" in strings.details
    assert '{"city":·"\\""}}⏎</tool_call>' in strings.details
    assert 'expected [{"name": "get_weather", "arguments": {"city": "\\""}}]' in strings.details
    assert 'parsed   [{"name": "get_weather", "arguments": {"city": "\\\\\\""}}]' in strings.details
    text = json.dumps(fragile(), indent=2)
    line = next(i for i, row in enumerate(text.splitlines(), 1) if '"tool_calls"' in row)
    assert strings.location is not None and (strings.location.source, strings.location.line) == ("response_template", line)
    # Typed values come back as text: a failure with the hint that says how to keep them.
    assert results["robustness.values.typed"].status == "fail"
    assert "value parser" in results["robustness.values.typed"].details
    # No library format is this template: text around calls is only noted, never a failure.
    assert all(results[n].status in ("pass", "info") for n in results if n.startswith("robustness.text"))


def test_a_value_that_breaks_only_whole_is_shrunk_to_what_breaks_it() -> None:
    # Only the text "O'Brien [x]" closes this call early: no atom alone has it, the kitchen sink does.
    spec = load_format("hermes").spec()
    spec["fields"]["tool_calls"]["close"] = ["</tool_call>", "n [x"]
    strings = robustness(CHATML, spec)["robustness.values.strings"]
    assert strings.status == "fail"
    shown = strings.details.split("The smallest output that breaks", 1)[1].splitlines()[1]
    assert "n·[x" in shown and "中文" not in shown and "🙂" not in shown
    assert len(shown) < 120, shown


def test_a_correct_pair_passes_and_unclaimed_variations_are_never_failures() -> None:
    hermes = load_format("hermes")
    results = robustness(CHATML, hermes.spec())
    assert not [str(r) for r in results.values() if r.status == "fail"]
    assert results["robustness.values.strings"].status == "pass"
    assert results["robustness.values.typed"].status == "pass"
    assert results["robustness.calls.count"].status == "pass"
    # The pair is the library's hermes format: its claims hold it to text around the calls too.
    assert results["robustness.text.after"].status == "pass"
    assert "hermes" in load_format("hermes").name


def test_a_library_claim_turns_a_note_into_a_failure() -> None:
    # The same fragile text-after behaviour (Mistral's [ARGS] object has no end marker): noted for a pair nobody
    # claims, a failure when a claim says models write it.
    spec = load_format("mistral-args").spec()
    examples = load_format("mistral-args").examples
    from engine.checks.robustness_run import check_format_robustness

    noted = {r.name: r for r in check_format_robustness(spec, examples, Claims({"text.after": False}, source="a test"))}
    limit = {r.name: r for r in check_format_robustness(spec, examples, Claims({"text.after": "json-without-delimiters"}, source="a test"))}
    claimed = {r.name: r for r in check_format_robustness(spec, examples, Claims({"text.after": True}, source="a test"))}
    assert noted["robustness.text.after"].status == "info" and "noted only" in noted["robustness.text.after"].details
    assert limit["robustness.text.after"].status == "info" and "json-without-delimiters" in limit["robustness.text.after"].details
    assert claimed["robustness.text.after"].status == "fail"
    assert "Anything·else?" in claimed["robustness.text.after"].details


def test_an_optional_id_the_transform_names_is_reported_as_the_transform_fallback_limit() -> None:
    results = {r.name: r for r in check_library_format(load_format("mistral-small-3.2"))}
    optional = results["robustness.optional"]
    assert optional.status == "info" and "transform-fallback" in optional.details
    assert "[CALL_ID]" not in optional.details.split("The smallest output that breaks", 1)[1].splitlines()[1]
    assert "parsed   (missing)" in optional.details  # its open pattern needs the id: no call at all
    listed = {r.name: r for r in check_library_format(load_format("mistral-json-list"))}["robustness.optional"]
    assert listed.status == "info" and "transform placeholder '{id}' is not defined" in listed.details
    assert "Hint: the transform names a placeholder this output does not have" in listed.details


def _parse(output: str, template: dict, prompt: str, tools: list | None) -> dict | str:
    try:
        return normalise_message(parse_response(output, template, prefix=prompt, tools=tools))
    except Exception as e:  # noqa: BLE001 - a parse error is compared like a message
        return f"{type(e).__name__}"


# Where the library parses differently from the response template transformers serve falls back to,
# and why (the outputs are the formats' examples and every robustness variant of them).
FALLBACKS = {"hermes": "qwen2", "qwen3": "qwen2", "smollm3": "qwen2", "qwen3.5": "qwen3_5", "gemma4": "gemma4"}
EXPLAINED = {
    ("qwen3.5", "text.between: text between two calls"): (
        "the fallback's content is not `repeats`: text between calls replaces the text before them; the library "
        "joins both"),
    ("hermes", "wrappers: the calls in '<function_call>…</function_call>'"): (
        "llama.cpp's Hermes parser reads a call in <function_call> as in <tool_call> (a wrapper the family writes, "
        "which `hermes` claims and reads); the fallback reads <tool_call> only"),
    ("hermes", "values.delimiters: a string argument holding '</function_call>'"): (
        "the library's second close ends a call whose value holds it; the fallback has no such close (a format's "
        "own delimiters in values are claimed by no format)"),
}


@pytest.mark.parametrize("name", sorted(FALLBACKS))
def test_the_library_agrees_with_transformers_fallback_response_templates(name: str) -> None:
    fallback = next(spec for types, spec in _RESPONSE_TEMPLATE_FALLBACKS.items() if FALLBACKS[name] in types)
    fmt = load_format(name)
    loaded = load_response_spec(fmt.response_template_text)
    ctx = CheckContext(chat_template="", response_text=fmt.response_template_text, spec=loaded.spec or {},
                       template=loaded.template, cases=[], samples=[])  # type: ignore[arg-type]  # fmt: skip
    outputs = [(f"example {e.name}", e.prefix or "", e.output, e.tool_list()) for e in fmt.examples]
    outputs += [(f"{v.variation}: {v.what}", v.prompt, v.output, v.tools) for v in format_variants(ctx, list(fmt.examples), format_claims(fmt))]
    differ = {what for what, prompt, output, tools in outputs
              if _parse(output, fmt.spec(), prompt, tools) != _parse(output, fallback, prompt, tools)}  # fmt: skip
    assert len(outputs) > 20
    assert differ == {what for (n, what) in EXPLAINED if n == name}


@pytest.mark.parametrize("name", [n for n in FORMATS if format_claims(load_format(n)).demanded("values.strings") is True])
def test_string_values_hypothesis_finds_no_value_a_claimed_format_misreads(name: str) -> None:
    fmt = load_format(name)
    example = next(e for e in sorted(fmt.examples, key=lambda e: len(e.output)) if e.expected().get("tool_calls") and find_slot(e))
    slot = find_slot(example)
    delimiters = [d for f in fmt.spec()["fields"].values() for k in ("open", "close") for d in
                  ([f[k]] if isinstance(f.get(k), str) else f.get(k) or [])]  # fmt: skip
    alphabet = st.sampled_from(list("ab \"'\\\n\t[]{}()<>,:=;é中🙂"))

    @settings(max_examples=40, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.text(alphabet=alphabet, max_size=12).map(lambda s: f"x{s}y"))
    def parses(value: str) -> None:
        if any(d and d.strip() and d in value for d in delimiters):
            return  # the format's own delimiters in a value are not claimed
        variant = substituted(slot, value, "values.strings", repr(value))
        parsed = _parse(variant.output, fmt.spec(), variant.prompt, variant.tools)
        assert parsed == normalise_message(variant.expected), (name, variant.output)

    parses()


def test_a_transform_placeholder_some_matches_lack_is_a_lint_on_its_pattern() -> None:
    spec = load_format("hermes").spec()
    spec["fields"]["tool_calls"] = {
        "open_pattern": r"<tool_call>(?:\[(?P<id>\w+)\])?", "close": "</tool_call>", "repeats": True, "content": "json",
        "transform": {"id": "{id}", "type": "function", "function": "{content}"},
    }
    report = run_checks(CHATML, spec, families=["response_lints", "robustness"], special_tokens={"eos_token": "<|im_end|>"})
    [lint] = [r for r in report.checks if r.name == "response_lint.optional_placeholder"]
    assert lint.status == "warn" and "`{id}`" in lint.details and "transform-fallback" in lint.details
    text = json.dumps(spec, indent=2)
    assert lint.location.line == next(i for i, row in enumerate(text.splitlines(), 1) if '"open_pattern"' in row)
    # The robustness check shows it happen: the calls the chat template writes (no id) do not parse.
    [calls] = [r for r in report.checks if r.name == "robustness"]
    assert calls.status == "info" and "transform placeholder '{id}' is not defined" in calls.details


def test_arguments_read_as_text_are_noted_with_the_value_parser_that_keeps_numbers() -> None:
    fmt = load_format("qwen3-coder")
    report = run_checks(CHATML, fmt.spec(), families=["response_lints"])
    [lint] = [r for r in report.checks if r.name == "response_lint.untyped_values"]
    assert lint.status == "info" and '"value_parser": {"name": "json"' in lint.details
    [clean] = [r for r in run_checks(CHATML, load_format("hermes").spec(), families=["response_lints"]).checks
               if r.name == "response_lint.untyped_values"]
    assert clean.status == "pass"


def test_a_wrapper_the_family_writes_is_tried_and_the_hint_says_how_to_read_it() -> None:
    from engine.checks.robustness_run import check_format_robustness

    hermes = load_format("hermes")
    claims = Claims.from_json({"wrappers": [["```json\n", "\n```"]]}, "a test")
    [result] = [r for r in check_format_robustness(hermes.spec(), hermes.examples, claims) if r.name == "robustness.wrappers"]
    assert result.status == "fail" and "```json⏎" in result.details and '"open": ["<tool_call>"' in result.details
    # Listed beside the field's own open and close, the same wrapper reads.
    spec = hermes.spec()
    spec["fields"]["tool_calls"].update({"open": ["<tool_call>", "```json\n"], "close": ["</tool_call>", "\n```"]})
    [fixed] = [r for r in check_format_robustness(spec, hermes.examples, claims) if r.name == "robustness.wrappers"]
    assert fixed.status == "pass"
    # Llama 4's python tags around the pythonic list are a wrapper its format claims, and reads.
    assert format_claims(load_format("pythonic")).wrappers == (("<|python_start|>", "<|python_end|>"),)
