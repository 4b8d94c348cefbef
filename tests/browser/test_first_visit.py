"""The playground as a first-time author meets it (issue 13), in Chromium: the whole loop on one
laptop screen, its own order on a phone, and none of the wrong answers a new user met (a run that
outlived a preset switch, notes that lost their tokens, an error on the wrong line and unmarked in
the editor, "No changes" for a diff never made, noise stats, a silent simulation)."""

from __future__ import annotations


from playwright.sync_api import Browser, Page, expect

from engine.presets import load_preset
from tests.browser.conftest import open_app, screenshot
from tests.browser.test_playground import pick, set_number, wait_for_run

LAPTOP = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}


def box(page: Page, selector: str) -> dict:
    found = page.locator(selector).first.bounding_box()
    assert found is not None, f"{selector} is not visible"
    return found


def inside(page: Page, selector: str, height: int) -> bool:
    b = box(page, selector)
    return b["y"] >= 0 and b["y"] + b["height"] <= height


def test_the_whole_loop_fits_the_first_screen_of_a_laptop(page: Page):
    page.set_viewport_size(LAPTOP)
    page.evaluate("window.scrollTo(0, 0)")
    for selector in ("#run-button", "#stream-view", "#preset-picker", "#case-picker", "#runner-choice"):
        assert inside(page, selector, LAPTOP["height"]), (selector, box(page, selector))
    for selector in ("#chat-editor", "#prompt-view", "#response-editor"):  # seen (their top part at least)
        assert box(page, selector)["y"] < LAPTOP["height"] - 60, selector
    expect(page.locator("#start-here")).to_contain_text("Start here")
    # Run from the first screen: the output appears there, coloured.
    set_number(page, "pace", 0)
    page.evaluate("window.scrollTo(0, 0)")
    page.click("#run-button")
    assert "done" in wait_for_run(page)
    page.evaluate("window.scrollTo(0, 0)")
    assert inside(page, "#stream-view", LAPTOP["height"]), box(page, "#stream-view")
    expect(page.locator("#stream-view .seg.body").first).to_be_visible()
    # Closing "start here" is remembered.
    page.click(".start-here-close")
    expect(page.locator("#start-here")).to_be_hidden()
    page.reload()
    page.wait_for_selector("#prompt-view .prompt-text", timeout=60_000)
    expect(page.locator("#start-here")).to_be_hidden()


def test_a_phone_gets_the_output_first_and_one_editor_at_a_time(browser: Browser, app_url: str):
    context = browser.new_context(viewport=PHONE)
    phone = context.new_page()
    try:
        open_app(phone, app_url)
        assert box(phone, "#run-button")["y"] < PHONE["height"]
        assert box(phone, "#stream-view")["y"] < box(phone, "#chat-editor")["y"] < box(phone, "#prompt-view")["y"]
        expect(phone.locator("#response-editor")).to_be_hidden()
        phone.click('.editor-switch button[data-show="response"]')
        expect(phone.locator("#response-editor")).to_be_visible()
        expect(phone.locator("#chat-editor")).to_be_hidden()
        assert phone.evaluate("document.body.scrollHeight") < 5000  # was 6,857 px before
        screenshot(phone, "phone")
    finally:
        context.close()


def test_a_run_is_cleared_when_the_preset_changes_and_left_out_of_the_checks(shared_page: Page):
    pick(shared_page, "preset-picker", "SmolLM3")
    set_number(shared_page, "pace", 0)
    shared_page.click("#run-button")
    assert "done" in wait_for_run(shared_page)
    expect(shared_page.locator("#run-stats")).to_contain_text("equals the recording")
    pick(shared_page, "preset-picker", "gpt-oss (harmony)")
    expect(shared_page.locator("#chat-editor .cm-content")).to_contain_text("harmony", ignore_case=True)
    expect(shared_page.locator("#stream-view")).to_contain_text("Press Run")
    expect(shared_page.locator("#run-stats")).not_to_contain_text("equals the recording")
    shared_page.click('#tabs button[role=tab]:has-text("Checks")')
    shared_page.click("#checks-run")
    expect(shared_page.locator("#checks-summary .checks-summary")).to_be_visible(timeout=60_000)
    expect(shared_page.locator("#checks-list")).not_to_contain_text("run 1")  # no result about a run of another preset


def test_an_edit_marks_the_run_stale(shared_page: Page):
    set_number(shared_page, "pace", 0)
    shared_page.click("#run-button")
    wait_for_run(shared_page)
    shared_page.click("#chat-editor .cm-content")
    shared_page.keyboard.press("Control+End")
    shared_page.keyboard.insert_text("{# an edit #}")
    expect(shared_page.locator("#run-note")).to_contain_text("ran with other templates")


def test_about_this_format_keeps_every_token(shared_page: Page):
    pick(shared_page, "preset-picker", "SmolLM3")
    shared_page.click("#notes-accordion button, #notes-accordion .label-wrap")
    notes = shared_page.locator("#preset-notes")
    expect(notes).to_contain_text("<|im_end|>")
    expect(notes).to_contain_text("<think>")
    expect(notes.locator("code.tok").first).to_be_visible()
    expect(notes.locator("li")).to_have_count(len(load_preset("smollm3").notes))


BROKEN_ON_LINE_11 = "".join(f"line {n}\n" for n in range(1, 11)) + "{% if messages %}\n{{ x }}\n"


def test_a_syntax_error_is_on_its_line_and_marked_in_the_editor(shared_page: Page):
    pick(shared_page, "preset-picker", "Blank (ChatML starter)")
    editor = shared_page.locator("#chat-editor .cm-content")
    editor.click()
    shared_page.keyboard.press("Control+A")
    shared_page.keyboard.insert_text(BROKEN_ON_LINE_11)
    diagnostics = shared_page.locator("#chat-diagnostics")
    expect(diagnostics.locator(".diag.error")).to_be_visible()
    expect(diagnostics.locator(".diag.error").first).to_have_attribute("data-line", "11")
    gutter = shared_page.locator("#chat-editor .cm-lineNumbers .cm-gutterElement.diag-gutter-error")
    expect(gutter).to_have_count(1)
    expect(gutter).to_have_text("11")
    expect(shared_page.locator("#chat-editor .cm-line.diag-line-error")).to_contain_text("{% if messages %}")
    screenshot(shared_page, "error-marked-in-editor")


def test_publish_never_says_no_changes_for_a_diff_it_could_not_make(shared_page: Page):
    shared_page.click('#tabs button[role=tab]:has-text("Publish")')
    shared_page.locator("#publish-repo input, #publish-repo textarea").first.fill("someone/some-model")
    shared_page.click("#publish-preview")
    expect(shared_page.locator("#publish-messages .diag.error")).to_be_visible(timeout=30_000)
    expect(shared_page.locator("#publish-diff")).to_contain_text("could not be read")
    expect(shared_page.locator("#publish-diff")).not_to_contain_text("No changes")
    shared_page.click("#publish-download")
    link = shared_page.locator("#publish-zip a.zip-link").first
    expect(link).to_have_attribute("download", "templates.zip")  # not templates-templates.zip


def test_an_instant_replay_says_so_instead_of_a_rate(shared_page: Page):
    set_number(shared_page, "pace", 0)
    shared_page.click("#run-button")
    stats = wait_for_run(shared_page)
    assert "instant replay" in stats and "tokens/s" in stats


def test_a_simulation_says_what_the_template_drops(shared_page: Page):
    pick(shared_page, "preset-picker", "SmolLM3")
    pick(shared_page, "case-picker", "tools offered")
    pick(shared_page, "runner-choice", "Simulated")
    set_number(shared_page, "pace", 0)
    shared_page.click("#run-button")
    wait_for_run(shared_page)
    diagnostics = shared_page.locator("#run-diagnostics")
    expect(diagnostics).to_contain_text("does not write `reasoning_content`, `tool_calls`")
    expect(diagnostics).not_to_contain_text("Parsed without problems")


def test_the_events_dirty_column_is_explained(shared_page: Page):
    expect(shared_page.locator("#events-panel").first).to_contain_text("dirty: yes for the raw text of a structured region")
    assert "parsed when it closes" in shared_page.locator("#events-view th").last.get_attribute("title")


def test_checks_put_what_needs_attention_first_and_jump_to_the_line(shared_page: Page):
    pick(shared_page, "preset-picker", "SmolLM3")
    shared_page.click('#tabs button[role=tab]:has-text("Checks")')
    shared_page.click("#checks-run")
    first = shared_page.locator("#checks-list .check-row").first
    expect(first).to_be_visible(timeout=60_000)
    assert "warn" in first.get_attribute("class") or "fail" in first.get_attribute("class")
    expect(shared_page.locator("#checks-list details.passed .check-row").first).to_be_hidden()  # passes folded
    jump = shared_page.locator("#checks-list .check-row .check-jump[data-source=chat_template]").first
    line = jump.get_attribute("data-line")
    name = jump.locator("xpath=ancestor::div[contains(@class,'check-row')]").locator(".check-name").text_content()
    jump.click()
    expect(shared_page.locator("#chat-editor")).to_have_attribute("data-jumped-to", line)
    expect(shared_page.locator("#chat-group .jump-note")).to_contain_text(name)
    expect(shared_page.locator("#chat-group .jump-note")).to_contain_text(f"Line {line}")
    expect(shared_page.locator("#chat-editor .cm-line.jump-line")).to_have_count(1)
    screenshot(shared_page, "jumped-to-line")
