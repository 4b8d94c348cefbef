"""Chat template and response template lints: each catches its deliberately broken fixture at the
right line and column, and stays quiet on the sound pair and on look-alikes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.cases import Case, Recording
from engine.checks import run_checks
from engine.regex_portability import scan, string_offsets
from engine.checks.template_fields import analyse_fields
from engine.diagnostics import line_col

FIXTURES = Path(__file__).parent / "fixtures" / "checks"
CHAT = (FIXTURES / "chatml" / "chat_template.jinja").read_text()
RESPONSE = (FIXTURES / "chatml" / "response_template.json").read_text()
CASES = [Case.from_dict(c) for c in json.loads((FIXTURES / "chatml" / "cases.json").read_text())["cases"]]
RECORDINGS = [Recording.from_dict(r) for r in json.loads((FIXTURES / "chatml" / "recordings.json").read_text())["recordings"]]


def lints(chat: str = CHAT, response: str = RESPONSE, cases=CASES, recordings=RECORDINGS, **options):
    report = run_checks(chat, response, cases, recordings, families=["chat_lints", "response_lints"], **options)
    assert report.diagnostics == []
    return report


def findings(report, name: str):
    return [r for r in report.checks if r.name == name and r.status != "pass"]


def where(text: str, needle: str, nth: int = 0, shift: int = 0) -> tuple[int, int]:
    """(line, column) of the nth occurrence of `needle` in `text`, plus `shift` characters."""
    index = -1
    for _ in range(nth + 1):
        index = text.index(needle, index + 1)
    return line_col(text, index + shift)


def at(result) -> tuple[int, int]:
    return result.location.line, result.location.column


def fixture(name: str) -> str:
    return (FIXTURES / "broken" / name).read_text()


def test_the_sound_pair_has_no_findings() -> None:
    report = lints()
    assert [r for r in report.checks if r.status != "pass"] == []
    assert len(report.checks) == 16  # one pass per lint


# ----- chat template lints ------------------------------------------------------------------------


def test_python_methods_are_reported_only_where_an_engine_breaks_on_them() -> None:
    chat = fixture("python_method.jinja")
    # `.items()` works in every engine: no finding. `.strip('\n')` gives other text in transformers.js,
    # and the `trim('\n')` rewrite throws there, so no rewrite is offered.
    [strip] = findings(lints(chat), "chat_lint.python_method")
    assert at(strip) == where(chat, ".strip(", shift=1) and strip.status == "warn"
    assert "@huggingface/jinja (transformers.js) gives" in strip.details and "MiniJinja" not in strip.details
    assert "No rewrite is offered" in strip.details and "Unknown StringValue filter: trim" in strip.details
    quiet = CHAT.replace("{{- message.content }}", "{{- message.get('content').strip().lower() }}")
    assert quiet != CHAT and findings(lints(quiet), "chat_lint.python_method") == []


def test_a_rewrite_is_offered_only_after_it_rendered_the_same_in_every_engine() -> None:
    chat = CHAT.replace("{{- message.content }}", "{{- ', '.join([message.content]) }}")
    [join] = findings(lints(chat), "chat_lint.python_method")
    assert "transformers.js) fails (Cannot call something that is not a function" in join.details
    assert "Use the `join` filter, `[…]|join(', ')`: it gives the same text in every engine." in join.details
    # A complex target keeps the suggestion valid Jinja: the filter applies to the probe, not to text.
    chained = CHAT.replace("{{- message.content }}", "{{- (message.content | default('', true)).replace('a', 'b').strip() }}")
    assert findings(lints(chained), "chat_lint.python_method") == []


def test_python_literals_that_every_engine_understands_are_not_findings() -> None:
    chat = fixture("python_literal.jinja")
    assert "!= None" in chat and "== True" in chat
    assert findings(lints(chat), "chat_lint.python_literal") == []


def test_a_dict_printed_without_tojson() -> None:
    chat = fixture("print_without_tojson.jinja")
    [tool] = findings(lints(chat), "chat_lint.print_without_tojson")
    assert at(tool) == where(chat, "{{- tool }}") and "`tool` is a dict, printed" in tool.details


def test_lists_joined_with_tilde_or_string_and_unreached_literals_are_found_too() -> None:
    chat = (
        "{%- for message in messages %}{{ message.role ~ ': ' ~ message.content ~ '\\n' }}{% endfor %}\n"
        "{%- if tools %}{{ 'Tools: ' ~ tools }}{{ tools|string }}{% endif %}\n"
        "{%- if false %}{{ {'never': 'rendered'} }}{% endif %}"
    )
    cases = [Case("tools", [{"role": "user", "content": "Hi"}], tools=[{"type": "function", "function": {"name": "f"}}])]
    results = findings(lints(chat, cases=cases, recordings=[]), "chat_lint.print_without_tojson")
    assert [(r.location.line, r.details.split(" is a ")[0]) for r in results] == [(2, "`tools`"), (2, "`tools`"), (3, "`{…}`")]
    assert "joined with `~`" in results[0].details and "turned into text with |string" in results[1].details
    assert at(results[2]) == (3, 16)


def test_a_layout_newline_that_reaches_the_prompt() -> None:
    chat = fixture("whitespace_leak.jinja")
    [leak] = findings(lints(chat), "chat_lint.whitespace_leak")
    assert leak.status == "info"  # a matter of taste: blank lines may be the trained format
    assert at(leak) == where(chat, "{% if message.role == 'system' %}")
    assert "'⏎'" in leak.details and "reaches the prompt (cases: greeting, weather, weather-question, weather-result)" in leak.details
    assert "`{%- if`" in leak.details


def test_a_leak_no_case_reaches_is_reported_unconfirmed() -> None:
    chat = CHAT.replace("{%- if add_generation_prompt %}", "{%- if documents %}\n\n    {% for d in documents %}{{- d.text }}{%- endfor %}\n{%- endif %}\n{%- if add_generation_prompt %}")
    [leak] = findings(lints(chat), "chat_lint.whitespace_leak")
    assert "unconfirmed" in leak.details and at(leak) == where(chat, "{% for d in documents %}")


def test_fields_one_template_writes_and_the_other_never_reads() -> None:
    [unread] = findings(lints(fixture("drops_reasoning.jinja")), "chat_lint.unread_field")
    assert "writes `reasoning_content`, but the chat template never reads it" in unread.details
    assert at(unread) == where(RESPONSE, '"reasoning_content"')
    assert findings(lints(fixture("drops_reasoning.jinja"), round_trip_differences={"reasoning_content": "by design"}), "chat_lint.unread_field") == []
    response = fixture("no_tool_calls_field.json")
    [unwritten] = findings(lints(response=response), "chat_lint.unwritten_field")
    assert "writes `tool_calls` of assistant messages" in unwritten.details and at(unwritten) == where(CHAT, "message.tool_calls", shift=8)


def test_a_request_flag_the_template_only_tests_is_not_an_unwritten_field() -> None:
    # DeepSeek reads `prefix` (a request for prefix completion) but never writes it into the prompt.
    chat = CHAT.replace("{%- if message.reasoning_content %}", "{%- if message.prefix is defined and message['prefix'] %}{{- '' }}{%- endif %}\n        {%- if message.reasoning_content %}")
    assert chat != CHAT and findings(lints(chat), "chat_lint.unwritten_field") == []
    printed = CHAT.replace("{%- if message.reasoning_content %}", "{{- message.prefix or '' }}\n        {%- if message.reasoning_content %}")
    [unwritten] = findings(lints(printed), "chat_lint.unwritten_field")
    assert "writes `prefix` of assistant messages" in unwritten.details
    # A key read on a message whose role is not known to be the assistant's is no model output either.
    unknown_role = CHAT.replace("{%- if add_generation_prompt %}", "{{- messages[0].current_date or '' }}\n{%- if add_generation_prompt %}")
    assert unknown_role != CHAT and findings(lints(unknown_role), "chat_lint.unwritten_field") == []


def test_template_fields_follow_messages_through_macros_aliases_and_role_branches() -> None:
    fields = analyse_fields(
        "{% macro show(m) %}{{ m.content }}{% endmacro %}"
        "{% set history = messages[1:] %}"
        "{% for message in history %}{% set role = message['role'] %}{{ show(message) }}"
        "{% if role == 'tool' %}{{ message.tool_call_id }}{% elif message.role != 'user' %}{{ message.get('thinking') }}{% endif %}"
        "{% if message.role in ['user', 'system'] %}{{ message.name }}{% endif %}{% endfor %}"
        "{{ messages[0].images }}"
    )
    assert set(fields.message_reads) == {"content", "role", "tool_call_id", "thinking", "name", "images"}
    assert set(fields.assistant_reads()) == {"content", "role", "thinking", "images"}
    assert fields.reads("reasoning_content")  # `thinking` is an alias transformers fills in
    assert not fields.reads("tool_calls") and fields.whole is None
    assert analyse_fields("{% for m in messages %}{{ m|tojson }}{% endfor %}").reads("anything")


# ----- response template lints --------------------------------------------------------------------


def test_regex_constructs_outside_the_portable_subset() -> None:
    response = fixture("regex_portability.json")
    results = findings(lints(response=response), "response_lint.regex_portability")
    constructs = [r.details.split(": ")[1].split(" only works")[0] for r in results]
    assert constructs == [
        "lookbehind `(?<=…)`", "atomic group `(?>…)`", "named group `(?<name>…)`", "lookahead `(?=…)`", "possessive quantifier `*+`",
    ]  # fmt: skip
    assert [at(r) for r in results] == [
        where(response, "(?<="), where(response, "(?>"), where(response, "(?<tag>"), where(response, "(?=\\\\n?)"), where(response, "*+"),
    ]  # fmt: skip


@pytest.mark.parametrize(
    "pattern, found",
    [
        (r"<tool_call>(?P<name>\w+)</tool_call>", []),
        (r"\(?=x", []),  # an escaped paren, then an optional "(": no lookahead
        (r"[(?=]x", []),  # a character class
        (r"[]a(?=]x", []),  # "]" first in a class is literal
        (r"\\(?=x)", ["lookahead `(?=…)`"]),  # an escaped backslash, then a real lookahead
        (r"(?:a|b)+?c{2,3}", []),
        (r"(a)\1", ["backreference `\\1`"]),
        (r"(?P<n>a)(?P=n)", ["named backreference `(?P=…)`"]),
        (r"a++b{1,2}+", ["possessive quantifier `++`", "possessive quantifier `{1,2}+`"]),
        (r"(?R)|(?1)|(?&x)", ["recursion `(?R)`", "subroutine call `(?1)`", "subroutine call `(?&…)`"]),
        (r"(?i)tool|(?'n'x)", ["inline flags `(?i)`", "named group `(?'name'…)`"]),
        (r"\p{L}{2}x{e<=1}\K", ["fuzzy matching `{e<=…}`", "`\\K` (keep out)"]),
    ],
)
def test_the_regex_scanner(pattern: str, found: list[str]) -> None:
    assert [f.construct for f in scan(pattern)] == found


def test_pattern_positions_map_through_json_escapes() -> None:
    text = '{"p": "\\\\d\\u00e9(?=x)"}'
    start = text.index('"\\\\')
    pattern = json.loads(text)["p"]
    [finding] = scan(pattern)
    assert text[string_offsets(text, start)[finding.index] :].startswith("(?=")


def test_a_reasoning_field_under_another_name() -> None:
    response = fixture("reasoning_named_thinking.json")
    [result] = findings(lints(response=response), "response_lint.reasoning_field_name")
    assert "`thinking`" in result.details and at(result) == where(response, '"thinking"')
    renamed = json.loads(RESPONSE)
    renamed["fields"]["scratchpad"] = {"open": "<reason>", "close": "</reason>"}
    [by_delimiter] = findings(lints(response=json.dumps(renamed)), "response_lint.reasoning_field_name")
    assert "opens with '<reason>'" in by_delimiter.details


def test_no_implicit_field_drops_text_outside_regions() -> None:
    [result] = findings(lints(response=fixture("no_implicit_field.json")), "response_lint.no_implicit_field")
    # Everything, end-of-turn token included: no region claims it.
    assert "recording 'plain-answer' loses 42 characters" in result.details


def test_a_start_anchor_the_prompt_never_contains() -> None:
    response = fixture("wrong_start_anchor.json")
    results = findings(lints(response=response), "response_lint.start_anchor")
    assert [r.subject for r in results] == [f"case {c.name!r}" for c in CASES]
    assert all(r.status == "fail" and at(r) == where(response, '"start_anchor"') for r in results)


def test_named_groups_no_transform_uses() -> None:
    response = fixture("unused_group.json")
    [result] = findings(lints(response=response), "response_lint.unused_group")
    assert "captures `id`" in result.details and at(result) == where(response, '"open_pattern"')


def test_required_fields_the_recordings_lack() -> None:
    response = fixture("required_reasoning.json")
    [some] = findings(lints(response=response), "response_lint.required_field")
    assert some.status == "warn" and "recording 'plain-answer'" in some.details
    assert at(some) == where(response, '"optional"')
    only_plain = [r for r in RECORDINGS if r.name == "plain-answer"]
    [every] = findings(lints(response=response, recordings=only_plain), "response_lint.required_field")
    assert every.status == "fail" and "no recording has it" in every.details
