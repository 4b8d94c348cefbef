"""What the library's formats claim, and the outputs those claims come from (format.json `sources`):
each claim a source shows is read, on outputs written here from the sources' facts (never copied):
text after a JSON call or call list, another spelling of a call block, calls inside an unclosed
reasoning block, a wrapper the family writes, several calls in one list, typed values inside XML
parameters, escapes in Python-style strings. And the risk the lookaround closes take, measured."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from transformers.utils.chat_parsing import parse_response

from engine.cases import normalise_message
from engine.checks.robustness import Claims
from engine.checks.robustness_outputs import find_slot, substituted
from engine.checks.robustness_run import check_library_format, format_claims
from engine.formats import load_format, load_formats

SOURCES = ("SGLang", "llama.cpp", "Ollama", "lmdeploy", "mistral-common", "model card", "chat template", "transformers")


def parsed(name: str, output: str, prefix: str = "", tools: list | None = None) -> dict:
    return normalise_message(parse_response(output, load_format(name).spec(), prefix=prefix, tools=tools))


def call(function: str, **arguments) -> dict:
    return {"name": function, "arguments": arguments}


def calls(message: dict) -> list[dict]:
    """The calls of a normalised message, by name and arguments."""
    return list(message.get("tool_calls") or [])


@pytest.mark.parametrize("name", [f.name for f in load_formats()])
def test_every_format_says_where_its_claims_come_from(name: str) -> None:
    fmt = load_format(name)
    assert fmt.sources, f"{name} names no source for what it claims"
    assert all(any(s in line for s in SOURCES) for line in fmt.sources), fmt.sources
    assert fmt.to_dict()["sources"] == list(fmt.sources)


# ----- text after a JSON call or call list ---------------------------------------------------------

AFTER = [
    ("llama3-json", '{"name": "get_time", "parameters": {"zone": "Asia/Tokyo"}} Anything else?<|eot_id|>'),
    ("llama3-json", '<|python_tag|>{"name": "get_time", "parameters": {"zone": {"region": "Asia"}}}\nAnything else?'),
    ("mistral-json-list", '[TOOL_CALLS][{"name": "get_time", "arguments": {"zone": "Asia/Tokyo"}, "id": "a1b2c3d4e"}] Anything else?</s>'),
    ("functools", 'functools[{"name": "get_time", "arguments": {"zone": "Asia/Tokyo"}}] Anything else?<|end|>'),
    ("granite", '<|tool_call|>[{"name": "get_time", "arguments": {"zone": "Asia/Tokyo"}}] Anything else?<|end_of_text|>'),
    ("xlam", '[\n  {"name": "get_time", "arguments": {"zone": "Asia/Tokyo"}}\n] Anything else?<|eot_id|>'),
]


@pytest.mark.parametrize(("name", "output"), AFTER)
def test_text_after_a_json_call_is_content_and_the_call_is_read(name: str, output: str) -> None:
    message = parsed(name, output)
    assert message.get("content") == "Anything else?"
    assert [c["name"] for c in calls(message)] == ["get_time"]


def test_several_llama3_calls_separated_by_semicolons_or_python_tags_each_close() -> None:
    for separator in ("; ", "<|python_tag|>"):
        output = f'<|python_tag|>{{"name": "a", "parameters": {{}}}}{separator}{{"name": "b", "parameters": {{"x": {{"y": 1}}}}}}'
        assert calls(parsed("llama3-json", output)) == [call("a"), call("b", x={"y": 1})], separator


# The risk the lookaround closes take (docs/presets-and-formats.md and the formats' descriptions say it):
# a string value that holds the close's own shape followed by text ends the call early. Every other
# adversarial value of these lists parses.
ADVERSARIAL = ["a}b", "a} b", "a}}b", "a} }b", "a}]b", "a}] b", "a}\nb", "e}b", "1}b", 'a"}b', "x}", "{a}", "a}, b",
               "a}}, b", "l} x", "a]b", "a)]b", "a}}]b", "a}; b", "a}<b", "{{name}} is", "{{name}}", "[{x}] ok", "a}],b"]  # fmt: skip
BREAKS = {
    "llama3-json": {"a}}b", "a} }b", "{{name}} is"},
    "functools": {"a}]b", "a}] b", "a}}]b", "[{x}] ok"},
    "mistral-json-list": {"a}]b", "a}] b", "a}}]b", "[{x}] ok"},
    "granite": {"a}]b", "a}] b", "a}}]b", "[{x}] ok"},
    "xlam": {"a}]b", "a}] b", "a}}]b", "[{x}] ok"},
}


@pytest.mark.parametrize("name", sorted(BREAKS))
def test_the_values_that_end_a_lookaround_close_early_are_the_ones_documented(name: str) -> None:
    fmt = load_format(name)
    example = next(e for e in sorted(fmt.examples, key=lambda e: len(e.output)) if e.expected().get("tool_calls") and find_slot(e))
    slot = find_slot(example)
    broke = set()
    for value in ADVERSARIAL:
        variant = substituted(slot, value, "values.strings", repr(value))
        try:
            ok = parsed(name, variant.output, variant.prompt, variant.tools) == normalise_message(variant.expected)
        except ValueError:
            ok = False
        if not ok:
            broke.add(value)
    assert broke == BREAKS[name]


def test_text_after_mistral_s_arguments_object_stays_a_named_limit() -> None:
    # The object after [ARGS] ends with a '}' that code values are full of: no close is safe there.
    fmt = load_format("mistral-args")
    assert format_claims(fmt).demanded("text.after") == "json-without-delimiters" and "json-without-delimiters" in fmt.limit_ids
    [after] = [r for r in check_library_format(fmt, budget=30) if r.name == "robustness.text.after"]
    assert after.status == "info" and "json-without-delimiters" in after.details


# ----- other spellings and wrappers a family writes ----------------------------------------------------

R1_CALL = 'function<｜tool▁sep｜>get_time\n```json\n{"zone": "UTC"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>'


@pytest.mark.parametrize("opener", ["<｜tool▁calls｜>", "<｜tool_calls_begin｜>", "<｜tool calls begin｜>",
                                    "<｜tool\\_calls\\_begin｜>", "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>"])  # fmt: skip
def test_deepseek_r1_s_other_spellings_of_the_call_block_are_read(opener: str) -> None:
    message = parsed("deepseek-v3", "Checking." + opener + R1_CALL)
    assert message.get("content") == "Checking." and calls(message) == [call("get_time", zone="UTC")]


def test_deepseek_v3_1_reads_the_short_opener_as_the_block_and_the_first_call() -> None:
    output = '<｜tool▁calls｜>get_time<｜tool▁sep｜>{"zone": "UTC"}<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>'
    assert calls(parsed("deepseek-v3.1", output)) == [call("get_time", zone="UTC")]


def test_kimi_k2_thinking_s_calls_inside_an_unclosed_think_leave_the_reasoning() -> None:
    output = ("<think>I need the file first.<|tool_calls_section_begin|><|tool_call_begin|>functions.read:0"
              '<|tool_call_argument_begin|>{"path": "/a.py"}<|tool_call_end|><|tool_calls_section_end|><|im_end|>')  # fmt: skip
    message = parsed("kimi-k2", output)
    assert message.get("reasoning_content") == "I need the file first." and calls(message) == [call("read", path="/a.py")]
    assert format_claims(load_format("kimi-k2")).optional == ("</think>",)


def test_hermes_reads_the_same_call_in_function_call_tags() -> None:
    message = parsed("hermes", 'Sure.\n<function_call>\n{"name": "get_time", "arguments": {}}\n</function_call><|im_end|>')
    assert message.get("content") == "Sure." and calls(message) == [call("get_time")]


def test_a_respelling_claim_round_trips_and_is_described() -> None:
    data = {"wrappers": [["<a>", "</a>"], {"as": [["<x>", "<y>"], ["</x>", ""]]}]}
    claims = Claims.from_json(data, "a test")
    assert claims.wrappers == (("<a>", "</a>"),) and claims.respellings == ((("<x>", "<y>"), ("</x>", "")),)
    assert claims.to_dict()["wrappers"] == data["wrappers"] and claims.demanded("wrappers") is True
    assert any("'<x>' as '<y>' and '</x>' as ''" in line for line in claims.described())


def test_several_calls_in_one_list_are_tried_for_every_list_format() -> None:
    for fmt in load_formats():
        if fmt.spec()["fields"]["tool_calls"].get("repeats") or format_claims(fmt).demanded("calls.count") is not True:
            continue
        results = {r.name: r for r in check_library_format(fmt, budget=30)}
        assert results["robustness.calls.count"].status == "pass", fmt.name
        assert "variants parse" in results["robustness.calls.count"].details, fmt.name


# ----- typed values and escapes --------------------------------------------------------------------

XML_FORMATS = ["qwen3-coder", "qwen3.5", "seed-oss", "glm-4.5", "minimax-m2", "deepseek-v3.2"]


@pytest.mark.parametrize("name", XML_FORMATS)
def test_xml_parameters_give_numbers_and_objects_with_the_tools_and_strings_that_look_like_numbers_stay_text(name: str) -> None:
    # transformers casts each argument by the tools' JSON Schema; a `json` value parser would make the
    # string "75001" the number 75001 even with the tools (a value it reads as typed is not cast back).
    fmt = load_format(name)
    example = next(e for e in sorted(fmt.examples, key=lambda e: len(e.output)) if e.expected().get("tool_calls") and find_slot(e))
    slot = find_slot(example)
    for value in (2, {"unit": "celsius", "hours": [6, 12]}, [1, 2], True, None, "75001", "true"):
        variant = substituted(slot, value, "values.typed", json.dumps(value))
        got = parsed(name, variant.output, variant.prompt, variant.tools)
        assert got == normalise_message(variant.expected), (name, value, variant.output)


@pytest.mark.parametrize("name", ["pythonic", "lfm2"])
def test_escaped_quotes_in_python_style_strings_are_read(name: str) -> None:
    open_, close = {"pythonic": ("", "<|eot_id|>"), "lfm2": ("<|tool_call_start|>", "<|tool_call_end|><|im_end|>")}[name]
    output = open_ + """[get_weather(name='O\\'Brien', note="say \\"hi\\""), get_time()]""" + close
    assert calls(parsed(name, output)) == [call("get_weather", name="O'Brien", note='say "hi"'), call("get_time")]


def test_olmo3_s_escaped_single_quotes_and_calls_one_per_line_are_its_named_limits() -> None:
    fmt = load_format("olmo3")
    claims = format_claims(fmt)
    assert claims.demanded("values.strings") == "python-literals" and {"python-literals", "call-list-without-brackets"} <= set(fmt.limit_ids)
    assert any("one per line" in line for line in fmt.sources)


def test_the_docs_claims_table_is_what_the_formats_claim() -> None:
    """docs/presets-and-formats.md's claims table says, for each format, what its format.json claims."""
    page = (Path(__file__).parent.parent / "docs" / "presets-and-formats.md").read_text(encoding="utf-8")
    section = page.split("| format | text before | between | after | also | sources |", 1)[1].split("\n\n", 1)[0]
    rows = {m[0]: [c.strip() for c in m[1].split("|")] for m in re.findall(r"^\| `([\w.-]+)` \|(.*)$", section, flags=re.MULTILINE)}
    assert sorted(rows) == sorted(f.name for f in load_formats())
    for fmt in load_formats():
        claims = format_claims(fmt)
        cells = rows[fmt.name][:3]
        for cell, variation in zip(cells, ("text.before", "text.between", "text.after"), strict=True):
            claim = claims.demanded(variation)
            assert cell == ("yes" if claim is True else "no" if not claim else f"[`{claim}`](spec-limits.md#{claim})"), (fmt.name, variation)
        sources = rows[fmt.name][4]
        assert all(any(project in line for line in fmt.sources) for project in sources.split(", ")), (fmt.name, sources)
