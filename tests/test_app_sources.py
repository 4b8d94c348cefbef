"""The top bar: presets, Load from Hub (a local folder here: nothing can reach the Hub), Load files,
page load; and the page itself (every panel filled from one workspace, one state per session)."""

from __future__ import annotations

import copy
import json

import gradio as gr
import pytest

from app import page
from app.run_stream import RunUpdate, stream_run
from app.sources import from_files, from_hub, from_preset, preset_choices
from app.state import Session, encode_workspace
from engine.workspace import PASTED, RunSettings, Workspace
from app.workbench import build_prompt_view
from engine.presets import load_preset, preset_names
from tests.test_app_support import CHATML, RESPONSE, form_values, session


def test_preset_picker_lists_every_preset_with_blank_last():
    names = [name for _, name in preset_choices()]
    assert names == preset_names() and "blank" in names
    assert dict((n, d) for d, n in preset_choices())["blank"] == "Blank (ChatML starter)"


@pytest.mark.parametrize("name", preset_names())
def test_every_preset_fills_the_page_renders_and_replays_its_recordings(name):
    sess = Session.empty()
    values = page.pick_preset(sess, name)
    assert set(values) == set(page.WORKSPACE_SHOWN)  # the prompt panel too: one answer, no second round trip
    assert "prompt-text" in values["prompt"] and "renders this case" in values["chat_diagnostics"]
    preset = load_preset(name)
    assert values["chat_template"] == preset.chat_template and values["response_template"] == preset.response_template  # exact
    for case in preset.cases:
        sess.workspace.case_name = case.name
        view = build_prompt_view(sess, show_whitespace=False)
        assert view.prompt is not None, (case.name, view.chat_diagnostics, view.case_diagnostics)
    for recording in preset.recordings:
        if sess.workspace.find_case(recording.case) is None:
            continue
        sess.workspace.case_name = recording.case
        final = RunUpdate.shown(stream_run(sess, RunSettings(recording=recording.name, tokens_per_second=0), interval=0))
        if recording.expected is not None:
            assert json.loads(final.message) == recording.expected, recording.name


def test_blank_preset_is_a_minimal_chatml_starter():
    blank = load_preset("blank")
    assert blank.chat_template.endswith("\n") and len(blank.cases) == 1 and len(blank.recordings) == 1
    assert json.loads(blank.response_template)["fields"].keys() == {"content"}


def test_a_preset_pick_keeps_the_runner_the_visitor_chose_and_their_server():
    """The page's runner is sent with the pick (the session may not have saved a change made just
    before it): on the local runner each format's suggested checkpoint fills the model box, or the
    note says why none fits; a server's address stays."""
    sess = Session.empty()
    sess.workspace.run.remote_url, sess.workspace.run.remote_model = "http://127.0.0.1:9000/v1", "mine"
    values = page.pick_preset(sess, "qwen3", runner="local")
    # The page's runner is left as it is (a runner picked while the answer was on its way stays).
    assert "runner" not in values and sess.workspace.run.runner == "local" and values["model"] == "Qwen/Qwen3-0.6B"
    values = page.pick_preset(sess, "gpt-oss", runner="local")
    assert "runner" not in values and values["model"] == "" and "No checkpoint" in values["model_note"]
    assert (values["remote_url"], values["remote_model"]) == ("http://127.0.0.1:9000/v1", "mine")
    assert page.pick_preset(sess, "qwen3", runner="<not a runner>")["runner"] == "recorded"  # the preset's own


def test_a_broken_preset_name_is_a_message():
    workspace, problems = from_preset("no-such-preset")
    assert workspace is None and "cannot be loaded" in problems[0].message
    values = page.pick_preset(Session.empty(), "no-such-preset")
    assert values.keys() == {"status"} and "cannot be loaded" in values["status"]  # the rest stays as it was


def write(folder, name, text):
    (folder / name).write_text(text, encoding="utf-8")
    return str(folder / name)


def test_load_files_reads_the_template_and_the_tokenizer_config(tmp_path):
    current = session().workspace
    paths = [
        write(tmp_path, "chat_template.jinja", "{{ messages[0]['content'] }}\n"),
        write(tmp_path, "tokenizer_config.json", json.dumps({"eos_token": "</s>", "response_template": json.loads(RESPONSE)})),
    ]
    start, notes = from_files(current, paths)
    workspace = start.workspace
    assert workspace.chat_template == "{{ messages[0]['content'] }}\n"
    assert json.loads(workspace.response_template) == json.loads(RESPONSE)
    assert workspace.special_tokens.get("eos_token") == "</s>"
    assert [c.name for c in current.cases] == [c.name for c in workspace.cases][-2:]  # the author's own cases stay
    assert workspace.kwarg_specs == {}  # the new template never mentions enable_thinking


def test_load_files_accepts_a_bare_response_template_and_reports_junk(tmp_path):
    current = session().workspace
    start, notes = from_files(current, [write(tmp_path, "response_template.json", RESPONSE), write(tmp_path, "notes.txt", "hi")])
    workspace = start.workspace
    assert workspace.response_template == RESPONSE and workspace.chat_template == current.chat_template
    assert workspace.cases == current.cases  # no chat template: an edit of this workspace
    assert any("notes.txt" in d.message for d in notes)
    workspace, problems = from_files(current, [write(tmp_path, "broken.json", "{")])
    assert workspace is None and any("not valid JSON" in d.message for d in problems)
    values = page.load_files(Session.empty(), [])
    assert "No files uploaded" in values["status"]


def test_load_from_a_folder_laid_out_like_a_repo(tmp_path):
    write(tmp_path, "chat_template.jinja", CHATML)
    write(tmp_path, "tokenizer_config.json", json.dumps({"bos_token": "<s>", "response_template": json.loads(RESPONSE)}))
    (tmp_path / "additional_chat_templates").mkdir()
    write(tmp_path / "additional_chat_templates", "tool_use.jinja", "tools!")
    start, notes = from_hub(session().workspace, str(tmp_path), "")
    workspace = start.workspace
    assert workspace.chat_template == CHATML and workspace.other_templates == {"tool_use": "tools!"}
    assert any("named chat templates" in d.message for d in notes)
    assert workspace.source_repo == ""  # a folder cannot be published to


def test_load_from_hub_failures_are_messages(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    values = page.load_hub(Session.empty(), "", "")
    assert "Enter a repo id" in values["status"]
    values = page.load_hub(Session.empty(), "not a valid id!!", "")
    assert 'class="diag error"' in values["status"]


def test_page_load_restores_or_falls_back_to_the_default_preset():
    sess = Session.empty()
    values = page.restore_page(sess, json.dumps({"hash": "", "saved": None}))
    assert set(values) == set(page.WORKSPACE_SHOWN) and sess.workspace.preset == "smollm3"
    assert values["preset"]["value"] == "smollm3" and values["prompt"] == page.first_view()["prompt"]
    saved = encode_workspace(Workspace.from_preset(load_preset("qwen3")))
    values = page.restore_page(Session.empty(), json.dumps({"hash": "", "saved": saved}))
    assert values["preset"]["value"] == "qwen3" and values["chat_template"] == load_preset("qwen3").chat_template
    assert "Restored" in values["status"] and "prompt-text" in values["prompt"]


def test_a_new_visitors_page_load_sends_nothing_the_page_already_shows():
    """The page is served showing the default preset and its prompt; the load only checks that the
    prompt still renders the same (a template that prints today's date, served yesterday)."""
    sess = Session.empty()
    assert page.check_first_view(sess, False) == {} and sess.last_prompt_html == page.first_view()["prompt"]
    served = page.first_view()
    assert set(served) == set(page.WORKSPACE_SHOWN) and served["preset"]["value"] == "smollm3"
    yesterday = {**served, "prompt": served["prompt"].replace("Today Date", "Yesterday Date")}
    page.first_view.cache_clear()
    try:
        import unittest.mock

        with unittest.mock.patch.object(page, "first_view", lambda: yesterday):
            assert set(page.check_first_view(Session.empty(), False)) == {"prompt"}
    finally:
        page.first_view.cache_clear()


def test_the_page_is_served_showing_the_default_preset_and_its_prompt():
    """A new visitor sees the prompt as soon as the page is drawn: no load event, no render first."""
    served = page.build().config
    props = {c["props"].get("elem_id"): c["props"] for c in served["components"] if c.get("props", {}).get("elem_id")}
    first = page.first_view()
    assert props["chat-editor"]["value"] == load_preset("smollm3").chat_template  # exact, final newline kept
    assert props["prompt-view"]["value"] == first["prompt"] and "prompt-text" in first["prompt"]
    assert props["preset-picker"]["value"] == "smollm3"
    assert props["recording-picker"]["value"] == first["recording"]["value"] and props["recording-picker"]["choices"]
    assert props["kw-bool-0"]["visible"] is True and props["kw-bool-0"]["label"] == "enable_thinking"


def test_pick_recording_shows_its_case():
    sess = session()
    sess.workspace.recordings[0].case = "thinking"
    out = page.pick_recording(sess, recording="think then answer", form_case="greeting", **form_values(sess))
    assert out["case_name"] == "thinking" and sess.workspace.case_name == "thinking"
    assert out["pasted"]["visible"] is False
    out = page.pick_recording(sess, recording=PASTED, form_case="thinking", **form_values(sess))
    assert out["pasted"]["visible"] is True


def test_the_page_builds_with_one_state_per_session():
    blocks = page.build()
    states = [b for b in blocks.blocks.values() if isinstance(b, gr.State)]
    # A value (deep-copied per session), not a function: Gradio would run a function as a load event
    # of its own, racing the page's load and replacing the state it restored (a share link).
    assert len(states) == 1 and isinstance(states[0].value, Session)
    writes_state = [d for d in blocks.config["dependencies"] if states[0]._id in d["outputs"]]
    assert writes_state == []  # nothing replaces a session's state, in particular no load event
    first, second = copy.deepcopy(states[0].value), copy.deepcopy(states[0].value)
    assert first is not second and first.workspace is not second.workspace and first.workspace.cases is not second.workspace.cases
    assert first.workspace.preset == "smollm3" and first.stop is None


def test_a_preset_pick_leaves_out_the_props_the_page_already_shows():
    """Gradio builds a component for every `gr.update` an answer carries: a pick sends only the props
    (choices, labels, visibility) the page was not sent yet, and an update left with a value alone as
    that value (wiring.not_shown_yet). What the page then shows is what the whole answer would show."""
    blocks = page.build()
    pick = next(f.fn for f in blocks.fns.values() if getattr(f.fn, "__name__", "") == "pick_preset")
    names = pick.output_names
    sess = Session.empty()

    def sent(preset: str) -> dict:
        return {names[id(component)]: value for component, value in pick(sess, preset, False).items()}

    def updates(answer: dict) -> dict:
        return {n: {k: v for k, v in value.items() if k not in ("__type__", "value")}
                for n, value in answer.items() if isinstance(value, dict) and value.get("__type__") == "update"}

    def shown(answer: dict) -> dict:
        return {n: value.get("value") if isinstance(value, dict) else value for n, value in answer.items()}

    sent("qwen3")
    between, again = sent("gpt-oss"), sent("qwen3")
    whole = page.pick_preset(Session.empty(), "qwen3")
    # The page's props after the first two picks; only those the third pick changes travel.
    on_page: dict = {}
    for preset in ("qwen3", "gpt-oss"):
        for n, props in updates(page.pick_preset(Session.empty(), preset)).items():
            on_page.setdefault(n, {}).update(props)
    expected = {n: {k: v for k, v in props.items() if on_page.get(n, {}).get(k, object()) != v}
                for n, props in updates(whole).items()}
    assert updates(again) == {n: props for n, props in expected.items() if props}
    assert len(updates(again)) < len(updates(whole)) and updates(between)
    volatile = {"saved_code", "status", "prompt", "prompt_info"}  # (the edit count, the undo, the prompt's numbering)
    assert {n: v for n, v in shown(again).items() if n not in volatile} == {
        n: (v.get("value") if isinstance(v, dict) else v) for n, v in whole.items()
        if n not in volatile and not (isinstance(v, dict) and "value" not in v)}
