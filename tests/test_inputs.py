"""Issue 11, items 8, 9 (engine side), 10 and 11: every input becomes a diagnostic where it
belongs. Deep JSON, lone surrogates, oversized text and wrong types are refused with a message
(line and column where there is one), never a RecursionError or a traceback; a template error with
no template frame is still blamed on the template."""

from __future__ import annotations

import json

import pytest

from engine import limits, load_response_spec, render
from engine.cases import Case, render_case
from engine.inputs import check_text, check_value, depth, load_json

MESSAGES = [{"role": "user", "content": "hi"}]
CHATML = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"


def nested(levels: int) -> str:
    return "[" * levels + "]" * levels


@pytest.mark.parametrize("levels", [limits.MAX_JSON_DEPTH + 1, 1_000, 100_000])
def test_deep_json_is_a_located_diagnostic(levels: int) -> None:
    text = '{"messages":\n ' + nested(levels) + "}"
    value, [problem] = load_json(text, "case", "messages")
    assert value is None and problem.source == "case"
    assert "Nested too deeply" in problem.message and (problem.line, problem.column) == (2, limits.MAX_JSON_DEPTH + 1)


def test_json_at_the_depth_limit_loads() -> None:
    value, problems = load_json(nested(limits.MAX_JSON_DEPTH), "case", "messages")
    assert problems == [] and depth(value) == limits.MAX_JSON_DEPTH


def test_depth_counts_without_recursion() -> None:
    value: list = []
    for _ in range(50_000):
        value = [value]
    assert depth(value) > limits.MAX_JSON_DEPTH  # no RecursionError


@pytest.mark.parametrize(
    "text, column",
    [('{"content": "a\\ud800b"}', 15), ('{"content": "\\udc00"}', 14), ('{"content": "ok\\ud83d\\ud83d"}', 16)],
)
def test_a_lone_surrogate_escape_is_located(text: str, column: int) -> None:
    value, [problem] = load_json(text, "case", "messages")
    assert value is None and "Lone surrogate" in problem.message and (problem.line, problem.column) == (1, column)


def test_a_surrogate_pair_is_a_character_not_a_problem() -> None:
    value, problems = load_json('{"content": "\\ud83d\\ude00"}', "case", "messages")
    assert problems == [] and value == {"content": "😀"}


def test_a_raw_lone_surrogate_in_text_is_located_and_shown_safely() -> None:
    [problem] = check_text("line one\nab\ud800c", "chat_template", "chat template", 1000)
    assert (problem.line, problem.column) == (2, 3) and problem.snippet == "ab\ufffdc"
    problem.snippet.encode("utf-8")  # what any UI must be able to do with it


def test_text_over_its_limit_is_refused() -> None:
    [problem] = check_text("x" * 11, "output", "output", 10)
    assert "over the 10 limit" in problem.message


def test_a_lone_surrogate_in_data_names_its_path() -> None:
    [problem] = check_value([{"role": "user", "content": ["ok", "\udfff"]}], "case", "messages")
    assert "(at [0].content[1])" in problem.message


def test_render_refuses_deep_or_broken_inputs_as_case_diagnostics() -> None:
    deep = json.loads(nested(900))
    for messages in ([{"role": "user", "content": deep}], [{"role": "user", "content": "\ud800"}]):
        for timeout in (None, 30):
            result = render("{{ messages[0].content|tojson }}", messages, timeout=timeout)
            [problem] = result.diagnostics
            assert result.prompt is None and problem.source == "case"
    [problem] = render(CHATML, MESSAGES, tools=[{"deep": deep}]).diagnostics
    assert "tools" in problem.message


def test_render_refuses_an_oversized_or_unencodable_template() -> None:
    [problem] = render("x" * (limits.MAX_CHAT_TEMPLATE_CHARS + 1), MESSAGES).diagnostics
    assert problem.source == "chat_template" and "Too long" in problem.message
    [problem] = render("ok\n{{ '\ud800' }}", MESSAGES).diagnostics
    assert problem.source == "chat_template" and problem.line == 2


def test_an_error_while_compiling_is_the_templates_at_its_line() -> None:
    """`{{ (10**5000)|string }}` fails while Jinja compiles (constant folding): no template frame,
    but the template is to blame, not the case (item 11)."""
    [problem] = render("fine\n{{ (10**5000)|string|length }}", MESSAGES).diagnostics
    assert problem.source == "chat_template" and problem.line == 2


def test_a_type_error_from_the_input_still_blames_the_case() -> None:
    result = render(CHATML, [{"role": "user", "content": "hi"}], template_kwargs={"messages": 1})
    assert result.diagnostics[0].source == "case"


@pytest.mark.parametrize(
    "data, expected",
    [
        ({"messages": [], "template_kwargs": 5}, "'template_kwargs' must be an object, got int"),
        ({"messages": {"role": "user"}}, "'messages' must be a list of messages"),
        ({"messages": [], "tools": {"a": 1}}, "'tools' must be a list of tools"),
        ({"messages": [], "add_generation_prompt": "yes"}, "'add_generation_prompt' must be true or false"),
    ],
)
def test_a_case_of_the_wrong_shape_is_a_message(data: dict, expected: str) -> None:
    with pytest.raises(ValueError, match=expected):
        Case.from_dict(data, name="c")


def test_render_case_passes_a_wrong_kwargs_type_on_for_render_to_report() -> None:
    case = Case("c", MESSAGES)
    case.template_kwargs = 5  # type: ignore[assignment] - as a hand-built case could have it
    [problem] = render_case(CHATML, case).diagnostics
    assert "template kwargs must be an object" in problem.message


def test_response_templates_deep_long_or_broken_are_diagnostics() -> None:
    deep = '{"version": 1, "start_anchor": "x", "fields": {"c": {"transform": ' + nested(1000) + "}}}"
    [problem] = load_response_spec(deep).diagnostics
    assert "Nested too deeply" in problem.message and problem.line == 1
    [problem] = load_response_spec(" " * (limits.MAX_RESPONSE_TEMPLATE_CHARS + 1)).diagnostics
    assert "Too long" in problem.message
    [problem] = load_response_spec('{"version": 1, "start_anchor": "\\ud800", "fields": {"c": {}}}').diagnostics
    assert "Lone surrogate" in problem.message and problem.column == 33
