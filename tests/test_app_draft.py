""""Draft from the chat template" at the callback level: the draft is shown as a diff with the report,
only applied on request, undone byte for byte, and one session's draft never reaches another."""

from __future__ import annotations

import json

from app.draft_panel import apply_draft, discard_draft, draft_response, undo_draft
from app.page import pick_preset
from app.state import Session
from tests.test_app_support import edited, plain


def drafted(preset: str) -> tuple[Session, dict]:
    sess = Session.empty()
    pick_preset(sess, preset)
    return sess, draft_response(**edited(sess))


def test_the_draft_is_shown_for_review_and_the_editor_keeps_its_text() -> None:
    sess, shown = drafted("blank")
    before = sess.workspace.response_template
    assert shown["draft_box"]["visible"] is True and shown["draft_apply"]["interactive"] is True
    assert '<div class="add">+  &quot;version&quot;: 1,</div>' in shown["draft_diff"]
    report = shown["draft_report"]
    assert 'data-field="reasoning_content"' in report and "not inferable" in report
    assert "never renders <code>reasoning_content</code> in history" in report and "write this field by hand" in report
    assert "`" not in report  # the report is rendered, not shown as its markup (issue 35)
    assert 'class="draft-field verified" data-field="content"' in report and "checks of the draft" in report
    assert "response_template" not in shown and sess.workspace.response_template == before and sess.draft


def test_the_report_names_the_library_format_the_calls_come_from() -> None:
    sess = Session.empty()
    pick_preset(sess, "smollm3")
    content_only = json.dumps({"start_anchor": "<|im_start|>assistant\n", "fields": {"content": {"close": "<|im_end|>"}}})
    shown = draft_response(**edited(sess, response=content_only))
    # SmolLM3's history shows neither reasoning nor calls: both come from a library format its instructions show.
    assert '<div class="add">+    &quot;tool_calls&quot;: {</div>' in shown["draft_diff"]
    report = shown["draft_report"]
    assert 'class="draft-field verified" data-field="tool_calls"' in report
    assert '<div class="draft-format">' in report and "the tool instructions" in report and "parses the instruction" in report


def test_apply_then_undo_gives_back_the_previous_text_byte_for_byte() -> None:
    sess, _ = drafted("blank")
    previous = sess.workspace.response_template + "\n\n"  # what the editor held, trailing whitespace included
    draft = sess.draft
    applied = apply_draft(sess, previous)
    assert applied["response_template"] == draft == sess.workspace.response_template
    assert applied["draft_undo"]["visible"] is True and applied["draft_box"]["visible"] is False
    undone = undo_draft(sess)
    assert undone["response_template"] == previous == sess.workspace.response_template
    assert undone["draft_undo"]["visible"] is False
    assert undo_draft(sess) == {"draft_undo": {"__type__": "update", "visible": False}}  # nothing left to undo


def test_discard_keeps_the_response_template_and_nothing_is_left_to_apply() -> None:
    sess, _ = drafted("gpt-oss")
    before = sess.workspace.response_template
    assert plain(discard_draft(sess)["draft_box"]) is None and sess.draft is None
    assert "Nothing to apply" in apply_draft(sess, before)["draft_status"]
    assert sess.workspace.response_template == before


def test_a_draft_equal_to_the_response_template_cannot_be_applied() -> None:
    _, shown = drafted("qwen3")  # Qwen3's draft is the preset's response template
    assert shown["draft_apply"]["interactive"] is False
    assert "No changes" in shown["draft_diff"]


def test_a_chat_template_that_does_not_render_gives_a_report_not_a_draft() -> None:
    sess = Session.empty()
    shown = draft_response(**edited(sess, chat="{% for m in messages %}"))
    assert sess.draft is None and shown["draft_apply"]["interactive"] is False
    assert "No draft" in shown["draft_diff"] and "renders none of the probe" in shown["draft_report"]


def test_sessions_do_not_share_drafts() -> None:
    first, _ = drafted("blank")
    second = Session.empty()
    pick_preset(second, "blank")
    assert second.draft is None and "Nothing to apply" in apply_draft(second, second.workspace.response_template)["draft_status"]
    assert first.draft is not None


def test_the_report_reads_as_sentences_with_code_rendered_and_texts_as_written() -> None:
    """Issue 35: literal backticks, a truncated Python repr of the history's calls, and bullets such as
    "the template does not write it in content and a call (tools offered)"."""
    from pathlib import Path

    from app.draft_panel import report_html
    from engine.draft import draft_response_template

    fixtures = Path(__file__).parent / "fixtures"
    own = (fixtures / "own_model" / "chat_template.jinja").read_text(encoding="utf-8")
    report = report_html(draft_response_template(own, {"bos_token": "<s>", "eos_token": "</s>"}, checks=False))
    assert ("the chat template does not write <code>content</code> in the probe “content and a call” (tools "
            "offered), where the message has it") in report
    assert "`" not in report and "<code>tool_calls</code> opens at" in report
    disagrees = (fixtures / "draft" / "history_disagrees.jinja").read_text(encoding="utf-8")
    report = report_html(draft_response_template(disagrees, {"eos_token": "<|im_end|>"}, stop_tokens=["<|im_end|>"]))
    note = report[report.index("the history writes calls differently") :].split("</li>")[0]
    assert "\\n" not in note and "&#x27;&lt;" not in note and "side by side" in note  # no repr, cut at 160
    history = report[report.index("What the history writes") :].split("</pre>")[0]
    assert '{&quot;name&quot;: &quot;zq_lookup&quot;}' in history  # the whole text, as written
