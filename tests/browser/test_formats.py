""""Start from a format" in a real browser: the search narrows the picker, a pick is reviewed as a
diff with what the format is, its examples become recordings that run against the chat template,
Apply puts the format in the editor, and Undo gives the previous text back, byte for byte."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from engine.formats import load_format, load_formats
from engine.presets import load_preset
from tests.browser.conftest import screenshot
from tests.browser.test_playground import pick, share, shared_workspace


def test_search_review_run_the_examples_apply_and_undo(shared_page: Page):
    smollm3, hermes = load_preset("smollm3"), load_format("hermes")  # SmolLM3 is what a new session shows
    editor = shared_page.locator("#response-editor .cm-content")
    expect(editor).to_contain_text('"reasoning_content"')

    shared_page.click("#format-accordion button, #format-accordion .label-wrap")
    # Typed as a person types (the search listens to input events).
    shared_page.locator("#format-search input").press_sequentially("Qwen2.5")
    # Each keystroke is a search; the last one's answer says how many formats it found.
    expect(shared_page.locator("#format-status")).to_contain_text(f"1 of {len(load_formats())} formats match", timeout=20_000)
    shared_page.click("#format-picker input")
    options = shared_page.locator('#format-picker [role="option"]')
    expect(options).to_have_count(1)  # the search narrowed the library to one format
    label = f"hermes — {hermes.title}"
    expect(options.first).to_have_attribute("aria-label", label)
    options.first.click()

    box = shared_page.locator("#format-box")
    expect(box).to_be_visible()
    expect(shared_page.locator("#format-diff .del").filter(has_text='"reasoning_content"')).to_have_count(1)
    expect(shared_page.locator("#format-info")).to_contain_text("Qwen/Qwen2.5-7B-Instruct")
    expect(shared_page.locator("#format-info")).to_contain_text("5 examples")
    expect(editor).to_contain_text('"reasoning_content"')  # nothing changes until it is applied
    screenshot(shared_page, "format-review")

    # Its examples become recordings; the first one is picked for the recorded runner.
    shared_page.click("#format-examples")
    expect(shared_page.locator("#format-status")).to_contain_text("Added the case hermes examples and 5 recordings")
    expect(shared_page.locator("#recording-picker input")).to_have_value(f"hermes: {hermes.examples[0].name}  ·  hermes examples")

    shared_page.click("#format-apply")
    expect(box).to_be_hidden()
    expect(editor).not_to_contain_text('"reasoning_content"')
    expect(shared_page.locator("#draft-undo")).to_be_visible()
    expect(shared_page.locator("#response-diagnostics")).to_contain_text("Response template loads")
    assert shared_workspace(share(shared_page)).response_template == hermes.response_template_text

    # Run the example against SmolLM3's chat template with the Hermes response template.
    shared_page.click("#run-button")
    expect(shared_page.locator("#run-stats")).to_contain_text("equals the recording’s expected message", timeout=30_000)
    expect(shared_page.locator("#message-view")).to_contain_text("get_stock_fundamentals")

    pick(shared_page, "recording-picker", f"hermes: {hermes.examples[1].name}  ·  hermes examples")
    shared_page.click("#run-button")
    expect(shared_page.locator("#run-stats")).to_contain_text("equals the recording’s expected message", timeout=30_000)
    expect(shared_page.locator("#message-view")).to_contain_text("Zürich")
    screenshot(shared_page, "format-examples-run")

    shared_page.click("#draft-undo")
    expect(editor).to_contain_text('"reasoning_content"')
    expect(shared_page.locator("#draft-undo")).to_be_hidden()
    assert shared_workspace(share(shared_page)).response_template == smollm3.response_template  # byte for byte
