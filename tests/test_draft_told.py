"""The draft starts from what the model is told: the tool instructions and the generation prompt,
matched against the format library (engine.reading.told, library, match), and the check that reports
a history which writes calls unlike the instructions (chat_lint.history_calls). The templates are
small ones written for these tests (tests/fixtures/draft/)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

from transformers.utils.chat_parsing import parse_response

from engine.checks import run_checks
from engine.cli import main
from engine.draft import Draft, draft_response_template
from engine.reading.text import literal_runs
from engine.reading.told import call_example
from engine.formats import load_format
from engine.render import render

FIXTURES = Path(__file__).parent / "fixtures" / "draft"
CHATML = {"eos_token": "<|im_end|>"}
WEATHER = [{"type": "function", "function": {"name": "get_weather", "description": "Weather in a city.", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}}]  # fmt: skip


@cache
def drafted(name: str, special: str = json.dumps(CHATML)) -> Draft:
    return draft_response_template((FIXTURES / f"{name}.jinja").read_text(), json.loads(special))


def prompt_for(name: str, special: dict = CHATML) -> str:
    result = render((FIXTURES / f"{name}.jinja").read_text(), [{"role": "user", "content": "Weather in Paris?"}], WEATHER,
                    add_generation_prompt=True, special_tokens=special)  # fmt: skip
    assert result.ok, result.diagnostics
    return result.prompt


def call(name: str, **arguments) -> dict:
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


# ----- history and instructions disagree ----------------------------------------------------------


def test_when_the_history_disagrees_with_the_instructions_the_draft_follows_the_instructions() -> None:
    draft = drafted("history_disagrees")
    assert draft.format is not None and draft.disagreement is not None
    matched = load_format(draft.format.name)
    calls = draft.response_template["fields"]["tool_calls"]
    assert calls == matched.spec()["fields"]["tool_calls"] and calls["open"][0] == "<tool_call>"
    report = draft.report("tool_calls")
    assert report.status == "verified" and "parses the instruction's example (its placeholders filled)" in report.message
    assert "0 of the 6 history probes with calls" in report.message and "a bug in the chat template" in " ".join(report.notes)
    # Both texts, side by side in the report: what the model is told, and what the history writes.
    assert draft.disagreement.told == '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
    assert draft.disagreement.history.startswith('<tool_call>\n{"name": "zq_lookup"}, "arguments": {"zq_text"')
    # What a model following its instructions writes parses; the round trip the history breaks is
    # reported as documented, not as a failure of the draft.
    output = 'Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": "2"}}\n</tool_call><|im_end|>'
    assert parse_response(output, draft.response_template, prefix=prompt_for("history_disagrees"), tools=WEATHER) == {
        "role": "assistant", "content": "Let me check.", "tool_calls": [call("get_weather", city="Paris", days=2)]}
    assert draft.checks and not [str(c) for c in draft.checks if c.status == "fail"]
    assert draft.report("content").status == "verified"
    assert json.loads(json.dumps(draft.to_dict()))["report"]["disagreement"]["format"] == draft.format.name


def test_the_check_reports_the_disagreement_with_both_texts_at_the_line_that_writes_the_history_call() -> None:
    source = (FIXTURES / "history_disagrees.jinja").read_text()
    report = run_checks(source, load_format("hermes").response_template_text, special_tokens=CHATML, families=("chat_lints",))
    [found] = [c for c in report.checks if c.name == "chat_lint.history_calls"]
    assert found.status == "fail" and found.location.source == "chat_template"
    assert source.splitlines()[found.location.line - 1].endswith("<tool_call>")  # where the history's call starts
    assert "What the model is told to write" in found.details and "What the history writes (a call (tools offered))" in found.details
    told, history = zip(*(line.split(" │ ") for line in found.details.split("\n\n", 1)[1].splitlines()))
    assert "".join(told).replace(" ", "").startswith("Whatthemodelistoldtowrite" + "-" * 31 + '<tool_call>{"name":<function-name>')
    assert '{"name": "zq_lookup"}, "arguments":' in "\n".join(history)


def test_the_check_passes_when_the_history_writes_what_the_model_is_told() -> None:
    source = (FIXTURES / "history_disagrees.jinja").read_text().replace(
        '{"name": "{{ call.function.name }}"}, "arguments": {{ call.function.arguments | tojson }}',
        '{"name": "{{ call.function.name }}", "arguments": {{ call.function.arguments | tojson }}}')
    report = run_checks(source, load_format("hermes").response_template_text, special_tokens=CHATML, families=("chat_lints",))
    [found] = [c for c in report.checks if c.name == "chat_lint.history_calls"]
    assert found.status == "pass"
    draft = draft_response_template(source, CHATML, checks=False)
    assert draft.disagreement is None and draft.report("tool_calls").status == "verified"
    assert "history probes with calls" in draft.report("tool_calls").message  # the library format, agreeing with the history


def test_the_command_line_check_lists_the_disagreement(capsys) -> None:
    code = main(["check", "--chat-template", str(FIXTURES / "history_disagrees.jinja"), "--response-template",
                 str(Path("formats/hermes/response_template.json").resolve()), "--special-tokens", json.dumps(CHATML),
                 "--random-splits", "5"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 1 and "FAIL  chat_lint.history_calls at chat_template:15" in out


# ----- what the model is told ---------------------------------------------------------------------


def test_the_instruction_example_is_found_and_parsed_with_its_placeholders_filled() -> None:
    hermes = load_format("hermes").spec()
    told = ("You are provided with function signatures within <tools></tools> XML tags.\nFor each function call, return a json "
            "object within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": "
            "<args-json-object>}\n</tool_call>\n")  # fmt: skip
    example = call_example(told, hermes["fields"]["tool_calls"], hermes)
    assert example is not None and example.text.startswith("<tool_call>\n{") and example.calls == ("example_name",) and example.pattern
    concrete = call_example('Call tools like <tool_call>{"name": "nazwa", "arguments": {"a": 1}}</tool_call>.', hermes["fields"]["tool_calls"], hermes)
    assert concrete is not None and concrete.calls == ("nazwa",) and not concrete.pattern
    prose = call_example("Wrap each call in <tool_call></tool_call> tags.", hermes["fields"]["tool_calls"], hermes)
    assert prose is None  # a mention with nothing between the tags is not an example


def test_literal_runs_of_a_delimiter_pattern() -> None:
    assert literal_runs(r"<\|channel\|>commentary to=functions\.(?P<name>[^\s<]+)\s*(?:<\|constrain\|>json)?<\|message\|>") == [
        "<|channel|>commentary to=functions.", "<|constrain|>json", "<|message|>"]  # fmt: skip
    assert literal_runs(r"\[TOOL_CALLS\](?P<name>[^\[]+)\[ARGS\]") == ["[TOOL_CALLS]", "[ARGS]"]
    assert literal_runs(r"<tool_call>\s*<function=(?P<name>\w+)>") == ["<tool_call>", "<function=", ">"]
    assert literal_runs("ab?c") == ["a", "c"]
