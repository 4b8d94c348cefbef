"""Round-trip checks (message side and output side) on a small ChatML-style pair written for these
tests, and on deliberately broken variants of it (tests/fixtures/checks/broken/)."""

from __future__ import annotations

import json
from pathlib import Path

from engine.cases import Case, Recording
from engine.checks import run_checks
from engine.text import show_difference, visible
from engine.checks.round_trip import _longest_suffix_in, compare_messages, cut_at_stop, normalise_message
from engine.checks.round_trip_output import diff_hunks
from engine.checks.results import Location
from engine.workspace import Workspace

FIXTURES = Path(__file__).parent / "fixtures" / "checks"
GOOD_CHAT = (FIXTURES / "chatml" / "chat_template.jinja").read_text()
GOOD_RESPONSE = (FIXTURES / "chatml" / "response_template.json").read_text()
CASES = [Case.from_dict(c) for c in json.loads((FIXTURES / "chatml" / "cases.json").read_text())["cases"]]
RECORDINGS = [Recording.from_dict(r) for r in json.loads((FIXTURES / "chatml" / "recordings.json").read_text())["recordings"]]
STOP = ["<|im_end|>"]


def check(chat: str = GOOD_CHAT, response: str = GOOD_RESPONSE, **options):
    options = {"stop_tokens": STOP, "random_splits": 20, **options}
    options.setdefault("families", ["round_trip"])
    cases = options.pop("cases", CASES)
    recordings = options.pop("recordings", RECORDINGS)
    return run_checks(chat, response, cases, recordings, **options)


def broken(name: str) -> str:
    return (FIXTURES / "broken" / name).read_text()


def results(report, name: str, subject: str | None = None):
    return [r for r in report.checks if r.name == name and (subject is None or r.subject == subject)]


def line_of(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


def test_the_good_pair_passes_every_check() -> None:
    report = check(families=["round_trip", "streaming", "chat_lints", "response_lints"])
    assert report.diagnostics == []
    assert [r for r in report.checks if r.status != "pass"] == []
    names = {r.name for r in report.checks}
    assert {"round_trip.message", "round_trip.output", "recording.expected", "streaming"} <= names
    assert {n for n in names if n.startswith(("chat_lint.", "response_lint."))} == {
        "chat_lint.python_method", "chat_lint.python_literal", "chat_lint.print_without_tojson",
        "chat_lint.whitespace_leak", "chat_lint.unread_field", "chat_lint.unwritten_field", "chat_lint.history_calls",
        "response_lint.regex_portability", "response_lint.reasoning_field_name", "response_lint.no_implicit_field",
        "response_lint.start_anchor", "response_lint.unused_group", "response_lint.required_field",
        "response_lint.overlapping_literals", "response_lint.optional_placeholder", "response_lint.untyped_values",
    }  # fmt: skip
    [weather] = results(report, "round_trip.message", "case 'weather'")
    assert "message 2: round-trips (content, reasoning_content, tool_calls)" in weather.details  # counted from 1
    assert report.status == "pass" and json.loads(json.dumps(report.to_dict()))["checks"]


def test_message_side_fails_when_the_parser_misses_a_region() -> None:
    response = broken("wrong_reasoning_tags.json")
    report = check(response=response)
    [weather] = results(report, "round_trip.message", "case 'weather'")
    assert weather.status == "fail"
    assert "`reasoning_content` differs" in weather.details and "parsed:   (missing)" in weather.details
    assert "`content` differs" in weather.details and "<think>" in weather.details
    # Points at the field that came back wrong, in the response template editor.
    assert weather.location.source == "response_template"
    assert weather.location.line == line_of(response, '"content": {')


def test_message_side_reports_a_field_the_chat_template_never_renders_as_such() -> None:
    report = check(chat=broken("drops_tool_calls.jinja"))
    [weather] = results(report, "round_trip.message", "case 'weather'")
    assert weather.status == "warn"
    assert "`tool_calls` is not rendered back as written (the chat template never renders `tool_calls`)" in weather.details
    assert "differs" not in weather.details and weather.location.source == "chat_template"


def test_a_documented_difference_passes_and_says_so() -> None:
    why = "This template shows tool calls to nobody."
    report = check(chat=broken("drops_tool_calls.jinja"), round_trip_differences={"tool_calls": why})
    [weather] = results(report, "round_trip.message", "case 'weather'")
    assert weather.status == "pass" and f"documented: {why}" in weather.details
    [output] = results(report, "round_trip.output", "recording 'think-then-call'")
    assert output.status == "pass" and "documented" in output.details


def test_a_renamed_field_the_template_renders_the_same_passes() -> None:
    # The template reads the plan from `plan`, falling back to reasoning_content: a parsed message
    # (reasoning_content) renders exactly like the original (plan).
    chat = GOOD_CHAT.replace(
        "{%- if message.reasoning_content %}\n            {{- '<think>\\n' + message.reasoning_content + '\\n</think>\\n' }}",
        "{%- set plan = message.plan if message.plan is defined else message.reasoning_content %}\n"
        "        {%- if plan %}\n            {{- '<think>\\n' + plan + '\\n</think>\\n' }}",
    )
    assert chat != GOOD_CHAT
    weather = json.loads(json.dumps(CASES[1].to_dict()))
    weather["messages"][1]["plan"] = weather["messages"][1].pop("reasoning_content")
    report = check(chat=chat, cases=[Case.from_dict(weather)], recordings=[])
    [result] = results(report, "round_trip.message")
    assert result.status == "pass"
    assert "`plan` comes back as `reasoning_content`" in result.details and "renders the parsed message exactly" in result.details


def test_output_side_fails_on_text_the_template_writes_differently() -> None:
    report = check(chat=broken("reorders_tool_call.jinja"))
    [message] = results(report, "round_trip.message", "case 'weather'")
    assert message.status == "pass"  # the message is the same; only the text differs
    [output] = results(report, "round_trip.output", "recording 'think-then-call'")
    assert output.status == "fail"
    assert "first at output line 5, column 3" in output.details
    assert 'prompt + output: …' in output.details and '{"▕name":·"get_weather"' in output.details
    assert '{"▕arguments":·{"city":·"Rome"' in output.details
    assert output.location.source == "response_template"
    assert output.location.line == line_of(GOOD_RESPONSE, '"tool_calls": {')


def test_output_side_whitespace_only_differences_are_a_warning() -> None:
    report = check(chat=broken("whitespace_leak.jinja"))
    [output] = results(report, "round_trip.output", "recording 'plain-answer'")
    assert output.status == "warn" and "differs only in whitespace" in output.details
    assert "prompt line" in output.details and "⏎" in output.details


def test_output_side_reports_earlier_turns_rewritten_by_the_template() -> None:
    report = check(chat=broken("drops_earlier_reasoning.jinja"))
    [output] = results(report, "round_trip.output", "recording 'answer-after-result'")
    assert output.status == "warn"
    assert "renders an earlier turn's `reasoning_content` differently once a later assistant turn follows" in output.details
    # The message side finds each turn even though the history before it changes.
    [weather] = results(report, "round_trip.message", "case 'weather'")
    assert weather.status == "pass" and "message 4: round-trips (content)" in weather.details
    documented = check(chat=broken("drops_earlier_reasoning.jinja"), round_trip_differences={"reasoning_content": "history drops it"})
    [output] = results(documented, "round_trip.output", "recording 'answer-after-result'")
    assert output.status == "pass" and "documented: history drops it" in output.details


def test_output_side_explains_the_end_of_the_turn_and_cut_off_outputs() -> None:
    greeting = CASES[0]
    runs = [
        (greeting, "Hello there!"),  # decoded without its stop token
        (greeting, "Hello there!<|im_end|>"),
        (greeting, "<think>\nThe user greets me. I should"),  # cut off at max tokens
    ]
    report = check(recordings=[], runs=runs)
    outputs = results(report, "round_trip.output")
    assert [r.status for r in outputs] == ["pass", "pass", "pass"], [r.details for r in outputs]
    assert "'<|im_end|>⏎' in the template" in outputs[0].details
    assert "writes '⏎', which the model does not generate" in outputs[1].details
    assert "cut off" in outputs[2].details and "</think>" in outputs[2].details


def test_tool_arguments_typed_by_the_schema_pass_with_a_note() -> None:
    weather = CASES[2]
    output = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome", "days": "2"}}\n</tool_call><|im_end|>'
    report = check(recordings=[], runs=[(weather, output)])
    [result] = results(report, "round_trip.output")
    assert result.status == "pass" and "typed by the tool's schema" in result.details
    # Without tools to type it, the same output round-trips as is.
    untyped = Case(weather.name, weather.messages, None)
    [plain] = results(check(recordings=[], runs=[(untyped, output)], cases=[untyped]), "round_trip.output")
    assert plain.status == "pass" and "typed" not in plain.details


def test_a_recording_that_parses_to_another_message_fails() -> None:
    wrong = Recording("wrong", "greeting", "Hi!<|im_end|>", {"role": "assistant", "content": "Hello!"})
    report = check(recordings=[wrong])
    [result] = results(report, "recording.expected")
    assert result.status == "fail" and '`content`: expected "Hello!", parsed "Hi!"' in result.details


def test_inputs_that_cannot_be_read_become_diagnostics() -> None:
    report = check(response='{"fields": {"content": {}},}')
    assert report.status == "fail" and report.diagnostics[0].source == "response_template"
    assert report.diagnostics[0].line == 1 and [r.details for r in report.checks] == ["Not run: the response template has errors (see diagnostics)."]
    report = check(chat="{% for m in messages %}{{ m.content }}\n{% endfo %}")
    assert report.diagnostics[0].source == "chat_template" and report.diagnostics[0].line == 2
    report = check(recordings=[Recording("lost", "no such case", "Hi")])
    assert [d.message for d in report.diagnostics] == ["Recording 'lost' names case 'no such case', which is not among the cases."]


def test_without_cases_the_built_in_ones_fit_the_template() -> None:
    report = run_checks(GOOD_CHAT, GOOD_RESPONSE, stop_tokens=STOP, families=["round_trip"])
    subjects = {r.subject for r in results(report, "round_trip.message")}
    assert subjects == {"case 'conversation'", "case 'tool call'"}  # the template reads tools
    assert all(r.status == "pass" and "built-in cases" in r.details for r in report.checks)
    no_tools = run_checks("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
                          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}", GOOD_RESPONSE, families=["round_trip"])
    assert {r.subject for r in results(no_tools, "round_trip.message")} == {"case 'conversation'"}


# ----- the pieces --------------------------------------------------------------------------------


def test_cut_at_stop_keeps_the_stop_token_and_drops_what_follows() -> None:
    assert cut_at_stop("Hi<|im_end|>\n", ["<|im_end|>"]) == ("Hi<|im_end|>", "(the template's '⏎' after the stop token '<|im_end|>' is not model output)")
    assert cut_at_stop("Hi<|im_end|>", ["<|im_end|>"]) == ("Hi<|im_end|>", "")
    assert cut_at_stop("Hi\n\n", []) == ("Hi", "")
    assert cut_at_stop("a<|call|>b<|return|>", ["<|return|>", "<|call|>"])[0] == "a<|call|>"


def test_normalise_message_removes_only_differences_that_are_not_differences() -> None:
    original = {"role": "assistant", "thinking": " why ", "content": [{"type": "text", "text": "Hi"}], "name": None,
                "tool_calls": [{"id": "7", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}}]}
    assert normalise_message(original) == {"reasoning_content": "why", "content": "Hi", "tool_calls": [{"name": "f", "arguments": {"x": 1}}]}
    assert compare_messages(original, {"content": "Hi", "reasoning_content": "why"}) == [("tool_calls", [{"name": "f", "arguments": {"x": 1}}], None)]
    assert compare_messages({"content": "a"}, {"content": "b"}) == [("content", "a", "b")]


def test_longest_suffix_in() -> None:
    assert _longest_suffix_in("xxHELLO", "say HELLO there") == 5
    assert _longest_suffix_in("abc", "zzz") == 0


def test_diff_hunks_locate_differences_by_token() -> None:
    a = "one two <tag> three\nfour"
    b = "one two <tag> 3\nfour"
    [hunk] = diff_hunks(a, b)
    assert (a[hunk.a0 : hunk.a1], b[hunk.b0 : hunk.b1]) == ("three", "3")
    assert diff_hunks(a, a) == []


def test_show_difference_marks_the_spot_with_visible_whitespace() -> None:
    assert visible("a b\tc\n") == "a·b→c⏎"
    shown = show_difference("same\nA", "same\nB", 5, ("left", "right"))
    assert shown.splitlines() == ["   left: same⏎▕A", "  right: same⏎▕B"]


# --- issue 35: every failure names the template and line that caused it ---------------------------
OWN_MODEL = Path(__file__).parent / "fixtures" / "own_model"


def own_model_workspace() -> Workspace:
    """The Mistral-style model of tests/fixtures/own_model with its drafted response template."""
    from engine.draft import draft_response_template

    template = (OWN_MODEL / "chat_template.jinja").read_text(encoding="utf-8")
    tokens = {"bos_token": "<s>", "eos_token": "</s>"}
    draft = draft_response_template(template, tokens, checks=False)
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}}}}]
    case = Case("tools offered", [{"role": "user", "content": "Weather in Paris?"}], tools=tools)
    return Workspace(chat_template=template, response_template=draft.text, special_tokens=tokens, stop_tokens=["</s>"],
                     cases=[case], case_name=case.name)


CALL = '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "a1B2c3D4e"}]'


def test_content_the_chat_template_drops_before_a_call_is_the_chat_template_s_line():
    """It pointed at the response template's `content` field, which parsed the text right."""
    workspace = own_model_workspace()
    report = workspace.run_checks(runs=[(workspace.cases[0], "Let me check." + CALL + "</s>")], families=["round_trip"])
    [failure] = [c for c in report.checks if c.status == "fail"]
    lines = workspace.chat_template.splitlines()
    assert failure.location.source == "chat_template" and "'[TOOL_CALLS]['" in lines[failure.location.line - 1]
    assert f"chat template line {failure.location.line}, which writes '[TOOL_CALLS]['" in failure.details
    assert "leaves out `content`" in failure.details and "'Let·me·check.' into `content`" in failure.details


def test_an_output_that_does_not_parse_says_where_in_the_output_and_which_template_line():
    workspace = own_model_workspace()
    # Text after the list is content (the call closes where "}]" ends it and text follows); a comma cannot end it.
    output = CALL + ", and more</s>"
    report = workspace.run_checks(runs=[(workspace.cases[0], output)], families=["round_trip"])
    [failure] = [c for c in report.checks if c.status == "fail"]
    line = next(i for i, text in enumerate(workspace.response_template.splitlines(), 1) if '"content": "json"' in text)
    assert failure.location == Location("response_template", line, failure.location.column)
    at = output.index(", and more") + 1  # 1-based: the first character after the JSON
    assert f"response template line {line}) could not parse its region as JSON: Extra data at output line 1, column {at}" in failure.details
    assert "Hint: The JSON value ends before ',·and·more'" in failure.details
