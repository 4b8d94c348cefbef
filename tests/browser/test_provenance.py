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


def test_hover_a_prompt_character_highlights_its_template_line_and_message(shared_page: Page) -> None:
    piece = shared_page.locator("#prompt-view [data-p]", has_text="Today Date:").first
    piece.hover()
    shared_page.wait_for_function("document.querySelectorAll('#chat-editor .cm-line.pv-line').length > 0")
    lines = marked_lines(shared_page, "chat-editor", "pv-line")
    assert len(lines) == 1 and "Today Date:" in lines[0]
    readout = shared_page.locator("#pv-readout").text_content()
    assert f"line {line_number(shared_page, 'chat-editor', 'Today Date:')}, column" in readout and "no message" in readout
    # A user's words: their message in the case is highlighted too.
    messages = shared_page.evaluate("JSON.parse(document.querySelector('#messages-editor .cm-content').cmTile.view.state.doc.toString())")
    index = next(i for i, m in enumerate(messages) if m["role"] == "user")
    words = messages[index]["content"][:20]
    shared_page.locator("#prompt-view [data-p]", has_text=words).first.hover()
    # Its card in the conversation editor (and its lines in the JSON view, when that is shown).
    shared_page.wait_for_selector(f'#conversation [data-message="{index}"].pv-msg')
    assert shared_page.locator("#conversation .pv-msg").count() == 1
    # Counted from 1, as the card's own title is ("Message 2"), not from 0 (issue 35).
    card = shared_page.locator(f'#conversation [data-message="{index}"] > legend').text_content()
    assert card == f"Message {index + 1}" and f"message {index + 1} (user)" in shared_page.locator("#pv-readout").text_content()
    screenshot(shared_page, "provenance-hover")


def test_the_template_cursor_highlights_what_its_line_wrote(shared_page: Page) -> None:
    shared_page.locator("#chat-editor .cm-content").click()
    editor_line(shared_page, "chat-editor", '{{- "<|im_start|>user')
    shared_page.keyboard.press("End")  # a key the page sees: the cursor is on that line now
    shared_page.wait_for_function("document.querySelectorAll('#prompt-view .pv-hit').length > 0")
    hit = shared_page.eval_on_selector_all("#prompt-view .pv-hit", "els => els.map(e => e.textContent).join('')")
    assert USER_TURN in hit and "system" not in hit
    shared_page.keyboard.press("Control+Home")
    shared_page.wait_for_function("document.querySelectorAll('#prompt-view .pv-hit').length === 0")


def test_by_message_colours_the_prompt(page: Page) -> None:
    colour = "getComputedStyle(document.querySelector('#prompt-view .pm0:not(.tok):not(.gen)')).backgroundColor"
    assert page.evaluate(colour) == "rgba(0, 0, 0, 0)"
    page.locator("#pv-by-message").check()
    assert page.evaluate(colour) != "rgba(0, 0, 0, 0)"
    page.reload()
    page.wait_for_selector("#prompt-view .pm0")
    page.wait_for_function("document.getElementById('prompt-panel').classList.contains('by-message')")


def test_clicking_an_output_region_highlights_its_response_template_key(shared_page: Page) -> None:
    shared_page.click("#run-button")
    shared_page.wait_for_function("/status(done|stopped|failed)/.test((document.querySelector('#run-stats') || {}).textContent.replace(/\\s+/g, ''))",
                           timeout=60_000)
    shared_page.locator("#stream-view .seg.delim.open").first.click()
    shared_page.wait_for_function("document.querySelectorAll('#response-editor .cm-line.pv-line').length > 0")
    assert any('"open"' in line for line in marked_lines(shared_page, "response-editor", "pv-line"))


def test_an_edit_is_explained_right_after_its_prompt_shows(shared_page: Page) -> None:
    shared_page.locator("#chat-editor .cm-content").click()
    shared_page.keyboard.press("Control+Home")
    shared_page.keyboard.type("Hello")  # (a trailing space would be stripped by the comment after it: two edits, one prompt)
    shared_page.wait_for_function("""() => { const t = document.querySelector('#prompt-view .prompt-text');
                                      return t && t.dataset.pieces && t.textContent.startsWith('Hello<'); }""")
    shared_page.locator("#prompt-view [data-p]", has_text="Hello").first.hover()
    shared_page.wait_for_function("document.querySelectorAll('#chat-editor .cm-line.pv-line').length > 0")
    assert marked_lines(shared_page, "chat-editor", "pv-line")[0].startswith("Hello")
    assert shared_page.locator("#pv-readout").text_content().startswith("line 1, column 1 · template text")


def test_presentation_colours_the_prompt_and_the_conversation_alike_with_the_same_links(shared_page: Page) -> None:
    pick(shared_page, "case-picker", "multi-turn")
    shared_page.wait_for_function("document.querySelectorAll('#conversation .conv-message').length === 3")
    shared_page.click("#present-toggle")
    shared_page.wait_for_function("document.getElementById('prompt-panel').classList.contains('by-message')")
    stripe = "(i) => getComputedStyle(document.querySelector(`#present-conversation .conv-message[data-message='${i}']`)).borderLeftColor"
    piece = "(i) => getComputedStyle(document.querySelector(`#prompt-view .pm${i}:not(.tok):not(.gen)`)).backgroundColor"
    colours = [shared_page.evaluate(stripe, i) for i in range(3)]
    assert colours == [shared_page.evaluate(piece, i) for i in range(3)] and len(set(colours)) == 3
    assert "rgba(0, 0, 0, 0)" not in colours
    # The prompt's link to the conversation works in the teaching view: a message's words → its card.
    messages = shared_page.evaluate("JSON.parse(document.querySelector('#messages-editor .cm-content').cmTile.view.state.doc.toString())")
    shared_page.locator("#prompt-view [data-p]", has_text=messages[2]["content"][:20]).first.hover()
    shared_page.wait_for_selector('#present-conversation [data-message="2"].pv-msg')
    screenshot(shared_page, "presentation-by-message")
    # Leaving it gives this browser's own choice back (never switched on here: off).
    shared_page.click("#walk-box [data-present-toggle]")
    shared_page.wait_for_function("!document.getElementById('prompt-panel').classList.contains('by-message')")


def test_a_macro_piece_names_its_call_sites_from_the_chains_sent_once(shared_page: Page) -> None:
    """The call sites of a piece written inside a macro are its call chain's lines (the chains are sent
    once, `data-chains`; each piece refers to its own by index): hover → the call sites are marked
    in the editor and said in the readout, outermost first."""
    pick(shared_page, "preset-picker", "Blank (ChatML starter)")
    shared_page.locator("#chat-editor .cm-content").click()
    shared_page.keyboard.press("Control+A")
    shared_page.keyboard.insert_text("{%- macro inner() -%}DEEP{%- endmacro -%}\n{%- macro outer() -%}{{ inner() }}{%- endmacro -%}\n"
                                     "{{ outer() }}")
    shared_page.wait_for_function("""() => { const t = document.querySelector('#prompt-view .prompt-text');
                                             return t && t.dataset.chains && t.textContent === 'DEEP'; }""")
    shared_page.locator("#prompt-view [data-p]", has_text="DEEP").first.hover()
    shared_page.wait_for_function("document.querySelectorAll('#chat-editor .cm-line.pv-call').length === 2")
    assert [line.startswith("{%- macro outer") or line.startswith("{{ outer") for line in
            marked_lines(shared_page, "chat-editor", "pv-call")] == [True, True]
    assert shared_page.locator("#pv-readout").text_content().endswith("via line 3, 2")
