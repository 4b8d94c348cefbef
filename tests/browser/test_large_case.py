"""Issue 29, item 5: the browser has budgets too. A 541-byte share link (one case of 2,000 empty
messages) froze the tab for 75 s: the conversation editor drew every card and sized each textarea
with a forced layout (quadratic). With the largest case a workspace may hold, the tab stays
responsive: the editor draws a page of cards (the rest reached by Next and Last), and no card forces
a layout of its own. "Responsive" is a page script answering within 1 s after the page has loaded
(generous for a shared 2-core machine; a frozen tab answers after a minute)."""

from __future__ import annotations

import json
from functools import lru_cache

from playwright.sync_api import Browser, Page
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from app.state import encode_workspace
from engine.cases import Case
from engine.presets import load_preset
from engine.workspace import Workspace, workspace_from_json

from .conftest import screenshot


@lru_cache(maxsize=1)
def largest_case() -> tuple[str, int]:
    """The share code of the default preset with one case of as many empty messages as a workspace
    may hold (a share link is opened within engine.budget's limits), and that count."""
    workspace = Workspace.from_preset(load_preset("smollm3"))

    def holding(count: int) -> Workspace:
        workspace.cases = [Case("huge", [{"role": "user", "content": ""} for _ in range(count)])]
        workspace.case_name = "huge"
        return workspace

    def opens(count: int) -> bool:
        raw = json.dumps(holding(count).to_dict(), separators=(",", ":")).encode()
        return workspace_from_json(raw)[0] is not None

    low, high = 1, 100_000
    while low < high:  # the most messages a link's workspace may hold
        middle = (low + high + 1) // 2
        low, high = (middle, high) if opens(middle) else (low, middle - 1)
    return encode_workspace(holding(low)), low


def answers_within(page: Page, seconds: float, times: int = 5) -> int:
    """How many of `times` page scripts, a fraction of a second apart, were not answered within `seconds`."""
    late = 0
    for _ in range(times):
        try:
            page.wait_for_function("() => true", timeout=seconds * 1000)
        except PlaywrightTimeout:
            late += 1
        page.wait_for_timeout(300)
    return late


def test_a_share_link_of_the_largest_case_leaves_the_tab_responsive(browser: Browser, app_url: str) -> None:
    code, count = largest_case()
    assert count >= 2_000 and len(code) < 20_000  # a link of a few kB
    context = browser.new_context(viewport={"width": 1500, "height": 1000})
    page = context.new_page()
    try:
        page.goto(f"{app_url}#s={code}")
        page.wait_for_selector(f'#conversation[data-count="{count}"]', timeout=120_000)
        # (at most one late answer: the machine is shared; a frozen tab misses every one)
        assert answers_within(page, 1.0) <= 1
        cards = page.locator("#conversation .conv-message")
        assert 0 < cards.count() <= 100  # a page of cards, not thousands
        # The JSON view behind the cards draws the lines it would show, not the document's 37,000.
        assert page.locator("#messages-editor .cm-line").count() < 500
        pager = page.locator("#conversation .conv-pager").first
        assert f"of {count:,}" in pager.inner_text() and "more…" in pager.inner_text()
        # The rest is reached: the next page, and the last message.
        first_shown = int(cards.nth(0).get_attribute("data-message"))
        shown = cards.count()
        pager.locator("button:has-text('Next')").click()
        page.wait_for_selector(f'#conversation [data-message="{first_shown + shown}"]')
        page.locator("#conversation .conv-pager").first.locator("button:has-text('Last')").click()
        page.wait_for_selector(f'#conversation [data-message="{count - 1}"]')
        assert answers_within(page, 1.0, times=3) <= 1
        screenshot(page, "largest-case")
    finally:
        context.close()


def test_a_card_edited_on_a_later_page_writes_its_own_message(page: Page) -> None:
    """With the cards paged, each card still edits its own message of the JSON view (not the one at
    its place on the page): a message added lands on the last page, and is written there."""
    page.evaluate("""() => {
        const view = document.querySelector('#messages-editor .cm-content').cmTile.view;
        const many = Array.from({length: 120}, (_, i) => ({role: i % 2 ? 'assistant' : 'user', content: `m${i}`}));
        view.dispatch({changes: {from: 0, to: view.state.doc.length, insert: JSON.stringify(many, null, 2)},
                       userEvent: 'input.type'});
    }""")
    page.wait_for_selector('#conversation[data-count="120"]')
    page.click("#conversation .conv-add")
    page.wait_for_selector('#conversation [data-message="120"] .conv-content')
    page.locator('#conversation [data-message="120"] .conv-content').fill("the new one")
    page.wait_for_function("""() => {
        const view = document.querySelector('#messages-editor .cm-content').cmTile.view;
        const messages = JSON.parse(view.state.doc.toString());
        return messages.length === 121 && messages[120].content === 'the new one' && messages[0].content === 'm0';
    }""")
