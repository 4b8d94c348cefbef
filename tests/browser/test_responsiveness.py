"""What keeps the page as fast as the author's hands (issue 15), in Chromium: no work a keystroke or
a preset switch does not need. The figures themselves are measured by `python -m benchmarks`
(never timed here: the machine is noisy); these tests pin the causes that were fixed."""

from __future__ import annotations

from playwright.sync_api import Page, expect

TOKEN = "hf_benchSecretToken1234567890"


def test_the_browser_keeps_no_run_history(page: Page):
    """Gradio 6 records every event's inputs and outputs in localStorage by default and re-reads and
    re-writes that history on every event: a keystroke paid for parsing and serialising megabytes,
    and a Hub token typed into the Publish tab (an input of its buttons) was stored in the browser."""
    editor = page.locator("#chat-editor .cm-content")
    editor.click()
    page.keyboard.press("Control+Home")
    page.keyboard.type("x")
    expect(page.locator("#prompt-view .prompt-text")).to_contain_text("x")
    page.click('#tabs button[role=tab]:has-text("Publish")')
    page.locator("#publish-token input").fill(TOKEN)
    page.locator("#publish-repo input, #publish-repo textarea").first.fill("someone/some-model")
    page.click("#publish-preview")
    expect(page.locator("#publish-messages .diag")).to_be_visible(timeout=30_000)
    stored = page.evaluate("Object.fromEntries(Object.keys(localStorage).map((k) => [k, localStorage.getItem(k)]))")
    assert not [key for key in stored if key.startswith("gradio:run-history")]
    assert not [key for key, value in stored.items() if TOKEN in (value or "")]
