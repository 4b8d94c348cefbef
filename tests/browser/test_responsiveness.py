"""What keeps the page as fast as the author's hands (issue 15), in Chromium: no work a keystroke or
a preset switch does not need. The figures themselves are measured by `python -m benchmarks`
(never timed here: the machine is noisy); these tests pin the causes that were fixed."""

from __future__ import annotations

from playwright.sync_api import Page, expect

TOKEN = "hf_benchSecretToken1234567890"


def test_the_browser_keeps_no_run_history(shared_page: Page):
    """Gradio 6 records every event's inputs and outputs in localStorage by default and re-reads and
    re-writes that history on every event: a keystroke paid for parsing and serialising megabytes,
    and a Hub token typed into the Publish tab (an input of its buttons) was stored in the browser."""
    editor = shared_page.locator("#chat-editor .cm-content")
    editor.click()
    shared_page.keyboard.press("Control+Home")
    shared_page.keyboard.type("x")
    expect(shared_page.locator("#prompt-view .prompt-text")).to_contain_text("x")
    shared_page.click('#tabs button[role=tab]:has-text("Publish")')
    shared_page.locator("#publish-token input").fill(TOKEN)
    shared_page.locator("#publish-repo input, #publish-repo textarea").first.fill("someone/some-model")
    shared_page.click("#publish-preview")
    expect(shared_page.locator("#publish-messages .diag")).to_be_visible(timeout=30_000)
    stored = shared_page.evaluate("Object.fromEntries(Object.keys(localStorage).map((k) => [k, localStorage.getItem(k)]))")
    assert not [key for key in stored if key.startswith("gradio:run-history")]
    assert not [key for key, value in stored.items() if TOKEN in (value or "")]


def test_a_finished_run_stays_on_screen_across_tabs(shared_page: Page):
    """A run's last message leaves the output, events and message views out (Gradio would send them
    whole once more); the views keep what they showed, also when the tab is shown again."""
    from tests.browser.test_playground import set_number, wait_for_run

    set_number(shared_page, "pace", 0)
    shared_page.click("#run-button")
    wait_for_run(shared_page)
    stream = shared_page.locator("#stream-view .inc-stable")
    shown = stream.inner_text()
    assert "<think>" in shown or shown.strip()
    rows = shared_page.locator("#events-view tbody.inc-stable tr").count()
    message = shared_page.locator("#message-view .cm-content").inner_text()
    assert rows >= 2 and '"role": "assistant"' in message
    shared_page.click('#tabs button[role=tab]:has-text("Checks")')
    shared_page.click('#tabs button[role=tab]:has-text("Playground")')
    expect(stream).to_have_text(shown)
    expect(shared_page.locator("#events-view tbody.inc-stable tr")).to_have_count(rows)
    expect(shared_page.locator("#message-view .cm-content")).to_contain_text('"content": "Hello!')
    assert shared_page.locator("#message-view .cm-content").inner_text() == message


def test_a_new_visitor_sees_the_prompt_without_waiting_for_the_server(browser, app_url: str):
    """The page is served showing the default preset and its prompt: with every event request held
    back, the prompt is still drawn (before, it waited for a load event and then a render)."""
    context = browser.new_context(viewport={"width": 1500, "height": 1000})
    page = context.new_page()
    page.route("**/gradio_api/queue/**", lambda route: route.abort())
    page.route("**/gradio_api/run/**", lambda route: route.abort())
    try:
        page.goto(app_url)
        expect(page.locator("#prompt-view .prompt-text")).to_contain_text("<|im_start|>", timeout=30_000)
        expect(page.locator("#chat-editor .cm-content")).to_contain_text("SmolLM3")
        expect(page.locator("#chat-diagnostics")).to_contain_text("renders this case")
    finally:
        context.close()


def test_picking_a_preset_asks_the_server_once(shared_page: Page):
    """Gradio's dropdown sends `input` twice for one pick: the preset is loaded on `select`, once,
    and its answer carries the prompt too (no second request for it)."""
    from tests.browser.test_playground import pick

    sent: list[str] = []
    shared_page.on("request", lambda r: sent.append(r.post_data or "") if "/gradio_api/" in r.url and r.method == "POST" else None)
    pick(shared_page, "preset-picker", "Qwen3")
    expect(shared_page.locator("#prompt-view .prompt-text")).to_contain_text("<|im_start|>user")
    expect(shared_page.locator("#chat-editor .cm-content")).to_contain_text("Qwen3")
    shared_page.wait_for_timeout(1000)
    loads = [body for body in sent if '"qwen3"' in body]
    assert len(loads) == 1, loads
