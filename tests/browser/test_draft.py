""""Draft from the chat template" in a real browser: the draft appears as a diff against the response
template with the per-field report (the library format the calls come from; a history that writes
calls unlike the instructions, both texts side by side), goes into the editor only when applied,
and undo puts the previous text back, byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

from playwright.sync_api import Page, expect

from tests.browser.conftest import screenshot
from tests.browser.test_playground import pick, share, shared_workspace

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "draft"
CONTENT_ONLY = json.dumps({"start_anchor": "<|im_start|>assistant\n", "fields": {"content": {"close": "<|im_end|>"}}}, indent=2)


def replace_text(page: Page, elem_id: str, text: str) -> None:
    page.locator(f"#{elem_id} .cm-content").click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(text)


def test_draft_shows_a_diff_and_report_applies_on_request_and_undoes(shared_page: Page):
    # SmolLM3 (the preset a new session shows) with a response template that reads content only: its
    # history shows neither reasoning nor calls, its instructions and the format library give both.
    editor = shared_page.locator("#response-editor .cm-content")
    replace_text(shared_page, "response-editor", CONTENT_ONLY)
    expect(editor).not_to_contain_text('"tool_calls"')

    shared_page.click("#draft-button")
    box = shared_page.locator("#draft-box")
    expect(box).to_be_visible(timeout=60_000)
    expect(shared_page.locator("#draft-diff .add").filter(has_text='"reasoning_content"')).to_have_count(1)
    expect(shared_page.locator("#draft-diff .add").filter(has_text='"tool_calls"')).to_have_count(1)
    calls = shared_page.locator('#draft-report .draft-field[data-field="tool_calls"]')
    expect(calls).to_contain_text("verified")
    # The report is rendered: names are code, not text in backticks (issue 35).
    expect(calls).to_contain_text("the chat template never writes tool_calls into an assistant turn")
    expect(calls.locator("li code", has_text="tool_calls")).to_have_count(1)
    assert "`" not in shared_page.locator("#draft-report").text_content()
    expect(shared_page.locator("#draft-report .draft-format")).to_contain_text("From the format library")
    expect(shared_page.locator("#draft-report .draft-format")).to_contain_text("the tool instructions")
    expect(shared_page.locator("#draft-report .draft-checks")).to_contain_text("passed")
    # Nothing changes until the author applies it.
    expect(editor).not_to_contain_text('"tool_calls"')
    screenshot(shared_page, "draft-review")

    shared_page.click("#draft-apply")
    expect(box).to_be_hidden()
    expect(editor).to_contain_text('"tool_calls"')
    expect(shared_page.locator("#draft-undo")).to_be_visible()
    expect(shared_page.locator("#response-diagnostics")).to_contain_text("Response template loads")
    assert '"tool_calls"' in shared_workspace(share(shared_page)).response_template

    shared_page.click("#draft-undo")
    expect(editor).not_to_contain_text('"tool_calls"')
    expect(shared_page.locator("#draft-undo")).to_be_hidden()
    expect(shared_page.locator("#draft-status")).to_contain_text("previous response template is back")
    assert shared_workspace(share(shared_page)).response_template == CONTENT_ONLY  # byte for byte


def test_a_history_unlike_the_instructions_is_shown_side_by_side(shared_page: Page):
    pick(shared_page, "preset-picker", "Blank (ChatML starter)")
    replace_text(shared_page, "chat-editor", (FIXTURES / "history_disagrees.jinja").read_text().strip())
    shared_page.click("#draft-button")
    found = shared_page.locator("#draft-report .draft-disagreement")
    expect(found).to_be_visible(timeout=60_000)
    expect(found).to_contain_text("The history writes calls unlike what the model is told")
    told, history = found.locator(".draft-sides > div").all()
    expect(told.locator("pre")).to_contain_text('{"name": <function-name>, "arguments": <args-json-object>}')
    expect(history.locator("pre")).to_contain_text('{"name": "zq_lookup"}, "arguments": {')
    # Side by side: the two texts start at the same height, each in a monospaced font (laid out as written).
    assert abs(told.bounding_box()["y"] - history.bounding_box()["y"]) < 2
    for side in (told, history):
        assert "monospace" in side.locator("pre").evaluate("(e) => getComputedStyle(e).fontFamily")
    expect(shared_page.locator('#draft-report .draft-field[data-field="tool_calls"]')).to_contain_text("a bug in the chat template")
    screenshot(shared_page, "draft-disagreement")
