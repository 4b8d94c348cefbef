"""The editors panel: exact whitespace, diagnostics with line and column as the author types, and
a bad edit never wiping the last good prompt."""

from __future__ import annotations

import gradio as gr

from app.highlight import diagnostics_html
from app.widgets import exact_code
from engine.diagnostics import Diagnostic
from engine.presets import load_preset
from tests.test_app_support import CHATML, RESPONSE, refresh_with, session


def test_exact_code_keeps_whitespace_that_gr_code_strips():
    text = "\n  {{- 'x' -}}\n\n"
    assert gr.Code(language="jinja2").postprocess(text) == text.strip()  # the behaviour we guard against
    editor = exact_code(language="jinja2")
    assert editor.postprocess(text) == text
    assert editor.postprocess(None) is None
    assert type(editor) is gr.Code and editor.get_block_name() == "code"  # the stock Code frontend


def test_page_editors_keep_whitespace_through_a_gr_update():
    from gradio.blocks import postprocess_update_dict

    from app.page import build

    page = build()
    chat = next(b for b in page.blocks.values() if getattr(b, "elem_id", None) == "chat-editor")
    assert chat.postprocess("x\n") == "x\n"
    assert postprocess_update_dict(chat, {"value": "\n x \n", "__type__": "update"})["value"] == "\n x \n"


def test_refresh_keeps_the_exact_template_text_in_the_session():
    sess = session()
    chat = CHATML + "\n\n"
    refresh_with(sess, chat=chat)
    assert sess.workspace.chat_template == chat
    response = "\n" + RESPONSE + "\n"
    refresh_with(sess, response=response)
    assert sess.workspace.response_template == response


def test_response_template_json_error_is_reported_at_its_line_and_column():
    sess = session()
    broken = RESPONSE.replace('"close": "</think>",', '"close": "</think>" ', 1)  # missing comma on line 7
    line = next(i for i, text in enumerate(broken.splitlines(), 1) if '"close": "</think>" ' in text)
    out = refresh_with(sess, response=broken)
    chat_html, response_html = out["chat_diagnostics"], out["response_diagnostics"]
    assert "Invalid JSON" in response_html
    assert f"line {line + 1}" in response_html  # json reports the token after the missing comma
    assert "Chat template renders this case" in chat_html


def test_response_template_validation_error_names_the_line_of_the_field():
    sess = session()
    broken = RESPONSE.replace('"content": "json"', '"content": "jsn"')
    line = next(i for i, text in enumerate(broken.splitlines(), 1) if '"jsn"' in text)
    response_html = refresh_with(sess, response=broken)["response_diagnostics"]
    assert 'class="diag error"' in response_html and "unknown content parser" in response_html
    assert f"line {line}," in response_html


def test_chat_template_error_keeps_the_last_good_prompt_marked_stale():
    sess = session()
    good = refresh_with(sess)
    good_prompt, info = good["prompt"], good["prompt_info"]
    assert "Hi!" in good_prompt and "not rendered" not in info
    broken = CHATML.replace("{%- endfor -%}", "{%- endfo -%}")
    out = refresh_with(sess, chat=broken)
    chat_html, prompt_html, info = out["chat_diagnostics"], out["prompt"], out["prompt_info"]
    assert "Jinja syntax error" in chat_html and "line 3" in chat_html
    assert "stale-banner" in prompt_html and "Hi!" in prompt_html  # the last good prompt stays
    assert "not rendered" in info
    assert sess.workspace.chat_template == broken  # the edit itself is kept


def test_template_that_raises_becomes_a_diagnostic():
    sess = session()
    raising = "{{ raise_exception('Only user messages, please.') }}"
    chat_html = refresh_with(sess, chat=raising)["chat_diagnostics"]
    assert "Only user messages, please." in chat_html
    assert "line 1" in chat_html


def test_diagnostics_html_escapes_and_points_a_caret_at_the_column():
    html = diagnostics_html([Diagnostic("error", "bad <b>tag</b>", "chat_template", line=2, column=5,
                                        snippet="abc <script>", hint="fix it")])  # fmt: skip
    assert "&lt;b&gt;tag&lt;/b&gt;" in html and "<script>" not in html
    assert "line 2, col 5" in html
    assert 'abc &lt;script&gt;\n    <span class="caret">^</span>' in html  # the caret marked: a long line scrolls to it


def test_an_unexpected_failure_while_rendering_is_a_message(monkeypatch):
    import app.workbench as workbench

    sess = session()
    refresh_with(sess)  # a good prompt first

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(workbench, "Trace", broken)
    out = refresh_with(sess)
    chat_html, prompt_html, info = out["chat_diagnostics"], out["prompt"], out["prompt_info"]
    assert "Unexpected problem while rendering (RuntimeError)" in chat_html and "boom" not in chat_html
    assert "Hi!" in prompt_html and "not rendered" in info


def test_a_runaway_template_becomes_a_message_and_the_page_keeps_working():
    """Templates are untrusted code: one that would loop for hours is stopped in its worker."""
    import app.workbench

    sess = session()
    good_html = refresh_with(sess, chat=CHATML)["chat_diagnostics"]
    runaway = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    original, app.workbench.RENDER_TIMEOUT = app.workbench.RENDER_TIMEOUT, 2.0
    try:
        chat_html = refresh_with(sess, chat=runaway)["chat_diagnostics"]
    finally:
        app.workbench.RENDER_TIMEOUT = original
    assert "took longer than 2 s" in chat_html
    assert sess.workspace.chat_template == runaway  # nothing the user typed is lost
    assert refresh_with(sess, chat=CHATML)["chat_diagnostics"] == good_html  # and the next render works


def test_a_keystroke_sends_only_its_editors_text():
    """Each editor's input event carries the session, that editor's text and the whitespace toggle,
    and goes straight to its handler (no queue round trip): Gradio's cost per event grows with
    every value it gathers, sends, and processes on the way in and out."""
    from app.page import build

    page = build()
    by_id = {b._id: getattr(b, "elem_id", None) for b in page.blocks.values()}
    for editor in ("chat-editor", "response-editor"):
        [dep] = [d for d in page.fns.values() if any(by_id.get(t[0]) == editor and t[1] == "input" for t in d.targets)]
        assert len(dep.inputs) == 3 and by_id[dep.inputs[1]._id] == editor
        assert dep.queue is False and dep.preprocess is False and dep.postprocess is False


def test_an_editor_edit_keeps_the_other_editor_and_the_case():
    from app.workbench import edit_chat_template, edit_response_template, explain_view

    sess = session()
    case = sess.workspace.case
    out = edit_chat_template(sess, CHATML + "{# x #}", False)
    assert sess.workspace.chat_template == CHATML + "{# x #}" and sess.workspace.response_template == RESPONSE
    assert sess.workspace.case == case and "renders this case" in out["chat_diagnostics"]
    full = refresh_with(sess)  # the same view a full refresh gives, its prompt explained right after
    assert {k: v for k, v in out.items() if k != "prompt"} == {k: v for k, v in full.items() if k != "prompt"}
    assert explain_view(sess, False)["prompt"] == full["prompt"]
    out = edit_response_template(sess, "{", False)
    assert sess.workspace.response_template == "{" and sess.workspace.chat_template == CHATML + "{# x #}"
    assert 'class="diag error"' in out["response_diagnostics"]


def test_an_editor_left_out_of_an_answer_still_keeps_the_next_text_exactly():
    """When an answer leaves a component out (a failed Hub load answers with its status only, a page
    load with nothing to restore answers with nothing), Gradio re-creates that session's copy of the
    component as a plain `gr.Code`, which strips values: the next preset must still arrive whole."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    from gradio.state_holder import SessionState

    from app.page import build

    page = build()
    state = SessionState(page)

    def answer(handler: str, **values):
        [dep] = [f for f in page.fns.values() if f.name == handler]
        names = [getattr(c, "elem_id", None) for c in dep.inputs]
        inputs = [values.get(n, c.value) for n, c in zip(names, dep.inputs)]
        call = page.process_api(block_fn=dep, inputs=inputs, state=state, request=None)
        # A thread of its own: after the browser tests, Playwright's loop is running in this one.
        with ThreadPoolExecutor(1) as thread:
            out = thread.submit(asyncio.run, call).result()
        return dict(zip([getattr(c, "elem_id", None) for c in dep.outputs], out["data"]))

    answer("load_hub", **{"hub-repo": "not a valid id!!"})
    shown = answer("pick_preset", **{"preset-picker": "blank"})
    assert shown["chat-editor"] == load_preset("blank").chat_template and shown["chat-editor"].endswith("\n")
