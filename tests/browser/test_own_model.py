"""Issue 35 in Chromium: the path a model author takes with their own chat template, walked through at
1440×900 with a tool format no preset covers (tests/fixtures/own_model, written for these tests in the
style of Mistral's): load the files, edit, load them again, undo, reload, draft, paste outputs and run
them, the conversation editor, the checks, the zip. Nothing typed is lost, every message is about this
model and says where it comes from, and the page keeps its layout."""

from __future__ import annotations

import base64
import io
import json
import re
import zipfile
from pathlib import Path

from playwright.sync_api import Page, expect

from app.state import decode_workspace
from engine.presets import load_preset
from tests.browser.conftest import screenshot
from tests.browser.test_playground import pick, wait_for_run

MODEL = Path(__file__).resolve().parents[1] / "fixtures" / "own_model"
FILES = [str(MODEL / "chat_template.jinja"), str(MODEL / "tokenizer_config.json")]
LAPTOP = {"width": 1440, "height": 900}
CALL = '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "a1B2c3D4e"}]'
# A call with text before it (the template drops content before calls), and a long one whose JSON breaks
# far along its line (a key the model left unquoted; text after the list is content since issue 30).
WITH_CONTENT = "Let me check the weather for you." + CALL + "</s>"
BROKEN = ('[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris", "note": "and then I will answer in full '
          'once the tool has told me what the weather in Paris is", units: "metric"}, "id": "a1B2c3D4e"}]</s>')


def upload(page: Page) -> None:
    """Load the model's files through "Load from Hub or files", and wait for the load's answer."""
    # The status line shown now is marked: the load's answer draws a new one.
    page.evaluate("() => { for (const l of document.querySelectorAll('#top-status .status-line')) l.dataset.old = '1'; }")
    page.click("#load-accordion .label-wrap")
    page.set_input_files("#file-upload input[type=file]", FILES)
    page.wait_for_function("() => { const l = document.querySelector('#top-status .status-line:not([data-old])');"
                           " return l && l.textContent.includes('Loaded your files'); }", timeout=60_000)
    expect(page.locator("#chat-editor .cm-content")).to_contain_text("in the style of Mistral")
    page.click("#load-accordion .label-wrap")  # closed again


def saved(page: Page):
    """The workspace the browser's saved copy holds."""
    code = page.evaluate("localStorage.getItem('template-playground/workspace')")
    workspace, problem = decode_workspace(code or "")
    assert problem is None
    return workspace


def boxed(page: Page) -> set[str]:
    return set(page.eval_on_selector_all("#prompt-view .tok", "els => els.map((e) => e.textContent.replace(/↵/g, ''))"))


def paste_and_run(page: Page, text: str) -> str:
    """Paste `text` in the paste box as a menu paste does (no key press), and run it."""
    box = page.locator("#pasted-output textarea")
    box.click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(text)
    expect(box).to_have_value(text)
    page.wait_for_timeout(400)  # the paste is saved as it changes (not only on a key press)
    page.click("#run-button")
    # This run's output in the view (the last run's "done" may still be showing until it starts).
    page.wait_for_function("(end) => document.querySelector('#stream-view').textContent.replace(/↵/g, '').includes(end)",
                           arg=text[-40:].removesuffix("</s>"), timeout=30_000)
    return wait_for_run(page)


def reload(page: Page) -> None:
    """Reload the page, and wait until the browser's saved copy is restored."""
    page.reload()
    page.wait_for_selector("#prompt-view .prompt-text", timeout=60_000)
    expect(page.locator("#top-status")).to_contain_text("Restored your last session", timeout=30_000)


def no_error_pills(page: Page) -> None:
    """What a handler that raised leaves on every control Gradio updates: an "Error" pill."""
    assert page.get_by_text("Error", exact=True).count() == 0


def test_the_walk_through_with_a_model_of_ones_own(page: Page) -> None:
    page.set_viewport_size(LAPTOP)
    preset = load_preset("smollm3")
    toolbar = page.locator("#toolbar").bounding_box()

    # ----- load the files: a workspace of this model, the header still one line -----------------------
    upload(page)
    status = page.locator("#top-status")
    expect(status.locator(".status-undo")).to_be_visible()
    assert page.locator("#header-row").bounding_box()["height"] < 60
    assert page.locator("#toolbar").bounding_box()["y"] == toolbar["y"]  # the notice pushed it down ~57 px
    page.click("#top-status summary")
    pop = page.locator("#top-status .status-pop")
    expect(pop).to_contain_text("3 neutral cases replace SmolLM3's 19 cases and 10 recordings")
    expect(pop).to_contain_text("9 alphanumerics")
    box = pop.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= LAPTOP["width"]
    page.keyboard.press("Escape")
    page.click("#load-accordion .label-wrap")
    panel = '#load-accordion > [data-testid="accordion-content"]'
    page.wait_for_function("(sel) => { const r = document.querySelector(sel).getBoundingClientRect();"
                           " return r.width > 0 && r.left >= 0 && r.right <= innerWidth; }", arg=panel, timeout=3_000)  # it ran off the right edge
    page.click("#load-accordion .label-wrap")
    expect(page.locator("#response-diagnostics")).to_contain_text("No response template yet")
    expect(page.locator("#prompt-view .anchor-mark")).to_have_count(0)  # no preset's start_anchor
    expect(page.locator("#prompt-view .from-prompt")).to_have_count(0)
    screenshot(page, "own-model-loaded")

    # ----- edit, load again (the page keeps working), undo, reload: the edit is there ------------------
    editor = page.locator("#chat-editor .cm-content")
    editor.click()
    page.keyboard.press("Control+End")
    page.keyboard.type("{# my edit #}")
    for _ in range(40):  # the edit reaches the browser's saved copy
        if saved(page).chat_template.endswith("{# my edit #}"):
            break
        page.wait_for_timeout(250)
    assert saved(page).chat_template.endswith("{# my edit #}")
    upload(page)
    no_error_pills(page)
    assert not editor.text_content().endswith("{# my edit #}")
    status.locator(".status-undo").click()
    expect(status).to_contain_text("back as it was")
    expect(editor).to_contain_text("{# my edit #}")
    page.wait_for_timeout(500)
    reload(page)
    expect(page.locator("#chat-editor .cm-content")).to_contain_text("{# my edit #}")
    no_error_pills(page)

    # ----- draft: applied, the prompt's boxes stay the model's own -------------------------------------
    pick(page, "case-picker", "tools offered")
    expect(page.locator("#prompt-view")).to_contain_text("[AVAILABLE_TOOLS]")
    before = boxed(page)
    assert "[INST]" in before and "<|im_start|>" not in before
    page.click("#draft-button")
    report = page.locator("#draft-report")
    expect(report.locator(".draft-field").first).to_be_visible(timeout=60_000)
    expect(report.locator("code", has_text="content").first).to_be_visible()  # rendered, not `content`
    assert "`" not in report.text_content()
    page.click("#draft-apply")
    expect(page.locator("#response-editor .cm-content")).to_contain_text("[TOOL_CALLS]")
    expect(page.locator("#prompt-view .anchor-mark")).to_have_count(1)
    assert boxed(page) == before

    # ----- paste outputs: the box is on the first screen, each message says where ----------------------
    paste = page.locator("#pasted-output textarea")
    expect(paste).to_be_visible()
    assert paste.bounding_box()["y"] + paste.bounding_box()["height"] <= LAPTOP["height"]
    assert "done" in paste_and_run(page, WITH_CONTENT)
    expect(page.locator("#message-view")).to_contain_text("get_weather")
    paste_and_run(page, BROKEN)
    diagnostics = page.locator("#run-diagnostics")
    column = BROKEN.index("units") + 1
    expect(diagnostics).to_contain_text("could not parse its region as JSON: Expecting property name enclosed in double "
                                        f"quotes at output line 1, column {column}")
    expect(diagnostics).to_contain_text("response template line")
    expect(diagnostics.locator(".hint")).to_contain_text("The model writes keys without quotes")
    expect(page.locator("#stream-view .error-char")).to_have_text("u")  # the `u` of the unquoted units, marked
    snippet = diagnostics.locator(".snippet").first
    page.wait_for_function("(el) => el.querySelector('.caret') && el.querySelector('.caret').dataset.shown",
                           arg=snippet.element_handle())
    caret = snippet.evaluate("(pre) => { const c = pre.querySelector('.caret');"
                             " return [c.offsetLeft - pre.scrollLeft, pre.clientWidth, pre.scrollWidth]; }")
    assert caret[2] > caret[1] and 0 <= caret[0] < caret[1], caret  # a long line, scrolled to its caret
    screenshot(page, "own-model-parse-error")
    reload(page)
    expect(page.locator("#pasted-output textarea")).to_have_value(BROKEN)  # the last paste, not an older one

    # ----- the conversation editor: ids, and one numbering -------------------------------------------
    pick(page, "case-picker", "tool call")
    call = page.locator('#conversation [data-message="1"] .conv-call-id')
    expect(call).to_be_visible()
    assert re.fullmatch(r"[A-Za-z0-9]{9}", call.input_value())
    call.fill("Zz9Yy8Xx7")
    expect(page.locator("#prompt-view")).to_contain_text('"id": "Zz9Yy8Xx7"')
    page.locator("#prompt-view [data-p]", has_text="What is the weather").first.hover()
    legend = page.locator('#conversation [data-message="0"] > legend').text_content()
    assert legend == "Message 1" and "message 1 (user)" in page.locator("#pv-readout").text_content()

    # ----- the checks: about this model, each failure at the template line that caused it -------------
    pick(page, "case-picker", "tools offered")
    assert "done" in paste_and_run(page, WITH_CONTENT)
    page.click('#tabs button[role=tab]:has-text("Checks")')
    page.click("#checks-run")
    rows = page.locator("#checks-list .check-row")
    expect(rows.first).to_be_visible(timeout=90_000)
    text = page.locator("#checks-list").text_content()
    names = {c.name for c in preset.cases} - {"tools offered", "tool call"} | {r.name for r in preset.recordings}
    assert not [n for n in names if f"'{n}'" in text] and "<|im_start|>" not in text
    dropped = page.locator("#checks-list .check-row.fail", has_text="leaves out `content`")
    jump = dropped.locator(".check-jump")
    expect(jump).to_have_attribute("data-source", "chat_template")
    line = int(jump.get_attribute("data-line"))
    assert "[TOOL_CALLS][" in (MODEL / "chat_template.jinja").read_text().splitlines()[line - 1]
    assert "monospace" in dropped.locator(".check-details").evaluate("(e) => getComputedStyle(e).fontFamily")
    # Jumping there brings the result along, its columns kept (they were in a proportional font).
    jump.click()
    note = page.locator("#chat-group .jump-note .jump-detail")
    expect(note).to_contain_text("rendered again:")
    assert "monospace" in note.evaluate("(e) => getComputedStyle(e).fontFamily")
    page.locator("#chat-group .jump-note button").click()

    # ----- the zip: the model's tokenizer_config.json, every key kept --------------------------------
    page.click('#tabs button[role=tab]:has-text("Publish")')
    page.click("#publish-download")
    link = page.locator("#publish-zip-link")
    expect(link).to_be_visible()
    data = base64.b64decode(link.get_attribute("href").split(",", 1)[1])
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        config = json.loads(archive.read("tokenizer_config.json"))
        assert archive.read("chat_template.jinja").decode().endswith("{# my edit #}")
    original = json.loads((MODEL / "tokenizer_config.json").read_text())
    assert {k: v for k, v in config.items() if k != "response_template"} == original
    assert config["response_template"]["fields"]["tool_calls"]["open"] == "[TOOL_CALLS]"
    no_error_pills(page)
    screenshot(page, "own-model-zip")
