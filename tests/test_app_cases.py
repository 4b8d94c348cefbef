"""The case panel: switch, add, duplicate, rename, delete; JSON errors that keep the last good case;
declared template kwargs as proper controls."""

from __future__ import annotations

import json

from app import case_panel as cases
from app.case_panel import BOOL_SLOTS, FORM_SIZE, slot_plan
from tests.test_app_support import form_values, plain, refresh_with, session, with_form


def shown(result: tuple) -> dict:
    """Name the values a case action returns."""
    picker, name, form_case, description, *form = result
    assert len(form) == FORM_SIZE
    return {"choices": [c[1] if isinstance(c, tuple) else c for c in picker["choices"]], "value": picker["value"],
            "name": name, "form_case": form_case, "description": description,
            "messages": json.loads(plain(form[0])), "form": [plain(f) for f in form]}  # fmt: skip


def test_switching_cases_saves_the_edits_of_the_one_left():
    sess = session()
    edited = json.dumps([{"role": "user", "content": "Edited!"}])
    out = shown(cases.select_case(sess, "thinking", "greeting", *with_form(sess, messages=edited)))
    assert out["value"] == out["name"] == out["form_case"] == "thinking"
    assert out["messages"][0]["content"] == "Think first."
    assert sess.workspace.find_case("greeting").messages[0]["content"] == "Edited!"


def test_add_duplicate_rename_delete():
    sess = session()
    out = shown(cases.add_case(sess, "greeting", *form_values(sess)))
    assert out["value"] == "new case" and out["choices"] == ["greeting", "thinking", "new case"]

    out = shown(cases.select_case(sess, "thinking", "new case", *form_values(sess)))
    out = shown(cases.duplicate_case(sess, "thinking", *form_values(sess)))
    assert out["value"] == "thinking copy"
    assert out["choices"] == ["greeting", "thinking", "thinking copy", "new case"]
    assert sess.workspace.case.template_kwargs == {"enable_thinking": True}

    out = shown(cases.rename_case(sess, "deep thought", "thinking copy", *form_values(sess)))
    assert out["value"] == "deep thought" and "thinking copy" not in out["choices"]

    out = shown(cases.rename_case(sess, "greeting", "deep thought", *form_values(sess)))
    assert out["value"] == "deep thought" and "already a case named" in out["description"]

    out = shown(cases.delete_case(sess, "deep thought", *form_values(sess)))
    assert "deep thought" not in out["choices"] and out["value"] == "new case"


def test_renaming_a_case_moves_its_recordings_along():
    sess = session()
    cases.rename_case(sess, "hello", "greeting", *form_values(sess))
    assert sess.workspace.recording("think then answer").case == "hello"


def test_the_last_case_cannot_be_deleted():
    sess = session()
    cases.delete_case(sess, "greeting", *form_values(sess))
    out = shown(cases.delete_case(sess, "thinking", *form_values(sess)))
    assert out["choices"] == ["thinking"] and "cannot be deleted" in out["description"]


def test_invalid_messages_json_is_reported_and_the_last_good_case_kept():
    sess = session()
    _, _, case_html, prompt_html, _, _ = refresh_with(sess, messages='[{"role": "user", "content": "Hi!",}]')
    assert "Messages: invalid JSON" in case_html and "line 1" in case_html
    assert sess.workspace.case.messages == [{"role": "user", "content": "Hi!"}]
    assert "Hi!" in prompt_html  # still rendered from the last good case

    _, _, case_html, *_ = refresh_with(sess, tools='{"not": "a list"}')
    assert "tools must be a list" in case_html


def test_python_literals_get_a_json_hint():
    sess = session()
    _, _, case_html, *_ = refresh_with(sess, messages='[{"role": "user", "content": None}]')
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
    bool0, choice0 = updates[6], updates[6 + BOOL_SLOTS]
    assert bool0["label"] == "enable_thinking" and bool0["value"] is True and bool0["visible"]
    assert choice0["choices"] == ["low", "medium", "high"] and choice0["value"] == "medium"
    assert updates[7]["visible"] is False  # unused slots are hidden

    refresh_with(sess, bool0=False, choice0="high", text0='["browser"]', text1="")
    assert sess.workspace.case.template_kwargs == {"enable_thinking": False, "reasoning_effort": "high", "builtin_tools": ["browser"]}

    # Back to the defaults: nothing is stored (so the preset's default keeps applying).
    refresh_with(sess, bool0=True, choice0="medium", text0="", text1="")
    assert sess.workspace.case.template_kwargs == {}

    _, _, case_html, *_ = refresh_with(sess, text0="[oops")
    assert "Template kwarg builtin_tools: invalid JSON" in case_html


def test_other_kwargs_box_and_reserved_names():
    sess = session()
    refresh_with(sess, extra_kwargs='{"custom_flag": 3}')
    assert sess.workspace.case.template_kwargs == {"custom_flag": 3}
    _, _, case_html, *_ = refresh_with(sess, extra_kwargs='{"add_generation_prompt": false}')
    assert "cannot set add_generation_prompt" in case_html
    _, _, case_html, *_ = refresh_with(sess, extra_kwargs="[1]")
    assert "must be a JSON object" in case_html


def test_generation_flags_are_case_settings():
    sess = session()
    _, _, _, prompt_html, *_ = refresh_with(sess, add_generation_prompt=False)
    assert sess.workspace.case.add_generation_prompt is False
    assert "generation prompt ▸" not in prompt_html
    _, _, case_html, *_ = refresh_with(sess, add_generation_prompt=True, continue_final_message=True)
    assert "cannot both be on" in case_html
