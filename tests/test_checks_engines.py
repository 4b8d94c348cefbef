"""The checks grounded in real engines: the engines matrix, built-in conversations fitted to what a
template requires, intended differences, and the real problems that must still be caught. Each
template here is a small ChatML one written for the test, with one construct of a real template."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.checks import run_checks
from engine.cli import main

CHATML = Path(__file__).parent / "fixtures" / "checks" / "chatml"
CHAT = (CHATML / "chat_template.jinja").read_text()
RESPONSE = (CHATML / "response_template.json").read_text()
CALL = "{{- '<tool_call>\\n' }}"


def check(chat: str, **options):
    return run_checks(chat, RESPONSE, random_splits=5, **options)


def not_passed(report) -> list[tuple[str, str, str | None]]:
    """Results that did not pass, the token checks aside (they need a tokenizer, tests/test_tokens_checks.py) and the
    robustness check's notes (a variation no format claims: tests/test_robustness.py)."""
    return [(r.status, r.name, r.subject) for r in report.checks if r.status != "pass" and not r.name.startswith("tokens")
            and not (r.status == "info" and r.name.startswith("robustness"))]  # fmt: skip


def variant(old: str, new: str) -> str:
    assert old in CHAT
    return CHAT.replace(old, new)


def test_the_matrix_renders_every_case_in_every_engine() -> None:
    report = check(CHAT)
    assert report.status == "pass" and not_passed(report) == []
    assert set(report.engines) == {"minijinja-tgi", "minijinja-mistral.rs", "transformers.js"}
    assert all(set(row) == {"conversation", "tool call"} for row in report.engines.values())
    assert all(cell["status"] == "identical" for row in report.engines.values() for cell in row.values())


def test_a_difference_is_shown_at_its_line_and_column_with_both_texts() -> None:
    # A newline after a block tag: transformers (trim_blocks) drops it, TGI's MiniJinja keeps it.
    chat = variant("{%- if add_generation_prompt %}", "{%- if add_generation_prompt %}\n{% if true %}\n{% endif %}")
    report = check(chat)
    cell = report.engines["minijinja-tgi"]["conversation"]
    expected, got = cell["expected"], cell["got"]
    generation_prompt = "<|im_start|>assistant\n"
    assert cell["status"] == "differs" and got == expected.removesuffix(generation_prompt) + "\n\n" + generation_prompt
    line = expected.count("\n")  # the generation prompt's line
    assert cell["details"].startswith(f"differs at line {line}, column 1:") and (cell["line"], cell["column"]) == (line, 1)
    assert "transformers: …" in cell["details"] and "⏎" in cell["details"]
    assert report.engines["minijinja-mistral.rs"]["conversation"]["status"] == "identical"
    [tgi] = [r for r in report.checks if r.name == "engines.minijinja-tgi"]
    assert tgi.status == "warn" and "2 of 2 cases" in tgi.details


def test_an_engine_error_is_the_engines_own_message() -> None:
    chat = variant("{{- tool | tojson }}", "{{- tool | string }}")
    cell = check(chat).engines["transformers.js"]["tool call"]
    assert cell == {"status": "error", "details": "Unknown ObjectValue filter: string"}


def test_a_result_marked_intended_is_reported_as_such_and_does_not_fail() -> None:
    chat = variant("{{- tool | tojson }}", "{{- tool | string }}")
    report = check(chat, round_trip_differences={"engines.transformers.js": "we do not serve with transformers.js"})
    [js] = [r for r in report.checks if r.name == "engines.transformers.js"]
    assert js.status == "info" and js.intended == "we do not serve with transformers.js"
    assert js.details.startswith("Intended: we do not serve with transformers.js")


@pytest.mark.parametrize(
    "chat, case, requirement",
    [
        (variant(CALL, "{%- if call.id is not defined or call.id|length != 9 %}{{ raise_exception('Tool call ids must be 9 alphanumerics') }}{%- endif %}" + CALL),
         "tool call", "requires tool-call ids of 9 alphanumerics"),
        ("{%- if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}{%- endif %}" + CHAT,
         "conversation", "refuses a system message"),
        (variant("{%- if tools %}", "{%- if tools|length > 0 %}"), "conversation", "needs tools to be offered"),
        (variant(CALL, "{%- if call.function.arguments is not string %}{{ raise_exception('arguments must be a string') }}{%- endif %}" + CALL),
         "tool call", "requires tool-call arguments as a JSON string"),
    ],
    ids=["9-character ids", "no system role", "tools required", "string arguments"],
)
def test_built_in_conversations_are_fitted_to_what_the_template_requires(chat: str, case: str, requirement: str) -> None:
    report = check(chat, families=["round_trip", "engines"])
    [note] = [r for r in report.checks if r.name == "template.requires"]
    assert note.status == "info" and requirement in note.details and note.subject == f"case {case!r}"
    assert "it first failed with: The template raised" in note.details or "TypeError" in note.details
    # Fitted, the pair has no problem (a parsed tool call gets an id, as a server gives it one; the
    # rendered arguments are a JSON string, so they parse back as one).
    assert [r for r in report.checks if r.status == "fail"] == []


@pytest.mark.parametrize(
    "broken, status, says",
    [
        # jinja2 defers an unknown filter inside a branch to run time: every conversation fails on it.
        ("{{- message.content | badfilter }}", "fail", "No built-in conversation renders, not even a plain exchange: "
         "TemplateRuntimeError: No filter named 'badfilter' found."),
        # A name nobody passes (FireFunction reads its `functions` kwarg): what to give, at its place.
        ("{{- message.content + functions }}", "warn", "the chat template reads `functions`, which is not passed"),
        # A special token nobody passed (a bare chat template of Llama 3's style): the tokenizer brings it.
        ("{{- bos_token + message.content }}", "warn", "`bos_token` is a special token: it comes with the model's tokenizer"),
        ("{{- raise_exception('only my own conversations') }}", "warn", "No built-in conversation fits this chat template"),
    ],
    ids=["unknown filter", "a kwarg nobody passes", "a special token nobody passes", "refuses everything"],
)
def test_a_template_no_built_in_conversation_fits_is_never_silently_passed(broken: str, status: str, says: str) -> None:
    chat = variant("{{- message.content }}", broken)
    assert chat != CHAT
    report = check(chat, families=["round_trip"])
    [verdict] = [r for r in report.checks if r.status == status]
    assert says in verdict.details and report.status == status
    assert not any("(built-in case :" in r.details for r in report.checks)  # no empty list of the cases used
    if status != "warn" or "+" in broken:
        line = next(i for i, row in enumerate(chat.splitlines(), 1) if broken in row)
        assert verdict.location is not None and verdict.location.line == line


def test_a_conversation_the_author_gave_that_does_not_render_is_a_failure() -> None:
    chat = "{%- if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}{%- endif %}" + CHAT
    from engine.cases import Case

    cases = [Case("mine", [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}])]
    report = check(chat, cases=cases)
    assert report.status == "fail" and ("fail", "round_trip.message", "case 'mine'") in not_passed(report)
    assert not [r for r in report.checks if r.name == "template.requires"]


def test_a_template_that_crashes_on_a_parsed_tool_call_without_content_is_still_caught() -> None:
    # Devstral, Granite, Phi-3.5 and DeepSeek-R1 read `content` on every assistant message: the built-in
    # case is adapted (content ""), but the parsed tool-call message has none, and rendering it fails.
    chat = variant("{%- if message.content %}\n            {{- message.content }}\n        {%- endif %}", "{{- message.content + '' }}")
    report = check(chat)
    assert ("info", "template.requires", "case 'tool call'") in not_passed(report)
    [failure] = [r for r in report.checks if r.status == "fail"]
    assert failure.name == "round_trip.output" and "has no attribute 'content'" in failure.details


def test_a_template_that_never_renders_tool_calls_is_still_caught() -> None:
    # Granite 3.3: assistant tool calls never reach the prompt.
    chat = variant("{%- for call in message.tool_calls or [] %}", "{%- if message.tool_calls %}{% endif %}{%- for call in [] %}")
    report = check(chat)
    assert any(r.name == "round_trip.message" and r.status in ("warn", "fail") and "`tool_calls`" in r.details for r in report.checks)


def test_check_json_prints_the_matrix_and_differences_from_a_file(capsys, tmp_path: Path) -> None:
    chat = tmp_path / "chat_template.jinja"
    chat.write_text(variant("{{- tool | tojson }}", "{{- tool | string }}"))
    args = ["check", "--chat-template", str(chat), "--response-template", str(CHATML / "response_template.json"), "--random-splits", "0", "--json"]
    assert main(args + ["--strict"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["engines"]["transformers.js"]["tool call"]["status"] == "error"
    assert data["engines"]["minijinja-tgi"]["conversation"] == {"status": "identical", "details": data["engines"]["minijinja-tgi"]["conversation"]["details"]}
    differences = tmp_path / "differences.json"
    differences.write_text(json.dumps({"engines.transformers.js": "not served with transformers.js",
                                       "chat_lint.print_without_tojson": "the Python repr is the trained format"}))
    assert main(args + ["--strict", "--differences", str(differences)]) == 0
    intended = [c for c in json.loads(capsys.readouterr().out)["checks"] if c["intended"]]
    assert {c["name"] for c in intended} == {"engines.transformers.js", "chat_lint.print_without_tojson"}
    differences.write_text("[1]")
    assert main(args + ["--differences", str(differences)]) == 2


def test_a_field_the_template_drops_in_a_turn_is_not_a_parser_bug() -> None:
    # Kimi K2 Thinking keeps reasoning only on tool-calling turns; an answer gets an empty <think></think>.
    chat = variant("{%- if message.reasoning_content %}", "{%- if message.reasoning_content and message.tool_calls %}")
    report = check(chat, families=["round_trip"])
    [conversation] = [r for r in report.checks if r.name == "round_trip.message" and r.subject == "case 'conversation'"]
    assert conversation.status == "warn"
    assert "the chat template does not render `reasoning_content` in this turn: the prompt is the same without it" in conversation.details


def test_a_looping_template_ends_with_a_message_in_the_cli(capsys, tmp_path: Path) -> None:
    chat = tmp_path / "loop.jinja"
    chat.write_text("{% for i in range(100000) %}{% for j in range(100000) %}{{ messages[0].content }}{% endfor %}{% endfor %}")
    code = main(["check", "--chat-template", str(chat), "--response-template", str(CHATML / "response_template.json"),
                 "--random-splits", "0", "--timeout", "3"])
    assert code == 1 and "The checks stopped: they took longer than 3 s" in capsys.readouterr().err
