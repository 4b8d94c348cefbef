"""The playground in a real browser (Debian's Chromium): every preset runs a recording with its
regions highlighted, a response template mistake shows its diagnostic at the right line, Stop ends a
slow run, edits survive a reload, and a share link reopens the same state, byte for byte."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Page, expect

from app.sources import preset_choices
from app.state import decode_workspace
from engine.presets import load_preset
from tests.browser.conftest import SCREENSHOTS, open_app, screenshot


def pick(page: Page, elem_id: str, label: str) -> None:
    """Choose `label` in the Gradio dropdown `#elem_id`."""
    page.click(f"#{elem_id} input")
    page.click(f'#{elem_id} [role="option"][aria-label="{label}"]')


def set_number(page: Page, elem_id: str, value: float) -> None:
    box = page.locator(f"#{elem_id} input[type=number]")
    box.fill(str(value))
    box.press("Enter")


def editor_text_starts(page: Page, elem_id: str) -> str:
    return page.locator(f"#{elem_id} .cm-content").inner_text()


def wait_for_run(page: Page, timeout: float = 30_000) -> str:
    page.wait_for_function(
        "() => { const s = document.querySelector('#run-stats'); return s && /status(done|stopped|failed)/.test(s.textContent.replace(/\\s+/g, '')); }",
        timeout=timeout,
    )
    return page.locator("#run-stats").text_content()


def share(page: Page) -> str:
    """Press Share link and return the link."""
    box = page.locator("#share-link input")
    before = box.input_value()
    page.click("#share-button")
    page.wait_for_function(
        "(before) => { const v = document.querySelector('#share-link input').value; return v.includes('#s=') && v !== before; }",
        arg=before,
    )
    return box.input_value()


def shared_workspace(link: str):
    workspace, problem = decode_workspace(urlsplit(link).fragment.removeprefix("s="))
    assert problem is None
    return workspace


@pytest.mark.parametrize("display, name", preset_choices())
def test_each_preset_runs_a_recording_with_regions_events_and_message(shared_page: Page, display: str, name: str):
    preset = load_preset(name)
    pick(shared_page, "preset-picker", display)
    first_line = preset.chat_template.splitlines()[0].strip()
    expect(shared_page.locator("#chat-editor .cm-content")).to_contain_text(first_line[:30])
    expect(shared_page.locator("#chat-diagnostics")).to_contain_text("renders this case")
    expect(shared_page.locator("#prompt-view .tok").first).to_be_visible()
    set_number(shared_page, "pace", 0)
    shared_page.click("#run-button")
    stats = wait_for_run(shared_page)
    assert "done" in stats
    stream = shared_page.locator("#stream-view")
    # A body can arrive in several spans (one per coalesced update); a span holding only a newline
    # has no width, so look at the first with visible text.
    expect(stream.locator(".seg.body").filter(has_text=re.compile(r"\w")).first).to_be_visible()
    expect(stream.locator(".seg.delim").first).to_be_visible()
    assert shared_page.locator("#events-view tbody.inc-stable tr").count() >= 2
    expect(shared_page.locator("#message-view .cm-content")).to_contain_text('"role": "assistant"')
    recording = preset.recordings[0] if preset.recordings else None
    if recording is not None and recording.expected is not None and recording.case == preset.cases[0].name:
        expect(shared_page.locator("#run-stats")).to_contain_text("equals the recording’s expected message")
    for field in (shared_page.locator("#legend .chip").all_inner_texts())[:1]:
        assert field  # the legend names the fields
    screenshot(shared_page, f"preset-{name}")


def test_picking_a_recording_shows_its_case_and_the_tool_call_region(shared_page: Page):
    """Also the screenshot in docs/playground.md: SmolLM3, a tool call streamed with every region coloured."""
    pick(shared_page, "preset-picker", "SmolLM3")
    pick(shared_page, "recording-picker", "single tool call  ·  tools offered")
    expect(shared_page.locator("#case-name input, #case-name textarea").first).to_have_value("tools offered")
    expect(shared_page.locator("#prompt-view")).to_contain_text("get_weather")
    set_number(shared_page, "pace", 0)
    shared_page.click("#run-button")
    assert "done" in wait_for_run(shared_page)
    expect(shared_page.locator("#stream-view .seg.delim.open.f2")).to_have_text("<tool_call>")
    expect(shared_page.locator("#message-view .cm-content")).to_contain_text('"tool_calls"')
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    shared_page.set_viewport_size({"width": 1440, "height": 900})
    shared_page.evaluate("window.scrollTo(0, 0)")
    shared_page.wait_for_timeout(300)
    shared_page.screenshot(path=str(SCREENSHOTS / "playground.png"))  # the first screen of a laptop
    shared_page.locator("#output-area").screenshot(path=str(SCREENSHOTS / "playground-run.png"))


def test_step_through_and_whitespace_toggle(shared_page: Page):
    set_number(shared_page, "pace", 0)
    shared_page.click("#run-button")
    wait_for_run(shared_page)
    expect(shared_page.locator("#step-view")).to_contain_text("Move the slider to replay this run")
    set_number(shared_page, "step-slider", 3)
    expect(shared_page.locator("#step-view .step-head")).to_contain_text("Chunk 3 of")
    expect(shared_page.locator("#step-view tr.latest-row").first).to_be_visible()
    end = shared_page.locator("#step-slider input[type=number]").get_attribute("max")
    set_number(shared_page, "step-slider", float(end))
    expect(shared_page.locator("#step-view .step-head")).to_contain_text("End of output")
    shared_page.click("#show-whitespace input")
    expect(shared_page.locator("#prompt-view .ws").first).to_be_visible()
    expect(shared_page.locator("#prompt-view .gen-mark")).to_have_count(1)
    expect(shared_page.locator("#prompt-view .anchor-mark")).to_have_count(1)
    screenshot(shared_page, "step-through")


def test_a_20k_token_output_streams_completely_into_the_page(shared_page: Page):
    """Many coalesced updates, appended incrementally in pages: the page ends with exactly the output."""
    output = "<think>\n" + " ".join(f"step{i}" for i in range(8_000)) + "\n</think>\n" + " ".join(f"word{i}" for i in range(12_000)) + "<|im_end|>"
    pick(shared_page, "preset-picker", "Blank (ChatML starter)")
    expect(shared_page.locator("#chat-editor .cm-content")).to_contain_text("minimal ChatML")
    pick(shared_page, "recording-picker", "Paste an output…")
    shared_page.fill("#pasted-output textarea", output)
    set_number(shared_page, "pace", 0)
    shared_page.click("#run-button")
    assert "done" in wait_for_run(shared_page, timeout=120_000)
    shared_page.wait_for_function(
        "(n) => document.querySelector('#stream-view .stream-text').textContent.replace(/↵/g, '').length >= n",
        arg=len(output), timeout=60_000,
    )
    shown = shared_page.evaluate("document.querySelector('#stream-view .stream-text').textContent").replace("↵", "")
    assert shown == output
    # Blank has no reasoning field: everything is content up to the close delimiter.
    expect(shared_page.locator("#stream-view .seg.delim.close.f0")).to_have_text("<|im_end|>")
    screenshot(shared_page, "long-output")


def test_a_response_template_mistake_shows_its_diagnostic_at_the_right_line(shared_page: Page):
    pick(shared_page, "preset-picker", "Blank (ChatML starter)")
    expect(shared_page.locator("#response-diagnostics")).to_contain_text("Response template loads")
    content = shared_page.locator("#response-editor .cm-content")
    content.click()
    shared_page.keyboard.press("Control+Home")
    for _ in range(4):  # line 5: "  "start_anchor": ...",
        shared_page.keyboard.press("ArrowDown")
    shared_page.keyboard.press("End")
    shared_page.keyboard.press("Backspace")  # drop the comma at the end of line 5
    diagnostics = shared_page.locator("#response-diagnostics")
    expect(diagnostics).to_contain_text("Invalid JSON")
    expect(diagnostics.locator(".where")).to_have_text(re.compile(r"line 6, col \d+"))  # the next key: a comma was expected
    # A bad edit never wipes the last good prompt.
    expect(shared_page.locator("#prompt-view .prompt-text")).to_contain_text("What is the capital of France?")
    screenshot(shared_page, "response-template-diagnostic")
    shared_page.keyboard.type(",")
    expect(diagnostics).to_contain_text("Response template loads")


def test_stop_ends_a_slow_run(shared_page: Page):
    set_number(shared_page, "pace", 3)
    shared_page.click("#run-button")
    expect(shared_page.locator("#run-stats")).to_contain_text("streaming", timeout=15_000)
    expect(shared_page.locator("#stop-button")).to_be_enabled()
    shared_page.click("#stop-button")
    stats = wait_for_run(shared_page, timeout=10_000)
    assert "stopped" in stats
    tokens = int(re.search(r"tokens\s*([\d,]+)", stats).group(1).replace(",", ""))
    assert 0 < tokens < 40
    expect(shared_page.locator("#run-button")).to_be_enabled()
    screenshot(shared_page, "stopped-run")


def test_edits_survive_a_reload(page: Page, app_url: str):
    content = page.locator("#chat-editor .cm-content")
    content.click()
    page.keyboard.press("Control+Home")
    page.keyboard.type("{#- my reload edit -#}\n")
    page.click('.view-switch button[data-view="json"]')  # the messages as JSON (the conversation editor is the default)
    messages = page.locator("#messages-editor .cm-content")
    messages.click()
    page.keyboard.press("Control+a")
    page.keyboard.type('[{"role": "user", "content": "Kept across reloads"}]')
    expect(page.locator("#prompt-view")).to_contain_text("Kept across reloads")
    page.wait_for_function("() => (localStorage.getItem('template-playground/workspace') || '').length > 100")
    page.wait_for_timeout(500)
    page.reload()
    page.wait_for_selector("#prompt-view .prompt-text", timeout=60_000)
    expect(page.locator("#chat-editor .cm-content")).to_contain_text("my reload edit")
    expect(page.locator("#prompt-view")).to_contain_text("Kept across reloads")
    expect(page.locator("#top-status")).to_contain_text("Restored")


def test_a_share_link_reopens_the_same_state_byte_for_byte(shared_page: Page, browser, app_url: str):
    # A preset load must keep the template's final newline (Gradio's Code strips values the app sets).
    pick(shared_page, "preset-picker", "Blank (ChatML starter)")
    blank = load_preset("blank")
    assert blank.chat_template.endswith("\n")
    expect(shared_page.locator("#chat-editor .cm-content")).to_contain_text("minimal ChatML")
    link = share(shared_page)
    workspace = shared_workspace(link)
    assert workspace.chat_template == blank.chat_template  # what the browser holds, exactly
    assert workspace.response_template == blank.response_template

    # Change a case and a setting, then share again.
    shared_page.click("#case-add")
    expect(shared_page.locator("#case-name input, #case-name textarea").first).to_have_value("new case")
    set_number(shared_page, "pace", 7)
    link = share(shared_page)
    assert "token" not in shared_workspace(link).to_dict()["run"]

    other = browser.new_context(viewport={"width": 1500, "height": 1000})
    try:
        fresh = other.new_page()
        fresh.set_default_timeout(20_000)
        open_app(fresh, link)
        expect(fresh.locator("#top-status")).to_contain_text("share link")
        expect(fresh.locator("#chat-editor .cm-content")).to_contain_text("minimal ChatML")
        expect(fresh.locator("#prompt-view")).to_contain_text("Hello!")  # the new case is the current one
        assert fresh.locator("#pace input[type=number]").input_value() == "7"
        assert "#s=" not in fresh.url  # dropped after loading, so a reload shows later edits
        again = shared_workspace(share(fresh))
        assert again.chat_template == blank.chat_template  # the final newline survived the link
        assert [c.name for c in again.cases] == ["plain chat", "new case"]
        screenshot(fresh, "opened-share-link")
    finally:
        other.close()


def test_the_engines_matrix_opens_a_cell_and_a_result_can_be_marked_as_intended(shared_page: Page):
    # SmolLM3's `{%- generation %}` does not compile in TGI's MiniJinja (TGI strips only `{% generation %}`).
    pick(shared_page, "preset-picker", "SmolLM3")
    expect(shared_page.locator("#chat-editor .cm-content")).to_contain_text("SmolLM3 (HuggingFaceTB/SmolLM3-3B)")
    shared_page.click('#tabs button[role=tab]:has-text("Checks")')
    shared_page.click("#checks-run")
    matrix = shared_page.locator("#engines-table")
    expect(matrix).to_contain_text("✗ error", timeout=60_000)
    matrix.get_by_role("gridcell").filter(has_text="✗ error").first.click()
    detail = shared_page.locator("#engine-detail")
    expect(detail).to_contain_text("MiniJinja (TGI)")
    expect(detail).to_contain_text("unknown statement generation")
    screenshot(shared_page, "engines-matrix")

    row = shared_page.locator(".check-row").filter(has=shared_page.locator(".check-name", has_text="engines.minijinja-tgi")).first
    row.click()
    expect(shared_page.locator("#check-detail")).to_contain_text("engines.minijinja-tgi")
    shared_page.locator("#intend-why textarea, #intend-why input").first.fill("we serve with vLLM")
    shared_page.click("#intend-mark")
    expect(shared_page.locator("#intended-list")).to_contain_text("engines.minijinja-tgi")
    expect(row.locator(".check-status")).to_have_text("info")
    assert shared_workspace(share(shared_page)).round_trip_differences["engines.minijinja-tgi"] == "we serve with vLLM"


@pytest.mark.parametrize("state", ['{"v": "1"}', '{"v": 1, "cases": ' + "[" * 3000 + "]" * 3000 + "}",
                                   '{"v": 1, "cases": [{"name": "<b>x</b>", "nope": 1}]}'])
def test_a_broken_share_link_opens_the_page_with_a_message_and_is_dropped(browser, app_url: str, state: str):
    """Issue 11, item 9: a link whose state cannot be opened (a wrong version type, deep nesting, a
    case of the wrong shape) loads the page anyway, says so, and the fragment is gone at once, so a
    reload is a normal page load rather than the same failure."""
    import base64
    import zlib

    code = base64.urlsafe_b64encode(zlib.compress(state.encode())).decode().rstrip("=")
    context = browser.new_context(viewport={"width": 1500, "height": 1000})
    try:
        fresh = context.new_page()
        fresh.set_default_timeout(20_000)
        open_app(fresh, app_url + "#s=" + code)
        expect(fresh.locator("#top-status")).to_contain_text("cannot be opened")
        expect(fresh.locator("#top-status b")).to_have_count(0)  # the link's text is shown escaped
        expect(fresh.locator("#prompt-view")).to_contain_text("Hi!")  # the default preset, rendered
        assert "#s=" not in fresh.url
        fresh.reload()  # the page loads again, without the message
        fresh.wait_for_selector("#prompt-view .prompt-text", timeout=60_000)
        expect(fresh.locator("#top-status")).not_to_contain_text("cannot be opened")
    finally:
        context.close()
