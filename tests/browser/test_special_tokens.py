"""In a real browser: a loaded tokenizer brings its special tokens (the field under "Tokenizer" shows
them and the prompt renders with them), and editing the field overrides them."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from tests.browser.test_error_marks import _type_template
from tests.browser.test_playground import pick
from tests.test_special_tokens import gemma_like

TEMPLATE = "{{ bos_token }}{% for m in messages %}<start_of_turn>{{ m.role }}\n{{ m.content }}<end_of_turn>\n{% endfor %}"


def test_a_tokenizer_brings_its_bos_and_the_field_overrides_it(shared_page: Page, tmp_path) -> None:
    folder = gemma_like(tmp_path / "gemma", chat_template=False)
    pick(shared_page, "preset-picker", "Blank (ChatML starter)")
    _type_template(shared_page, TEMPLATE)
    prompt = shared_page.locator("#prompt-view .prompt-text")
    expect(prompt).to_contain_text("<start_of_turn>system")
    expect(prompt).not_to_contain_text("<bos>")  # the ChatML starter declares no BOS
    shared_page.click("#tokenizer-accordion button")
    shared_page.set_input_files("#tokenizer-upload input[type=file]", [str(folder / "tokenizer.json"),
                                                                str(folder / "tokenizer_config.json")])
    expect(shared_page.locator("#tokenizer-status")).to_contain_text("uploaded tokenizer.json", timeout=30_000)
    field = shared_page.locator("#special-tokens")
    expect(field).to_contain_text('"bos_token": "<bos>"')
    expect(prompt).to_contain_text("<bos><start_of_turn>system", timeout=30_000)
    # The author's own value wins.
    field.locator(".cm-content").click()
    shared_page.keyboard.press("Control+A")
    shared_page.keyboard.insert_text('{"bos_token": "[B]", "eos_token": "<eos>"}')
    expect(prompt).to_contain_text("[B]<start_of_turn>system", timeout=30_000)
    shared_page.keyboard.press("Control+A")
    shared_page.keyboard.insert_text('{"bos_token": [1]}')
    expect(shared_page.locator("#special-tokens-diagnostics .diag.error")).to_contain_text("JSON object of names to texts")
    expect(prompt).to_contain_text("[B]<start_of_turn>system")  # a typo keeps the last good value
