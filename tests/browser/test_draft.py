""""Draft from the chat template" in a real browser: the draft appears as a diff against the response
template with the per-field report, goes into the editor only when applied, and undo puts the
previous text back, byte for byte."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from engine.presets import load_preset
from tests.browser.conftest import screenshot
from tests.browser.test_playground import share, shared_workspace


def test_draft_shows_a_diff_and_report_applies_on_request_and_undoes(page: Page):
    smollm3 = load_preset("smollm3")  # the preset a new session shows
    editor = page.locator("#response-editor .cm-content")
    expect(editor).to_contain_text('"reasoning_content"')

    page.click("#draft-button")
    box = page.locator("#draft-box")
    expect(box).to_be_visible(timeout=60_000)
    # The diff against the current response template: SmolLM3's history shows neither reasoning nor calls.
    expect(page.locator("#draft-diff .del").filter(has_text='"reasoning_content"')).to_have_count(1)
    expect(page.locator("#draft-diff .del").filter(has_text='"tool_calls"')).to_have_count(1)
    reasoning = page.locator('#draft-report .draft-field[data-field="reasoning_content"]')
    expect(reasoning).to_contain_text("not inferable")
    expect(reasoning).to_contain_text("never renders `reasoning_content` in history")
    expect(page.locator('#draft-report .draft-field[data-field="content"]')).to_contain_text("verified")
    expect(page.locator("#draft-report .draft-checks")).to_contain_text("passed")
    # Nothing changes until the author applies it.
    expect(editor).to_contain_text('"reasoning_content"')
    screenshot(page, "draft-review")

    page.click("#draft-apply")
    expect(box).to_be_hidden()
    expect(editor).not_to_contain_text('"reasoning_content"')
    expect(editor).to_contain_text('"start_anchor"')
    expect(page.locator("#draft-undo")).to_be_visible()
    expect(page.locator("#response-diagnostics")).to_contain_text("Response template loads")
    applied = shared_workspace(share(page)).response_template
    assert '"reasoning_content"' not in applied and applied != smollm3.response_template

    page.click("#draft-undo")
    expect(editor).to_contain_text('"reasoning_content"')
    expect(page.locator("#draft-undo")).to_be_hidden()
    expect(page.locator("#draft-status")).to_contain_text("previous response template is back")
    assert shared_workspace(share(page)).response_template == smollm3.response_template  # byte for byte
