"""The token view in a real browser: load a tokenizer.json, turn "Tokens" on, and see the prompt's
token boundaries, ids on hover, special tokens and the assistant mask."""

from __future__ import annotations

from playwright.sync_api import Page, expect

from engine.presets import load_preset
from tests.browser.test_playground import pick
from tests.token_support import GENERIC, tokenizer_files


def test_token_view_shows_boundaries_ids_and_the_assistant_mask(shared_page: Page, tmp_path) -> None:
    preset = load_preset("smollm3")
    special = sorted(set(GENERIC.findall(preset.chat_template)) | set(preset.special_tokens.values())
                     | set(preset.stop_tokens))
    files = tokenizer_files(tuple(special), bos=preset.special_tokens["bos_token"], eos=preset.special_tokens["eos_token"])
    (tmp_path / "tokenizer.json").write_bytes(files.tokenizer_json)
    (tmp_path / "tokenizer_config.json").write_bytes(files.config)

    pick(shared_page, "preset-picker", "SmolLM3")
    pick(shared_page, "case-picker", "multi-turn")  # an assistant turn, inside SmolLM3's {% generation %} block
    shared_page.click("#tokenizer-accordion button")
    shared_page.set_input_files("#tokenizer-upload input[type=file]", [str(tmp_path / "tokenizer.json"),
                                                                str(tmp_path / "tokenizer_config.json")])
    expect(shared_page.locator("#tokenizer-status")).to_contain_text("uploaded tokenizer.json", timeout=30_000)
    expect(shared_page.locator("#prompt-info")).to_contain_text("assistant mask:", timeout=30_000)

    shared_page.check("#show-tokens input")
    tokens = shared_page.locator("#prompt-view .token-text .tk")
    expect(tokens.first).to_be_visible(timeout=30_000)
    assert tokens.count() > 50  # boundaries: one element per token
    first = tokens.first
    assert first.get_attribute("data-ids").isdigit()
    assert first.get_attribute("title").startswith("id ")  # the id on hover
    special = shared_page.locator("#prompt-view .tk.sp", has_text="<|im_start|>")
    assert special.count() >= 3
    masked = shared_page.locator("#prompt-view .tk.am")
    assert masked.count() > 3  # the assistant's turn, shaded as what a fine-tune trains on
    assert "<|im_end|>" in "".join(masked.all_text_contents())
    expect(shared_page.locator("#prompt-view .tk.gp").first).to_be_visible()

    shared_page.uncheck("#show-tokens input")
    expect(shared_page.locator("#prompt-view .token-text")).to_have_count(0, timeout=30_000)
