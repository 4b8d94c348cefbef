"""Property-based fuzzing (hypothesis), issue 11: whatever a stranger types, the engine answers
with a result or diagnostics, never an exception. Four families, seeded (`derandomize`), 10,000+
examples in all; `PLAYGROUND_FUZZ_SCALE=10` runs ten times as many.

- response templates (random JSON specs and broken JSON text): load, or say why not;
- outputs and chunkings, on response templates with literal and regex delimiters: the trace never
  raises, its segments tile the output, and after finalize its message is `parse_response`'s;
- chat templates (random Jinja from real constructs) and messages: render, or diagnostics;
- JSON a person types (deep, odd Unicode, wrong types): a value within limits, or diagnostics.
"""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from transformers.utils.chat_parsing import parse_response

from engine import load_response_spec, render
from engine.cases import Case
from engine.inputs import load_json
from engine.trace import Trace
from tests.trace_cases import CHATML_PROMPT, HARMONY, REGEX_WS, SMOL

# Seconds each (thousands of examples): the fast loop leaves them out (pytest.ini).
pytestmark = pytest.mark.slow


SCALE = max(1, int(os.environ.get("PLAYGROUND_FUZZ_SCALE", "1")))


def fuzz(examples: int):
    return settings(max_examples=examples * SCALE, derandomize=True, database=None, deadline=None,
                    suppress_health_check=list(HealthCheck), print_blob=True)


# ----- response templates ------------------------------------------------------------------------

DELIMITERS = ["<think>", "</think>", "<tool_call>", "</tool_call>", "<|im_end|>", "<", ">", "|", "\n", "a", "[", "]"]
PATTERNS = [r"\s*", r"<\|channel\|>(?P<name>\w+)", r"(?:a|b)+", r"[", r"(", r"\d{2,3}", r"(?P<key>\w+)=(?P<value>\w+)",
            r"(?<=x)y", r"\1", r"a{1,2}", r"(?i)end", r".*?"]
text = st.lists(st.sampled_from(list("ab <>/|{}[]\"\\n\t") + DELIMITERS), max_size=6).map("".join)
literal = st.one_of(st.sampled_from(DELIMITERS), text)
# Values of the wrong type or shape (drawn from a pool: nested strategies cost more to generate
# than the engine takes to answer).
anything = st.sampled_from([None, True, False, 0, -1, 2.5, "", "x", "{content}", [], {}, ["a"], [1, [2]], {"a": 1},
                            {"name": {}}, [[[[]]]], {"open": "<"}])
field = st.fixed_dictionaries({}, optional={
    "open": st.one_of(literal, st.lists(literal, max_size=3), anything),
    "open_pattern": st.one_of(st.sampled_from(PATTERNS), anything),
    "close": st.one_of(literal, st.lists(literal, max_size=3)),
    "close_pattern": st.sampled_from(PATTERNS),
    "content": st.sampled_from(["text", "json", "xml-inline", "kv-lines", "python-call-list", "int", "nope"]),
    "content_args": st.one_of(st.fixed_dictionaries({}, optional={"tag_pattern": st.sampled_from(PATTERNS)}), anything),
    "repeats": st.one_of(st.booleans(), anything),
    "join": st.one_of(text, anything),
    "optional": st.booleans(),
    "transform": st.one_of(st.just({"type": "function", "function": "{content}"}), st.just("{name}"), anything),
    "transform_each": st.one_of(st.booleans(), anything),
})
spec = st.fixed_dictionaries(
    {"fields": st.one_of(st.dictionaries(st.sampled_from(["content", "reasoning_content", "tool_calls", "x"]), field,
                                         max_size=3), anything)},
    optional={"version": st.sampled_from([1, 2, "1"]), "start_anchor": st.one_of(literal, anything),
              "start_anchor_pattern": st.sampled_from(PATTERNS), "defaults": anything, "extra": anything},
)


@fuzz(2000)
@given(spec, st.integers(0, 3), st.text(max_size=3))
def test_any_response_template_loads_or_says_why(data: dict, damage: int, junk: str) -> None:
    source = json.dumps(data, indent=2)
    if damage == 1:
        source = source[: len(source) // 2]  # cut off mid-way
    elif damage == 2:
        source = source.replace('"', "'", 1) + junk  # Python quoting, trailing junk
    loaded = load_response_spec(source)
    assert loaded.ok or loaded.diagnostics
    for d in loaded.diagnostics:
        assert d.source == "response_template" and d.message


# ----- outputs and chunkings ---------------------------------------------------------------------

TEMPLATES = {"smol": SMOL, "harmony": HARMONY, "regex": REGEX_WS}
PIECES = ["<think>", "</think>", "<tool_call>", "</tool_call>", "<|im_end|>", "<|channel|>final<|message|>",
          "<|channel|>analysis<|message|>", "<|end|>", "<|return|>", "<|call|>", "<|start|>assistant",
          "<|channel|>commentary to=functions.get_weather<|message|>", '{"name": "f", "arguments": {}}',
          "{", "}", "<", "</", "<|", "hello", " ", "\n", "é", "😀", "\x00"]
output = st.lists(st.sampled_from(PIECES), max_size=14).map("".join)


@fuzz(4000)
@given(st.sampled_from(sorted(TEMPLATES)), output, st.lists(st.integers(1, 9), max_size=20), st.booleans())
def test_any_output_in_any_chunking_traces_as_transformers_parses(name: str, text: str, sizes: list[int], prompt: bool) -> None:
    template = TEMPLATES[name]
    prefix = CHATML_PROMPT if prompt and name != "harmony" else ""
    chunks, position = [], 0
    for size in sizes or [len(text) or 1]:
        if position >= len(text):
            break
        chunks.append(text[position : position + size])
        position += size
    if position < len(text):
        chunks.append(text[position:])
    trace = Trace(template, prompt=prefix)
    for chunk in chunks:
        trace.feed(chunk)
    trace.finalize()
    segments = trace.segments()
    assert "".join(text[s.start : s.end] for s in segments) == text
    assert all(a.end == b.start for a, b in zip(segments, segments[1:]))
    try:
        expected = parse_response(text, template, prefix=prefix)
    except Exception:  # noqa: BLE001 - a region that does not parse: the trace must say so
        assert any(d.severity == "error" for d in trace.diagnostics)
        return
    if not any(d.severity == "error" for d in trace.diagnostics):
        assert trace.message == expected


# ----- chat templates and messages ---------------------------------------------------------------

STATEMENTS = [
    "{{ message.content }}", "{{ message['role'] }}", "{{ messages|length }}", "{{ bos_token }}", "{{ x.y.z }}",
    "{{ message.content|tojson }}", "{{ message.content|trim|upper }}", "{{ raise_exception('no') }}",
    "{{ (message.content ~ '!') * 3 }}", "{{ message.content[1:3] }}", "{{ 1 / 0 }}", "{{ message.tool_calls[0] }}",
    "{% if message.role == 'user' %}U{% elif message.role %}R{% else %}N{% endif %}", "{{ tools|tojson }}",
    "{% set ns = namespace(n=0) %}{% set ns.n = ns.n + 1 %}{{ ns.n }}", "{%- generation -%}G{%- endgeneration -%}",
    "{{ message.__class__ }}", "{{ ''.join(['a']) }}", "{{ strftime_now('%Y') }}", "{% for k in message %}{{ k }}{% endfor %}",
    "{{", "{% if %}", "{% endfor %}", "text\n", "{#", "{{ 10**10 }}", "{{ message.content.split(' ') }}",
]
body = st.lists(st.sampled_from(STATEMENTS), max_size=5).map("".join)
chat_template = body.map(lambda b: "{% for message in messages %}" + b + "{% endfor %}{% if add_generation_prompt %}A:{% endif %}")
json_value = st.one_of(st.text(max_size=8), anything, st.sampled_from([10**30, -0.0, 1e308, "\u0000", "😀", "\n\t",
                                                                     {"role": "user"}, [{"content": "x"}], {"a": {"b": {"c": [1]}}}]))
message = st.fixed_dictionaries({"role": st.one_of(st.sampled_from(["system", "user", "assistant", "tool"]), json_value)},
                                optional={"content": json_value, "tool_calls": json_value, "reasoning_content": st.text(max_size=8)})
messages = st.one_of(st.lists(message, max_size=4), json_value)


@fuzz(2000)
@given(st.one_of(chat_template, body), messages, st.one_of(st.none(), st.lists(json_value, max_size=2)), json_value)
def test_any_chat_template_and_messages_render_or_say_why(template: str, messages, tools, kwargs) -> None:
    result = render(template, messages, tools=tools, template_kwargs=kwargs if isinstance(kwargs, dict) else None,
                    add_generation_prompt=True)
    assert (result.prompt is None) == bool([d for d in result.diagnostics if d.severity == "error"])
    for d in result.diagnostics:
        assert d.source in ("chat_template", "case") and d.message


# ----- JSON a person types ------------------------------------------------------------------------

nested = st.integers(0, 400).map(lambda n: "[" * n + "]" * n)
odd_text = st.text(alphabet=st.characters(codec=None, categories=None), max_size=6)
typed_json = st.one_of(
    st.lists(json_value, max_size=4).map(json.dumps), nested, odd_text,
    st.builds(lambda a, b: json.dumps(a)[: len(json.dumps(a)) // 2] + b, json_value, odd_text),
    st.sampled_from(['"\\ud800"', '["\\udc00x"]', '{"a": "\\ud83d\\ude00"}', "[1,]", "{'a': 1}", "NaN", '{"a": True}']),
)


@fuzz(2000)
@given(typed_json)
def test_any_typed_json_is_a_value_or_diagnostics(source: str) -> None:
    value, problems = load_json(source, "case", "messages")
    if problems:
        assert value is None and all(d.message for d in problems)
        return
    json.dumps(value, ensure_ascii=False).encode("utf-8")  # valid Unicode, shallow enough to serialise
    try:
        Case.from_dict({"messages": value} if not isinstance(value, dict) else {"messages": [], **{"template_kwargs": value}})
    except ValueError:
        pass  # a wrong shape is a message
