"""The case panel: switch, add, duplicate, rename, delete; JSON errors that keep the last good case;
declared template kwargs as proper controls."""

from __future__ import annotations

import json

from app import case_panel as cases
from app.case_form import FORM_FIELDS, slot_plan
from tests.test_app_support import form_values, plain, refresh_with, session


def shown(result: dict) -> dict:
    """The values a case action shows, simplified."""
    assert set(result) == set(cases.SHOWN)
    picker = result["case_picker"]
    return {"choices": [c[1] if isinstance(c, tuple) else c for c in picker["choices"]], "value": picker["value"],
            "name": result["case_name"], "form_case": result["form_case"], "description": result["case_description"],
            "messages": json.loads(plain(result["messages"]))}  # fmt: skip


def act(action, sess, *, form_case: str | None = None, **named):
    """Call a case action as the page does: the case the form shows, the form's values, and any
    of its own inputs (case_picker, case_name)."""
    form_case = sess.workspace.case_name if form_case is None else form_case
    edits = {k: v for k, v in named.items() if k in FORM_FIELDS}
    own = {k: v for k, v in named.items() if k not in FORM_FIELDS}
    return shown(action(session=sess, form_case=form_case, **form_values(sess, **edits), **own))


def test_switching_cases_saves_the_edits_of_the_one_left():
    sess = session()
    edited = json.dumps([{"role": "user", "content": "Edited!"}])
    out = act(cases.select_case, sess, form_case="greeting", case_picker="thinking", messages=edited)
    assert out["value"] == out["name"] == out["form_case"] == "thinking"
    assert out["messages"][0]["content"] == "Think first."
    assert sess.workspace.find_case("greeting").messages[0]["content"] == "Edited!"


def test_add_duplicate_rename_delete():
    sess = session()
    out = act(cases.add_case, sess, form_case="greeting")
    assert out["value"] == "new case" and out["choices"] == ["greeting", "thinking", "new case"]

    out = act(cases.select_case, sess, form_case="new case", case_picker="thinking")
    out = act(cases.duplicate_case, sess, form_case="thinking")
    assert out["value"] == "thinking copy"
    assert out["choices"] == ["greeting", "thinking", "thinking copy", "new case"]
    assert sess.workspace.case.template_kwargs == {"enable_thinking": True}

    out = act(cases.rename_case, sess, form_case="thinking copy", case_name="deep thought")
    assert out["value"] == "deep thought" and "thinking copy" not in out["choices"]

    out = act(cases.rename_case, sess, form_case="deep thought", case_name="greeting")
    assert out["value"] == "deep thought" and "already a case named" in out["description"]

    out = act(cases.delete_case, sess, form_case="deep thought")
    assert "deep thought" not in out["choices"] and out["value"] == "new case"


def test_renaming_a_case_moves_its_recordings_along():
    sess = session()
    act(cases.rename_case, sess, form_case="greeting", case_name="hello")
    assert sess.workspace.recording("think then answer").case == "hello"


def test_the_last_case_cannot_be_deleted():
    sess = session()
    act(cases.delete_case, sess, form_case="greeting")
    out = act(cases.delete_case, sess, form_case="thinking")
    assert out["choices"] == ["thinking"] and "cannot be deleted" in out["description"]


def test_invalid_messages_json_is_reported_and_the_last_good_case_kept():
    sess = session()
    out = refresh_with(sess, messages='[{"role": "user", "content": "Hi!",}]')
    case_html, prompt_html = out["case_diagnostics"], out["prompt"]
    assert "Messages: invalid JSON" in case_html and "line 1" in case_html
    assert sess.workspace.case.messages == [{"role": "user", "content": "Hi!"}]
    assert "Hi!" in prompt_html  # still rendered from the last good case

    case_html = refresh_with(sess, tools='{"not": "a list"}')["case_diagnostics"]
    assert "tools must be a list" in case_html


def test_python_literals_get_a_json_hint():
    sess = session()
    case_html = refresh_with(sess, messages='[{"role": "user", "content": None}]')["case_diagnostics"]
    assert "JSON spells these true, false and null" in case_html


def test_declared_kwargs_become_controls_and_edit_the_case():
    sess = session()
    sess.workspace.kwarg_specs = {
        "enable_thinking": {"default": True, "type": "bool", "help": "Think first."},
        "reasoning_effort": {"default": "medium", "type": "choice", "choices": ["low", "medium", "high"]},
        "builtin_tools": {"default": None, "type": "json"},
        "persona": {"default": None, "type": "string"},
    }
    plan = {s.name: (s.kind, s.index) for s in slot_plan(sess.workspace.kwarg_specs)}
    assert plan == {"enable_thinking": ("bool", 0), "reasoning_effort": ("choice", 0), "builtin_tools": ("text", 0), "persona": ("text", 1)}
    updates = cases.form_updates(sess.workspace, sess.workspace.case)
    bool0, choice0 = updates["kw_bool_0"], updates["kw_choice_0"]
    assert bool0["label"] == "enable_thinking" and bool0["value"] is True and bool0["visible"]
    assert choice0["choices"] == ["low", "medium", "high"] and choice0["value"] == "medium"
    assert updates["kw_bool_1"]["visible"] is False  # unused slots are hidden

    refresh_with(sess, kw_bool_0=False, kw_choice_0="high", kw_text_0='["browser"]', kw_text_1="")
    assert sess.workspace.case.template_kwargs == {"enable_thinking": False, "reasoning_effort": "high", "builtin_tools": ["browser"]}

    # Back to the defaults: nothing is stored (so the preset's default keeps applying).
    refresh_with(sess, kw_bool_0=True, kw_choice_0="medium", kw_text_0="", kw_text_1="")
    assert sess.workspace.case.template_kwargs == {}

    case_html = refresh_with(sess, kw_text_0="[oops")["case_diagnostics"]
    assert "Template kwarg builtin_tools: invalid JSON" in case_html


def test_other_kwargs_box_and_reserved_names():
    sess = session()
    refresh_with(sess, extra_kwargs='{"custom_flag": 3}')
    assert sess.workspace.case.template_kwargs == {"custom_flag": 3}
    case_html = refresh_with(sess, extra_kwargs='{"add_generation_prompt": false}')["case_diagnostics"]
    assert "cannot set add_generation_prompt" in case_html
    case_html = refresh_with(sess, extra_kwargs="[1]")["case_diagnostics"]
    assert "must be a JSON object" in case_html


def test_generation_flags_are_case_settings():
    sess = session()
    prompt_html = refresh_with(sess, add_generation_prompt=False)["prompt"]
    assert sess.workspace.case.add_generation_prompt is False
    assert "generation prompt ▸" not in prompt_html
    case_html = refresh_with(sess, add_generation_prompt=True, continue_final_message=True)["case_diagnostics"]
    assert "cannot both be on" in case_html


def test_the_conversation_editor_is_told_the_message_shape_by_the_engine():
    """The page's conversation editor reads what a message may hold from data-shape: the engine's
    `message_shape`, escaped into the attribute and read back unchanged; the reasoning name it writes
    first is the one transformers fills from the others."""
    import html
    import re

    from engine.cases import message_shape
    from engine.transformers_compat import REASONING_FIELDS

    box = cases.conversation_box()
    attribute = re.search(r'data-shape="([^"]*)"', box).group(1)
    assert json.loads(html.unescape(attribute)) == message_shape()
    shape = message_shape()
    assert shape["reasoning"][0] == "reasoning_content" and set(shape["reasoning"]) == set(REASONING_FIELDS)
    assert set(shape["parts"]) == {"text", "image", "audio", "video"} and shape["parts"]["text"] == ["text"]
    assert {"user", "assistant", "system", "tool"} <= set(shape["roles"])
