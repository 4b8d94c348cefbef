"""Provenance in the page: hover a prompt character → the template lines that wrote it and its message
in the case are highlighted; the template's cursor → every piece of the prompt its line wrote; "By
message" colours the prompt; clicking an output region highlights the response template key."""

from __future__ import annotations

from playwright.sync_api import Page

from .conftest import screenshot
from .test_playground import pick

# The default preset (SmolLM3): its user turns are written by one line, its date by another.
USER_TURN = "<|im_start|>user"


def editor_line(page: Page, editor: str, text: str) -> None:
    """Put the cursor at the end of the first line of an editor holding `text` (scrolled to it)."""
    page.evaluate(
        """([editor, text]) => {
            const view = document.querySelector(`#${editor} .cm-content`).cmTile.view;
            const at = view.state.doc.toString().indexOf(text);
            view.dispatch({selection: {anchor: view.state.doc.lineAt(at).to}, scrollIntoView: true});
        }""",
        [editor, text],
    )


def line_number(page: Page, editor: str, text: str) -> int:
    return page.evaluate(
        """([editor, text]) => {
            const view = document.querySelector(`#${editor} .cm-content`).cmTile.view;
            return view.state.doc.lineAt(view.state.doc.toString().indexOf(text)).number;
        }""",
        [editor, text],
    )


def marked_lines(page: Page, editor: str, cls: str) -> list[str]:
    return page.eval_on_selector_all(f"#{editor} .cm-line.{cls}", "els => els.map(e => e.textContent)")


def test_hover_a_prompt_character_highlights_its_template_line_and_message(page: Page) -> None:
    piece = page.locator("#prompt-view [data-p]", has_text="Today Date:").first
    piece.hover()
    page.wait_for_function("document.querySelectorAll('#chat-editor .cm-line.pv-line').length > 0")
    lines = marked_lines(page, "chat-editor", "pv-line")
    assert len(lines) == 1 and "Today Date:" in lines[0]
    readout = page.locator("#pv-readout").text_content()
    assert f"line {line_number(page, 'chat-editor', 'Today Date:')}, column" in readout and "no message" in readout
    # A user's words: their message in the case is highlighted too.
    messages = page.evaluate("JSON.parse(document.querySelector('#messages-editor .cm-content').cmTile.view.state.doc.toString())")
    index = next(i for i, m in enumerate(messages) if m["role"] == "user")
    words = messages[index]["content"][:20]
    page.locator("#prompt-view [data-p]", has_text=words).first.hover()
    # Its card in the conversation editor (and its lines in the JSON view, when that is shown).
    page.wait_for_selector(f'#conversation [data-message="{index}"].pv-msg')
    assert page.locator("#conversation .pv-msg").count() == 1
    # Counted from 1, as the card's own title is ("Message 2"), not from 0 (issue 35).
    card = page.locator(f'#conversation [data-message="{index}"] > legend').text_content()
    assert card == f"Message {index + 1}" and f"message {index + 1} (user)" in page.locator("#pv-readout").text_content()
    screenshot(page, "provenance-hover")


def test_the_template_cursor_highlights_what_its_line_wrote(page: Page) -> None:
    page.locator("#chat-editor .cm-content").click()
    editor_line(page, "chat-editor", '{{- "<|im_start|>user')
    page.keyboard.press("End")  # a key the page sees: the cursor is on that line now
    page.wait_for_function("document.querySelectorAll('#prompt-view .pv-hit').length > 0")
    hit = page.eval_on_selector_all("#prompt-view .pv-hit", "els => els.map(e => e.textContent).join('')")
    assert USER_TURN in hit and "system" not in hit
    page.keyboard.press("Control+Home")
    page.wait_for_function("document.querySelectorAll('#prompt-view .pv-hit').length === 0")


def test_by_message_colours_the_prompt(page: Page) -> None:
    colour = "getComputedStyle(document.querySelector('#prompt-view .pm0:not(.tok):not(.gen)')).backgroundColor"
    assert page.evaluate(colour) == "rgba(0, 0, 0, 0)"
    page.locator("#pv-by-message").check()
    assert page.evaluate(colour) != "rgba(0, 0, 0, 0)"
    page.reload()
    page.wait_for_selector("#prompt-view .pm0")
    page.wait_for_function("document.getElementById('prompt-panel').classList.contains('by-message')")


def test_clicking_an_output_region_highlights_its_response_template_key(page: Page) -> None:
    page.click("#run-button")
    page.wait_for_function("/status(done|stopped|failed)/.test((document.querySelector('#run-stats') || {}).textContent.replace(/\\s+/g, ''))",
                           timeout=60_000)
    page.locator("#stream-view .seg.delim.open").first.click()
    page.wait_for_function("document.querySelectorAll('#response-editor .cm-line.pv-line').length > 0")
    assert any('"open"' in line for line in marked_lines(page, "response-editor", "pv-line"))


def test_an_edit_is_explained_right_after_its_prompt_shows(page: Page) -> None:
    page.locator("#chat-editor .cm-content").click()
    page.keyboard.press("Control+Home")
    page.keyboard.type("Hello")  # (a trailing space would be stripped by the comment after it: two edits, one prompt)
    page.wait_for_function("""() => { const t = document.querySelector('#prompt-view .prompt-text');
                                      return t && t.dataset.pieces && t.textContent.startsWith('Hello<'); }""")
    page.locator("#prompt-view [data-p]", has_text="Hello").first.hover()
    page.wait_for_function("document.querySelectorAll('#chat-editor .cm-line.pv-line').length > 0")
    assert marked_lines(page, "chat-editor", "pv-line")[0].startswith("Hello")
    assert page.locator("#pv-readout").text_content().startswith("line 1, column 1 · template text")


def test_presentation_colours_the_prompt_and_the_conversation_alike_with_the_same_links(page: Page) -> None:
    pick(page, "case-picker", "multi-turn")
    page.wait_for_function("document.querySelectorAll('#conversation .conv-message').length === 3")
    page.click("#present-toggle")
    page.wait_for_function("document.getElementById('prompt-panel').classList.contains('by-message')")
    stripe = "(i) => getComputedStyle(document.querySelector(`#present-conversation .conv-message[data-message='${i}']`)).borderLeftColor"
    piece = "(i) => getComputedStyle(document.querySelector(`#prompt-view .pm${i}:not(.tok):not(.gen)`)).backgroundColor"
    colours = [page.evaluate(stripe, i) for i in range(3)]
    assert colours == [page.evaluate(piece, i) for i in range(3)] and len(set(colours)) == 3
    assert "rgba(0, 0, 0, 0)" not in colours
    # The prompt's link to the conversation works in the teaching view: a message's words → its card.
    messages = page.evaluate("JSON.parse(document.querySelector('#messages-editor .cm-content').cmTile.view.state.doc.toString())")
    page.locator("#prompt-view [data-p]", has_text=messages[2]["content"][:20]).first.hover()
    page.wait_for_selector('#present-conversation [data-message="2"].pv-msg')
    screenshot(page, "presentation-by-message")
    # Leaving it gives this browser's own choice back (never switched on here: off).
    page.click("#walk-box [data-present-toggle]")
    page.wait_for_function("!document.getElementById('prompt-panel').classList.contains('by-message')")
