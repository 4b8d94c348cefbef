"""The draft of each preset's chat template against the preset's own response template: every
recording parses to the same message, or the report names the field that differs and why. And the
`python -m engine draft` command."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
from transformers.utils.chat_parsing import parse_response

from engine.checks.round_trip import compare_messages
from engine.cli import main
from engine.draft import Draft
from engine.presets import load_preset, preset_names
from engine.workspace import Workspace

FIXTURES = Path(__file__).parent / "fixtures" / "draft"


@cache
def drafted(name: str) -> Draft:
    return Workspace.from_preset(load_preset(name)).draft_response_template()


@pytest.mark.parametrize("name", preset_names())
def test_the_draft_parses_every_recording_like_the_preset_or_the_report_says_why(name: str) -> None:
    workspace = Workspace.from_preset(load_preset(name))
    draft = drafted(name)
    reports = {r.field: r for r in draft.fields}
    left_out = {f for f, r in reports.items() if r.status == "not_inferable"}
    documented = {f for f, r in reports.items() if any(n.startswith("documented difference") for n in r.notes)}
    for recording in workspace.recordings:
        case = workspace.find_case(recording.case)
        prompt = workspace.render(case).prompt
        ours = parse_response(recording.output, draft.response_template, prefix=prompt, tools=case.tools)
        theirs = parse_response(recording.output, json.loads(workspace.response_template), prefix=prompt, tools=case.tools)
        differing = {field for field, _, _ in compare_messages(theirs, ours)}
        # A field the draft leaves out differs, and its text lands in the implicit content; a field
        # the model writes unlike the history (documented) may differ too. Nothing else may.
        spilled = {"content"} if differing & left_out else set()
        assert differing <= left_out | documented | spilled, (recording.name, differing, ours, theirs)


def test_what_each_preset_draft_can_and_cannot_infer() -> None:
    statuses = {name: {r.field: r.status for r in drafted(name).fields} for name in ("smollm3", "qwen3", "command-r7b", "blank")}
    assert statuses["qwen3"] == {"reasoning_content": "verified", "tool_calls": "verified", "content": "verified"}
    # Command R7B drops the plan from history, but its instructions tell the model to write it between
    # <|START_THINKING|> and <|END_THINKING|>: the library's command-r7b format reads it, and parses the
    # preset's recordings (tests above); the preset's documented why stays in the report.
    reasoning = drafted("command-r7b").report("reasoning_content")
    assert statuses["command-r7b"]["reasoning_content"] == "verified" and "library's `command-r7b` format" in reasoning.message
    assert "tool_plan" in " ".join(reasoning.notes)
    assert statuses["blank"]["tool_calls"] == "not_inferable"
    assert "never renders `tool_calls` in history" in drafted("blank").report("tool_calls").message
    # Qwen3's draft is the preset's own response template.
    assert drafted("qwen3").response_template == json.loads(load_preset("qwen3").response_template)


def test_smollm3_history_drops_reasoning_and_calls_but_the_instructions_and_the_library_give_both() -> None:
    draft = drafted("smollm3")
    assert {r.field: r.status for r in draft.fields} == {"reasoning_content": "verified", "tool_calls": "verified", "content": "verified"}
    # The instructions write <tool_call> and <think> (the /no_think generation prompt an empty think block):
    # a library format with both verifies, and the draft is the preset's hand-written response template.
    assert draft.format is not None and "the tool instructions" in draft.format.how[0]
    assert draft.response_template == json.loads(load_preset("smollm3").response_template)
    calls = draft.report("tool_calls")
    assert f"library's `{draft.format.name}` format" in calls.message and "parses the instruction's example" in calls.message
    assert "the chat template never writes `tool_calls` into an assistant turn" in " ".join(calls.notes)


def test_gpt_oss_content_next_to_a_call_goes_to_the_analysis_channel_and_the_report_says_so() -> None:
    report = drafted("gpt-oss").report("content")
    assert report.status == "unverified"
    assert "“content and a call” (tools offered): its text comes back in `reasoning_content`" in report.message


# ----- the command line ---------------------------------------------------------------------------


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def engine(capsys: pytest.CaptureFixture) -> Callable[..., Ran]:
    """`python -m engine draft ARGS`, in process (the first call with the default timeout drafts in
    the killable worker, as the command does)."""

    def run(*args: str) -> Ran:
        code = main(["draft", *args])
        out, err = capsys.readouterr()
        return Ran(code, out, err)

    return run


def test_cli_prints_the_draft_and_the_report(tmp_path: Path, engine: Callable[..., Ran]) -> None:
    config = tmp_path / "tokenizer_config.json"
    config.write_text(json.dumps({"bos_token": {"content": "<s>", "special": True}, "eos_token": "</s>", "model_max_length": 4096}))
    result = engine("--chat-template", str(FIXTURES / "mistral_tool_calls.jinja"), "--special-tokens", str(config))
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["fields"]["tool_calls"]["open"] == "[TOOL_CALLS]"
    assert "tool_calls: verified." in result.stderr and "reasoning_content: not inferable." in result.stderr
    assert "checks on the probes:" in result.stderr


def test_cli_json_and_exit_codes(tmp_path: Path, engine: Callable[..., Ran]) -> None:
    as_json = engine("--preset", "smollm3", "--json", "--timeout", "0")
    assert as_json.returncode == 0
    data = json.loads(as_json.stdout)
    assert set(data) == {"response_template", "report", "diagnostics"}
    assert {f["field"]: f["status"] for f in data["report"]["fields"]}["tool_calls"] == "verified"
    assert data["report"]["format"]["name"] and data["report"]["disagreement"] is None and data["report"]["limits"] == []
    (tmp_path / "broken.jinja").write_text("{% for m in messages %}")
    assert engine("--chat-template", str(tmp_path / "broken.jinja"), "--timeout", "0").returncode == 1
    assert engine("--chat-template", str(tmp_path / "missing.jinja")).returncode == 2
    bad = engine("--chat-template", str(FIXTURES / "llama_json_calls.jinja"), "--special-tokens", "[1]")
    assert bad.returncode == 2 and "must be a JSON object" in bad.stderr
