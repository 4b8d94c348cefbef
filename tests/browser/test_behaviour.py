"""What changes for the model, in the page: an edit of one character in the generation prompt,
compared with the preset as it was loaded, under the chat template and in the Publish tab."""

from __future__ import annotations

import re

from playwright.sync_api import Page, expect

from engine.behaviour import standard_conversations
from engine.presets import load_preset
from tests.browser.conftest import screenshot

# The default preset's generation prompt, as its template writes it (its last line that opens an assistant turn).
GENERATION = '{{- "<|im_start|>assistant\\n'
SUMMARY = re.compile(r"The prompt changes in (\d+) of (\d+) conversations")


def type_into_generation_prompt(page: Page, text: str) -> None:
    """Put the cursor inside the generation prompt's string in the chat template and type `text`."""
    page.locator("#chat-editor .cm-content").click()
    page.evaluate("""(needle) => {
        const view = window.playgroundEditorView(document.querySelector('#chat-editor'));
        const at = view.state.doc.toString().lastIndexOf(needle) + needle.length;  // line 94, not the turns of line 80
        view.dispatch({ selection: { anchor: at }, scrollIntoView: true });
        view.focus();
    }""", GENERATION)
    page.keyboard.type(text)


def test_an_edit_shows_what_changes_for_the_model_before_publishing(shared_page: Page):
    type_into_generation_prompt(shared_page, "<b>!</b>")
    expect(shared_page.locator("#prompt-view")).to_contain_text("<b>!</b>")  # the edit reached the server
    shared_page.click("#behaviour-accordion .label-wrap")  # below the workbench, while editing
    shared_page.click("#playground-compare")
    view = shared_page.locator("#playground-behaviour")
    expect(view).to_contain_text(SUMMARY, timeout=60_000)
    changed, total = map(int, SUMMARY.search(view.inner_text()).groups())
    own = [c for c in load_preset("smollm3").cases]
    suite = standard_conversations()
    assert total == len(suite) + len(own)
    assert changed == sum(c.add_generation_prompt for c in suite + own)  # exactly those with the generation prompt
    expect(view).to_contain_text("the SmolLM3 preset as loaded → your edit")
    item = view.locator('details[data-conversation="plain chat"]')
    expect(view.locator('details[data-conversation="plain chat, no generation prompt"]')).to_have_count(0)
    expect(view.locator(".behaviour-same")).to_contain_text("plain chat, no generation prompt")
    item.locator("summary").click()
    added = item.locator(".behaviour-sides ins")
    expect(added).to_have_text("<b>!</b>")  # the visitor's markup shown as text, and marked
    expect(item.locator(".behaviour-sides del.gap")).to_have_count(1)  # where it goes in the prompt before
    expect(item.locator(".behaviour-site")).to_contain_text("now line 94")
    assert view.locator("ins b, .behaviour-prompt b").count() == 0
    screenshot(shared_page, "behaviour-playground")

    shared_page.click('#tabs button[role=tab]:has-text("Publish")')
    shared_page.click("#publish-compare")
    in_publish = shared_page.locator("#publish-behaviour")
    expect(in_publish).to_contain_text(f"The prompt changes in {changed} of {total} conversations", timeout=60_000)
    in_publish.locator('details[data-conversation="system message"] summary').click()
    expect(in_publish.locator('details[data-conversation="system message"] .behaviour-sides ins')).to_have_text("<b>!</b>")
    screenshot(shared_page, "behaviour-publish")
