""""Start from a format" in a real browser: the search narrows the picker, a pick is reviewed as a
diff with what the format is, its examples become recordings that run against the chat template,
Apply puts the format in the editor, and Undo gives the previous text back, byte for byte."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from engine.formats import load_format, load_formats
from engine.presets import load_preset
from tests.browser.conftest import screenshot
from tests.browser.test_playground import pick, share, shared_workspace


def test_search_review_run_the_examples_apply_and_undo(page: Page):
    smollm3, hermes = load_preset("smollm3"), load_format("hermes")  # SmolLM3 is what a new session shows
    editor = page.locator("#response-editor .cm-content")
    expect(editor).to_contain_text('"reasoning_content"')

    page.click("#format-accordion button, #format-accordion .label-wrap")
    # Typed as a person types (the search listens to input events).
    page.locator("#format-search input").press_sequentially("Qwen2.5")
    # Each keystroke is a search; the last one's answer says how many formats it found.
    expect(page.locator("#format-status")).to_contain_text(f"1 of {len(load_formats())} formats match", timeout=20_000)
    page.click("#format-picker input")
    options = page.locator('#format-picker [role="option"]')
    expect(options).to_have_count(1)  # the search narrowed the library to one format
    label = f"hermes — {hermes.title}"
    expect(options.first).to_have_attribute("aria-label", label)
    options.first.click()

    box = page.locator("#format-box")
    expect(box).to_be_visible()
    expect(page.locator("#format-diff .del").filter(has_text='"reasoning_content"')).to_have_count(1)
    expect(page.locator("#format-info")).to_contain_text("Qwen/Qwen2.5-7B-Instruct")
    expect(page.locator("#format-info")).to_contain_text("5 examples")
    expect(editor).to_contain_text('"reasoning_content"')  # nothing changes until it is applied
    screenshot(page, "format-review")

    # Its examples become recordings; the first one is picked for the recorded runner.
    page.click("#format-examples")
    expect(page.locator("#format-status")).to_contain_text("Added the case hermes examples and 5 recordings")
    expect(page.locator("#recording-picker input")).to_have_value(f"hermes: {hermes.examples[0].name}  ·  hermes examples")

    page.click("#format-apply")
    expect(box).to_be_hidden()
    expect(editor).not_to_contain_text('"reasoning_content"')
    expect(page.locator("#draft-undo")).to_be_visible()
    expect(page.locator("#response-diagnostics")).to_contain_text("Response template loads")
    assert shared_workspace(share(page)).response_template == hermes.response_template_text

    # Run the example against SmolLM3's chat template with the Hermes response template.
    page.click("#run-button")
    expect(page.locator("#run-stats")).to_contain_text("equals the recording’s expected message", timeout=30_000)
    expect(page.locator("#message-view")).to_contain_text("get_stock_fundamentals")

    pick(page, "recording-picker", f"hermes: {hermes.examples[1].name}  ·  hermes examples")
    page.click("#run-button")
    expect(page.locator("#run-stats")).to_contain_text("equals the recording’s expected message", timeout=30_000)
    expect(page.locator("#message-view")).to_contain_text("Zürich")
    screenshot(page, "format-examples-run")

    page.click("#draft-undo")
    expect(editor).to_contain_text('"reasoning_content"')
    expect(page.locator("#draft-undo")).to_be_hidden()
    assert shared_workspace(share(page)).response_template == smollm3.response_template  # byte for byte
