"""The chat template editor marks the offending token of an error, not only its line: an unknown
filter (a compile-time error, which used to land at the end of the template) is boxed on its name."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.browser.conftest import screenshot
from tests.browser.test_playground import pick

TEMPLATE = "{% for m in messages %}\n{{ m.role }}\n{{ m.content | badfilter }}\n{% endfor %}\n"


def _type_template(page: Page, text: str) -> None:
    page.locator("#chat-editor .cm-content").click()
    page.keyboard.press("Control+A")
    page.keyboard.insert_text(text)


def test_an_unknown_filter_is_boxed_on_its_name(shared_page: Page):
    pick(shared_page, "preset-picker", "Blank (ChatML starter)")
    _type_template(shared_page, TEMPLATE)
    problem = shared_page.locator("#chat-diagnostics .diag.error").first
    expect(problem).to_contain_text("No filter named 'badfilter'")
    expect(problem).to_have_attribute("data-line", "3")
    expect(problem).to_have_attribute("data-column", "16")
    expect(problem).to_have_attribute("data-end-column", "25")
    box = shared_page.locator("#chat-editor .diag-token-layer .diag-token-error")
    expect(box).to_have_count(1)
    expect(box).to_have_attribute("data-line", "3")
    expect(box).to_have_attribute("data-from", "16")
    expect(box).to_have_attribute("data-to", "25")
    # The box covers exactly the characters of `badfilter` as the editor draws them.
    drawn = shared_page.evaluate("""() => {
        const line = [...document.querySelectorAll('#chat-editor .cm-content > .cm-line')]
            .find((el) => el.textContent.includes('badfilter'));
        const node = document.createTreeWalker(line, NodeFilter.SHOW_TEXT);
        let text; while ((text = node.nextNode()) && !text.data.includes('badfilter')) {}
        const range = document.createRange();
        const at = text.data.indexOf('badfilter');
        range.setStart(text, at); range.setEnd(text, at + 'badfilter'.length);
        const r = range.getBoundingClientRect();
        const b = document.querySelector('#chat-editor .diag-token-error').getBoundingClientRect();
        return {left: r.left - b.left, right: r.right - b.right, top: r.top - b.top};
    }""")
    assert abs(drawn["left"]) <= 1 and abs(drawn["right"]) <= 1 and abs(drawn["top"]) <= 2, drawn
    screenshot(shared_page, "error-token-marked")
    # Fixed: the box goes with the error.
    _type_template(shared_page, TEMPLATE.replace("badfilter", "trim"))
    expect(shared_page.locator("#chat-diagnostics .diag.error")).to_have_count(0)
    expect(box).to_have_count(0)
