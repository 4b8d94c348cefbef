"""The page for authors and classrooms (issue 23), in Chromium: each template beside what it makes on
a laptop's first screen for every preset, no label cut at 1280 px or on a phone, axe-core's WCAG 2
A/AA audit with no serious or critical violation in both themes, region kinds that do not depend on
colour, the page used by keyboard alone, the conversation editor in step with the JSON view, the
presentation mode, and diagnostics marked when they change rather than on a timer."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from app.sources import preset_choices
from tests.browser import axe
from tests.browser.conftest import open_app, screenshot
from tests.browser.test_playground import pick, set_number, wait_for_run
from tests.browser.test_presentation import FRAMES, LESSON_JS, prompts, wait_for_prompt

LAPTOP = {"width": 1440, "height": 900}
NARROW_LAPTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def axe_installed() -> None:
    problem = axe.install()
    assert problem is None, problem


def visible_height(page: Page, selector: str) -> float:
    """How many pixels of `selector` are inside the window (scrolled to the top)."""
    return page.evaluate(
        """(sel) => { const r = document.querySelector(sel).getBoundingClientRect();
                      return Math.max(0, Math.min(r.bottom, innerHeight) - Math.max(r.top, 0)); }""",
        selector,
    )


def line_height(page: Page, editor: str) -> float:
    """The height of one line of text in a code editor (a wrapped line is several)."""
    return page.evaluate("(sel) => window.playgroundEditorView(document.querySelector(sel)).defaultLineHeight", editor)


# Text a person reads as a control's name or a heading; "cut" when a box that hides its overflow
# (not one that scrolls) ends before the text does.
CUT_LABELS_JS = """() => {
  const selector = '[data-testid="block-info"], [data-testid="block-label"], .label-text, label, button, .label-wrap span, '
    + '.panel-title, .conv-label, legend, .chip, [role=tab], .view-switch button, .header .title, .header .version';
  const cut = [];
  for (const el of document.querySelectorAll(selector)) {
    const r = el.getBoundingClientRect();
    if (r.width <= 1 || r.height <= 1 || el.closest('.cm-editor, [aria-hidden=true]')) continue;  // hidden, or for screen readers only
    if (getComputedStyle(el).visibility === 'hidden') continue;
    let why = null;
    if (el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX !== 'visible') why = 'its own box';
    if (r.right > innerWidth + 1 || r.left < -1) why = 'the window';
    for (let a = el.parentElement; a && !why; a = a.parentElement) {
      const s = getComputedStyle(a);
      if (s.overflowX === 'auto' || s.overflowX === 'scroll') break;  // scrolled into view, not cut
      if (s.overflowX === 'hidden' || s.overflowX === 'clip') {
        const b = a.getBoundingClientRect();
        if (r.right > b.right + 1 || r.left < b.left - 1) why = 'a box that hides overflow: ' + (a.id || a.className);
      }
    }
    if (why) cut.push(`${el.tagName}.${el.className} “${el.textContent.trim().slice(0, 40)}” cut by ${why}`);
  }
  return cut;
}"""


def cut_labels(page: Page) -> list[str]:
    return page.evaluate(CUT_LABELS_JS)


def test_each_template_beside_what_it_makes_on_a_laptop_screen_for_every_preset(shared_page: Page):
    shared_page.set_viewport_size(LAPTOP)
    for display, name in preset_choices():
        pick(shared_page, "preset-picker", display)
        expect(shared_page.locator("#chat-diagnostics")).to_contain_text("renders this case")
        shared_page.evaluate("window.scrollTo(0, 0)")
        run = shared_page.locator("#run-button").bounding_box()
        assert run and run["y"] >= 0 and run["y"] + run["height"] <= LAPTOP["height"], (name, run)
        for editor in ("#chat-editor", "#response-editor"):
            lines = visible_height(shared_page, f"{editor} .cm-scroller") / line_height(shared_page, editor)
            assert lines >= 8, (name, editor, lines)  # several lines of each template on the first screen
        chat, response = (shared_page.locator(f"{e} .cm-scroller").bounding_box() for e in ("#chat-editor", "#response-editor"))
        prompt, stream = (shared_page.locator(s).bounding_box() for s in ("#prompt-view", "#stream-view"))
        assert chat["x"] + chat["width"] <= prompt["x"] and response["x"] + response["width"] <= stream["x"], name
        assert visible_height(shared_page, "#prompt-view") >= 120, name
        assert visible_height(shared_page, "#stream-view") >= 120 and visible_height(shared_page, "#message-view") >= 120, name
        assert not cut_labels(shared_page), (name, cut_labels(shared_page))
        # The prompt grows with its text (the output keeps its least) and opens at its end (issue 34).
        wait_for_prompt(shared_page, next(iter(prompts(name).values())))
        shared_page.evaluate(FRAMES)
        seen = shared_page.evaluate(LESSON_JS)
        assert seen["genSeen"] and seen["inWindow"], (name, seen)
        if seen["fits"]:
            assert seen["top"] == 0 and not seen["above"] and not seen["below"], (name, seen)
        else:
            assert seen["atEnd"] and seen["above"].startswith("↑ Earlier text above") and not seen["below"], (name, seen)
            assert visible_height(shared_page, "#stream-view") <= 150, name  # the prompt took what the output could give
    screenshot(shared_page, "laptop-first-screen")
    # A reader who scrolled up keeps their place while the template is edited; "later text below" takes
    # them back to the end; another preset opens at its end again.
    pick(shared_page, "preset-picker", "SmolLM3")
    wait_for_prompt(shared_page, next(iter(prompts("smollm3").values())))
    shared_page.click("#prompt-view .prompt-edge.above button")
    shared_page.wait_for_function("document.getElementById('prompt-view').scrollTop === 0")
    shared_page.locator("#chat-editor .cm-content").click()
    shared_page.keyboard.press("Control+Home")
    shared_page.keyboard.type("x")
    shared_page.wait_for_function("document.querySelector('#prompt-view .prompt-text').textContent.startsWith('x')")
    shared_page.evaluate(FRAMES)
    assert shared_page.evaluate("document.getElementById('prompt-view').scrollTop") == 0
    shared_page.click("#prompt-view .prompt-edge.below button")
    shared_page.wait_for_function("(() => { const v = document.getElementById('prompt-view'); return v.scrollHeight - v.clientHeight - v.scrollTop <= 2; })()")
    expect(shared_page.locator("#prompt-view .prompt-edge.below")).to_be_hidden()
    # A hidden note keeps no count of its own (a page left scrolled is then like one never scrolled).
    expect(shared_page.locator("#prompt-view .prompt-edge.below button")).to_have_text("")


def test_no_label_is_cut_at_1280_px_nor_on_a_phone(shared_page: Page):
    pick(shared_page, "preset-picker", "gpt-oss (harmony)")  # the preset with the most kwargs and fields
    expect(shared_page.locator("#chat-diagnostics")).to_contain_text("renders this case")
    for size in (NARROW_LAPTOP, PHONE):
        shared_page.set_viewport_size(size)
        shared_page.wait_for_function("(w) => document.documentElement.clientWidth <= w", arg=size["width"])
        assert not cut_labels(shared_page), (size, cut_labels(shared_page))
        # The case's controls have room for their names and help (they were one word a line).
        widths = shared_page.evaluate("""() => [...document.querySelectorAll('#kwarg-controls > .form > *')]
            .filter((e) => e.getBoundingClientRect().height).map((e) => e.getBoundingClientRect().width)""")
        assert widths and min(widths) >= min(220, size["width"] - 80), (size, widths)
        screenshot(shared_page, f"labels-{size['width']}")
    assert shared_page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]  # nothing wider than a phone


def test_the_format_notes_open_in_a_panel_wide_enough_for_prose(shared_page: Page):
    shared_page.set_viewport_size(LAPTOP)
    pick(shared_page, "preset-picker", "Qwen3")
    shared_page.click("#notes-accordion .label-wrap")
    panel = shared_page.locator('#notes-accordion > [data-testid="accordion-content"]')
    expect(panel.locator("li").first).to_be_visible()
    box = panel.bounding_box()
    assert box["width"] >= 560 and box["x"] >= 0 and box["x"] + box["width"] <= LAPTOP["width"], box
    workbench = shared_page.locator("#workbench").bounding_box()
    assert shared_page.locator("#header-row").bounding_box()["height"] < 80  # the header stays one line: the panel opens over the page
    assert workbench["y"] < 300


def test_the_row_under_the_workbench_uses_its_width(shared_page: Page):
    shared_page.set_viewport_size(LAPTOP)
    row, case, side = (shared_page.locator(s).bounding_box() for s in ("#details-row", "#case-area", "#side-area"))
    assert case["width"] >= 0.55 * row["width"], (case, row)
    assert case["width"] + side["width"] >= 0.97 * row["width"] and side["x"] > case["x"]
    assert abs(case["y"] - side["y"]) < 2  # side by side, not stacked


def settled(page: Page, *selectors: str) -> None:
    """Wait until Gradio has stopped fading `selectors` (it dims an output while an event that
    writes it runs, and fades it back in): what axe measures is what a person then reads."""
    page.wait_for_function(
        """(sels) => sels.every((sel) => { for (let e = document.querySelector(sel); e; e = e.parentElement) {
                                              if (getComputedStyle(e).opacity !== '1') return false; }
                                            return true; })""",
        arg=list(selectors),
    )


def audit_states(page: Page, theme: str) -> dict[str, list[dict]]:
    """axe's serious and critical violations on the first screen, after a run, on Checks and on Publish."""
    found = {"first screen": axe.serious(axe.audit(page))}
    set_number(page, "pace", 0)
    page.click("#run-button")
    assert "done" in wait_for_run(page)
    settled(page, "#stream-view", "#events-view", "#message-view")
    found["after a run"] = axe.serious(axe.audit(page))
    page.click('#tabs button[role=tab]:has-text("Checks")')
    page.click("#checks-run")
    expect(page.locator("#checks-summary .checks-summary")).to_be_visible(timeout=90_000)
    expect(page.locator("#engines-table")).to_contain_text("MiniJinja", timeout=30_000)
    settled(page, "#checks-summary", "#checks-list .check-row", "#engines-table")
    found["Checks"] = axe.serious(axe.audit(page))
    page.click('#tabs button[role=tab]:has-text("Publish")')
    expect(page.locator("#publish-preview")).to_be_visible()
    found["Publish"] = axe.serious(axe.audit(page))
    screenshot(page, f"axe-{theme}")
    return found


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_axe_finds_no_serious_or_critical_violation(browser: Browser, app_url: str, axe_installed: None, theme: str):
    context = browser.new_context(viewport=LAPTOP, color_scheme=theme)
    try:
        audited = context.new_page()
        audited.set_default_timeout(20_000)
        open_app(audited, app_url + ("?__theme=dark" if theme == "dark" else ""))
        assert audited.evaluate("document.body.classList.contains('dark')") == (theme == "dark")
        found = audit_states(audited, theme)
        assert not any(found.values()), "\n".join(f"{state}:\n{axe.describe(v)}" for state, v in found.items() if v)
    finally:
        context.close()


def test_region_kinds_keep_their_meaning_without_colour(shared_page: Page):
    """Delimiters boxed, dropped text struck through, held-back text dashed: in the legend and in the
    output itself (read in a grey-scale or colour-blind view, the kinds still differ)."""
    pick(shared_page, "preset-picker", "gpt-oss (harmony)")
    expect(shared_page.locator("#chat-editor .cm-content")).to_contain_text("harmony", ignore_case=True)
    pick(shared_page, "recording-picker", "Paste an output…")
    # Text no region claims (dropped), a delimiter, and a partial delimiter at the end (held back).
    shared_page.fill("#pasted-output textarea", "stray<|channel|>final<|message|>Hi<|ret")
    set_number(shared_page, "pace", 0)
    shared_page.click("#run-button")
    wait_for_run(shared_page)
    style = """(el) => { const s = getComputedStyle(el);
        return {shadow: s.boxShadow, outline: s.outlineStyle, border: s.borderTopStyle, under: s.borderBottomStyle,
                line: s.textDecorationLine}; }"""
    for where in ("#legend", "#stream-view"):
        delimiter = shared_page.locator(f"{where} .delim").first.evaluate(style)
        assert delimiter["shadow"] != "none" or delimiter["outline"] != "none" or delimiter["border"] != "none", delimiter
    for where, selector in (("#legend", ".chip.discarded"), ("#stream-view", ".seg.discarded")):
        assert "line-through" in shared_page.locator(f"{where} {selector}").first.evaluate(style)["line"]
    assert shared_page.locator("#legend .chip.pending").evaluate(style)["border"] == "dashed"
    # Held back until the output ends (then it is content): the step-through shows it, after the last chunk.
    end = float(shared_page.locator("#step-slider input[type=number]").get_attribute("max"))
    set_number(shared_page, "step-slider", end - 1)
    held = shared_page.locator("#step-view .seg.pending")
    expect(held).to_have_text("<|ret")
    assert "dashed" in (held.evaluate(style)["outline"], held.evaluate(style)["under"])


def focused(page: Page) -> dict:
    return page.evaluate("""() => { const e = document.activeElement; const home = e.closest('[id]');
        return {id: home ? home.id : '', tag: e.tagName, editor: e.classList.contains('cm-content'),
                name: e.getAttribute('aria-label') || (e.textContent || '').trim().slice(0, 40)}; }""")


def test_the_page_is_usable_by_keyboard_alone(shared_page: Page):
    """Tab reaches every control (a code editor is left with Esc then Tab, as its note says), and a
    run is started with Ctrl+Enter and stopped with Esc."""
    shared_page.set_viewport_size(LAPTOP)
    shared_page.evaluate("document.activeElement && document.activeElement.blur()")
    reached: list[dict] = []
    for _ in range(150):
        if reached and reached[-1]["editor"]:
            expect(shared_page.locator(f"#{reached[-1]['id']} .kbd-hint")).to_be_visible()
            shared_page.keyboard.press("Escape")
        shared_page.keyboard.press("Tab")
        now = focused(shared_page)
        if now["tag"] == "BODY" or (reached and now == reached[0]):
            break
        reached.append(now)
    ids = {r["id"] for r in reached}
    for control in ("preset-picker", "case-picker", "runner-choice", "recording-picker", "run-button", "chat-editor",
                    "response-editor", "draft-button", "show-tokens", "show-whitespace", "prompt-view", "case-name",
                    "conversation", "kw-add-generation-prompt", "case-more", "pace", "tokenizer-accordion", "present-toggle",
                    "notes-accordion", "share-button"):  # fmt: skip
        assert control in ids, (control, sorted(ids))
    assert any(r["name"] == "Remove message 1" for r in reached)
    # Every visible control is in the tab order.
    untabbable = shared_page.evaluate("""() => [...document.querySelectorAll('button, input, select, textarea, a[href]')]
        .filter((e) => e.getBoundingClientRect().width && !e.disabled && e.tabIndex < 0 && !e.closest('[aria-hidden=true]'))
        .map((e) => e.outerHTML.slice(0, 80))""")
    assert not untabbable, untabbable

    # Run from the keyboard: Ctrl+Enter in the chat template runs (and adds no line to it) ...
    set_number(shared_page, "pace", 0)
    shared_page.locator("#chat-editor .cm-content").focus()
    before = shared_page.evaluate("window.playgroundEditorView(document.getElementById('chat-editor')).state.doc.toString()")
    shared_page.keyboard.press("Control+Enter")
    assert "done" in wait_for_run(shared_page)
    after = shared_page.evaluate("window.playgroundEditorView(document.getElementById('chat-editor')).state.doc.toString()")
    assert after == before
    # ... and Esc stops a slow run.
    set_number(shared_page, "pace", 3)
    shared_page.locator("#prompt-view").focus()
    shared_page.keyboard.press("Control+Enter")
    expect(shared_page.locator("#stop-button")).to_be_enabled(timeout=15_000)
    shared_page.keyboard.press("Escape")
    assert "stopped" in wait_for_run(shared_page, timeout=10_000)
    # A check's result is selected from the keyboard as by a click (to mark it as intended).
    shared_page.click('#tabs button[role=tab]:has-text("Checks")')
    shared_page.locator("#checks-run").press("Enter")
    first = shared_page.locator("#checks-list .check-row").first
    expect(first).to_be_visible(timeout=90_000)
    first.focus()
    shared_page.keyboard.press("Enter")
    expect(first).to_have_attribute("aria-current", "true")
    expect(shared_page.locator("#check-detail")).to_contain_text(first.locator(".check-name").inner_text())


def json_view(page: Page) -> str:
    return page.evaluate("window.playgroundEditorView(document.getElementById('messages-editor')).state.doc.toString()")


def test_the_conversation_editor_stays_in_step_with_the_json_view(shared_page: Page, axe_installed: None):
    import json

    pick(shared_page, "preset-picker", "Qwen3")
    pick(shared_page, "case-picker", "tools offered")
    # The case shown before the conversation is edited (its answer would replace an edit made sooner).
    expect(shared_page.locator("#prompt-view")).to_contain_text("Copenhagen")
    conversation = shared_page.locator("#conversation")
    expect(conversation).to_have_attribute("data-count", "1")
    # A reply with a tool call, typed as a conversation.
    shared_page.click("#conversation .conv-add")
    last = conversation.locator('[data-message="1"]')
    expect(last.locator(".conv-role")).to_have_value("assistant")
    shared_page.keyboard.type("Let me check.")
    last.get_by_role("button", name="+ tool call").click()
    shared_page.keyboard.type("get_weather")
    last.get_by_label("Arguments of tool call 1 of message 2 (JSON)").fill('{"city": "Paris"}')
    expect(shared_page.locator("#prompt-view")).to_contain_text('"city": "Paris"')  # rendered by the server, from the JSON
    shared_page.click('.view-switch button[data-view="json"]')
    expect(shared_page.locator("#messages-editor")).to_be_visible()
    expect(conversation).to_be_hidden()
    messages = json.loads(json_view(shared_page))
    assert messages[1] == {"role": "assistant", "content": "Let me check.",
                           "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]}
    # An edit in the JSON view shows in the conversation.
    shared_page.click("#messages-editor .cm-content")
    shared_page.keyboard.press("Control+a")
    shared_page.keyboard.insert_text(json.dumps([messages[0], {"role": "system", "content": "Be brief."}, *messages[1:]], indent=2))
    shared_page.click('.view-switch button[data-view="conversation"]')
    expect(conversation).to_have_attribute("data-count", "3")
    expect(conversation.locator('[data-message="1"] .conv-role')).to_have_value("system")
    # Reorder and remove, content parts.
    conversation.get_by_role("button", name="Move message 2 up").click()
    assert [m["role"] for m in json.loads(json_view(shared_page))] == ["system", "user", "assistant"]
    conversation.get_by_role("button", name="Remove message 1").click()
    first = conversation.locator('[data-message="0"]')
    first.get_by_role("button", name="Use content parts").click()
    first.get_by_label("Type of the part to add to message 1").select_option("image")
    first.get_by_role("button", name="+ part").click()
    shared_page.keyboard.type("https://example.com/cat.png")
    content = json.loads(json_view(shared_page))[0]["content"]
    assert content[1] == {"type": "image", "url": "https://example.com/cat.png"} and content[0]["type"] == "text"
    assert not axe.serious(axe.audit(shared_page, "#case-panel")), axe.describe(axe.serious(axe.audit(shared_page, "#case-panel")))
    # A broken edit in the JSON view: a located diagnostic, the text kept, the conversation not writable.
    shared_page.click('.view-switch button[data-view="json"]')
    shared_page.click("#messages-editor .cm-content")
    shared_page.keyboard.press("Control+End")
    shared_page.keyboard.press("Backspace")
    broken = json_view(shared_page)
    diagnostic = shared_page.locator("#case-diagnostics .diag.error")
    expect(diagnostic).to_contain_text("Messages: invalid JSON")
    expect(diagnostic.locator(".where")).to_contain_text("line")
    shared_page.click('.view-switch button[data-view="conversation"]')
    expect(conversation).to_have_attribute("data-broken", "true")
    expect(conversation.locator(".conv-banner")).to_be_visible()
    expect(conversation.locator("textarea").first).to_be_disabled()  # in a disabled fieldset
    shared_page.click('.view-switch button[data-view="json"]')
    assert json_view(shared_page) == broken  # nothing typed is lost
    expect(diagnostic).to_be_visible()
    screenshot(shared_page, "conversation-broken-json")
    shared_page.click("#messages-editor .cm-content")
    shared_page.keyboard.press("Control+End")
    shared_page.keyboard.type("]")
    expect(shared_page.locator("#case-diagnostics")).to_contain_text("Case OK")
    shared_page.click('.view-switch button[data-view="conversation"]')
    expect(conversation).to_have_attribute("data-broken", "false")


@pytest.fixture
def presenting(browser: Browser, app_url: str) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 720})
    opened = context.new_page()
    opened.set_default_timeout(20_000)
    open_app(opened, app_url + "?present=1")
    yield opened
    context.close()


def test_presentation_mode_shows_only_the_teaching_flow_in_larger_type(presenting: Page):
    html = presenting.locator("html")
    expect(html).to_have_class(re.compile(r"\bpresenting\b"))
    expect(presenting.locator("#present-toggle")).to_have_attribute("aria-pressed", "true")
    for hidden in ("#chat-group", "#response-group", "#details-row", "#step-panel", "#tabs [role=tablist]"):
        expect(presenting.locator(hidden).first).to_be_hidden()
    expect(presenting.locator("#walk-box .walk-link")).to_be_visible()  # a link to the walk's step is shared from here
    # conversation → prompt, then output → parsed message, in reading order
    conversation = presenting.locator("#present-conversation #conversation")
    expect(conversation.locator(".conv-message")).to_have_count(1)
    size = "(sel) => parseFloat(getComputedStyle(document.querySelector(sel)).fontSize)"
    large = presenting.evaluate(size, "#prompt-view .prompt-text")
    # Before a run the output is its title alone: the room is the prompt's.
    expect(presenting.locator("#stream-view")).to_be_hidden()
    presenting.keyboard.press("Control+Enter")  # the teacher runs from the keyboard (the run options are hidden)
    assert "done" in wait_for_run(presenting)
    expect(presenting.locator("#message-view .cm-content")).to_contain_text('"role": "assistant"')
    boxes = {s: presenting.locator(s).bounding_box() for s in ("#present-conversation", "#prompt-view", "#stream-view", "#message-view")}
    assert boxes["#present-conversation"]["x"] < boxes["#prompt-view"]["x"]
    assert boxes["#prompt-view"]["y"] < boxes["#stream-view"]["y"] and boxes["#stream-view"]["x"] < boxes["#message-view"]["x"]
    screenshot(presenting, "presentation")
    # The walk's bar leaves it (the header is left out in the mode), and the address follows (so it can
    # be bookmarked either way).
    presenting.click("#walk-box [data-present-toggle]")
    expect(html).not_to_have_class(re.compile(r"\bpresenting\b"))
    assert "present=" not in presenting.url
    expect(presenting.locator("#chat-editor")).to_be_visible()
    expect(presenting.locator("#case-panel #conversation")).to_be_visible()
    assert large >= 1.4 * presenting.evaluate(size, "#prompt-view .prompt-text")  # larger type for the projector
    presenting.click("#present-toggle")
    assert "present=1" in presenting.url


BROKEN_ON_LINE_3 = "line 1\nline 2\n{% if messages %}\n"


def test_diagnostics_are_marked_when_they_change_not_on_a_timer(shared_page: Page):
    pick(shared_page, "preset-picker", "Blank (ChatML starter)")
    shared_page.click("#chat-editor .cm-content")
    shared_page.keyboard.press("Control+A")
    shared_page.keyboard.insert_text(BROKEN_ON_LINE_3)
    gutter = shared_page.locator("#chat-editor .cm-gutterElement.diag-gutter-error")
    expect(gutter).to_have_text("3")
    # Once the page is quiet (every answer to the edit drawn), take the mark away by hand: nothing puts
    # it back while nothing changes (a timer would, within a second).
    shared_page.evaluate("""() => new Promise((done) => {
        let last = performance.now();
        const seen = new MutationObserver(() => { last = performance.now(); });
        seen.observe(document.body, {childList: true, subtree: true, characterData: true});
        const check = () => { if (performance.now() - last > 1000) { seen.disconnect(); done(); } else setTimeout(check, 100); };
        check();
    })""")
    shared_page.evaluate("document.querySelector('#chat-editor .diag-gutter-error').classList.remove('diag-gutter-error')")
    shared_page.wait_for_timeout(2500)
    expect(gutter).to_have_count(0)
    # A change of the diagnostics marks at once.
    shared_page.keyboard.insert_text("{% endif %}\n{{ x }")
    expect(gutter).to_have_text("5")  # `{{ x }` on line 5
