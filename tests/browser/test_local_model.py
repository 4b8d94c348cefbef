"""Running a real model from the page (issue 13): each format suggests a checkpoint that runs on a
laptop CPU (or says why none does), the size is checked before any download, a first download shows
its progress, and a failed run shows the error rather than an empty message. The app runs against
a local stand-in for the Hub (tests/fake_hub.py on 127.0.0.1) serving a tiny model built here."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import ROOT, TABS, screenshot
from tests.browser.shared_tab import SharedTab
from tests.browser.test_playground import pick, set_number
from tests.fake_hub import FakeHub
from tests.servers import free_port, serving
from tests.tiny_model import build_tiny_model

REPO = "tiny/chat"


@pytest.fixture(scope="module")
def hub_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, FakeHub]]:
    folder = build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")
    home = tmp_path_factory.mktemp("hf-home")
    with FakeHub() as hub:
        hub.add_repo(REPO, {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()})
        port = free_port()
        env = {key: value for key, value in os.environ.items() if not key.startswith("HF_")}
        env.update(HF_ENDPOINT=hub.url, HF_HOME=str(home), GRADIO_ANALYTICS_ENABLED="False", PYTHONUNBUFFERED="1")
        url = f"http://127.0.0.1:{port}/"
        with serving([sys.executable, "app.py", "--port", str(port)], url, ROOT / "artifacts" / "local-model-app.log",
                     env=env, cwd=ROOT, timeout=90):
            yield url, hub


@pytest.fixture(scope="module")
def hub_tab(browser: Browser, hub_app: tuple[str, FakeHub]) -> Iterator[SharedTab]:
    tab = SharedTab(browser, hub_app[0])
    yield tab
    TABS.append(tab)
    tab.close()


@pytest.fixture
def shared_page(hub_tab: SharedTab) -> Page:
    """This module's shared tab (tests/browser/shared_tab.py), on the app that reaches the local Hub."""
    return hub_tab.reset()


def run_and_wait(page: Page) -> str:
    page.click("#run-button")
    page.wait_for_function(
        "() => /status(done|stopped|failed)/.test(document.querySelector('#run-stats').textContent.replace(/\\s+/g, ''))",
        timeout=60_000,
    )
    return page.locator("#run-stats").text_content()


def model_box(page: Page):
    return page.locator("#local-model input, #local-model textarea").first


def test_each_format_suggests_a_laptop_model_or_says_why_none(shared_page: Page):
    pick(shared_page, "preset-picker", "Qwen3")
    pick(shared_page, "runner-choice", "Local model")
    expect(model_box(shared_page)).to_have_value("Qwen/Qwen3-0.6B")
    expect(shared_page.locator("#model-note")).to_contain_text("runs on a laptop CPU")
    expect(shared_page.locator("#model-note")).to_contain_text("8 GB limit")
    pick(shared_page, "preset-picker", "gpt-oss (harmony)")
    expect(model_box(shared_page)).to_have_value("")
    expect(shared_page.locator("#model-note")).to_contain_text("No checkpoint of this format fits a laptop CPU")


def test_the_size_before_the_download_then_its_progress_then_the_run(shared_page: Page, hub_app: tuple[str, FakeHub]):
    _, hub = hub_app
    hub.download_rate = 300_000  # bytes a second
    hub.downloads_released = threading.Event()  # each file waits after its first piece until the test has seen the progress
    pick(shared_page, "preset-picker", "Blank (ChatML starter)")
    pick(shared_page, "runner-choice", "Local model")
    model_box(shared_page).fill(REPO)
    shared_page.click("#check-size")
    expect(shared_page.locator("#model-note")).to_contain_text("tiny/chat (the Hub): 136 kB of safetensors weights, within the 8 GB limit")
    assert not any(r.kind == "resolve" for r in hub.requests)  # nothing downloaded to say so
    set_number(shared_page, "max-new-tokens", 3)
    shared_page.click("#run-button")
    expect(shared_page.locator("#run-stats progress.download")).to_be_attached(timeout=30_000)
    expect(shared_page.locator("#run-stats")).to_contain_text("downloading tiny/chat")
    screenshot(shared_page, "local-model-download")
    hub.downloads_released.set()
    shared_page.wait_for_function("() => /status\\s*done/.test(document.querySelector('#run-stats').textContent)", timeout=60_000)
    expect(shared_page.locator("#message-view .cm-content")).to_contain_text('"role": "assistant"')


def test_a_first_run_shows_the_prompt_with_the_special_tokens_the_model_brought(shared_page: Page):
    """The model's tokenizer brings a pad token the Blank preset lacks: once the run ends, the prompt
    on screen is rendered with it (the template writes it first), without another edit."""
    pick(shared_page, "preset-picker", "Blank (ChatML starter)")
    shared_page.click("#chat-editor .cm-content")
    shared_page.keyboard.press("Control+Home")
    shared_page.keyboard.insert_text("[{{ pad_token }}]")
    prompt = shared_page.locator("#prompt-view .prompt-text")
    expect(prompt).to_contain_text("[]<|im_start|>")
    pick(shared_page, "runner-choice", "Local model")
    model_box(shared_page).fill(REPO)
    set_number(shared_page, "max-new-tokens", 2)
    assert "done" in run_and_wait(shared_page)
    expect(prompt).to_contain_text("[<|endoftext|>]<|im_start|>")


def test_a_failed_run_shows_the_error_not_an_empty_message(shared_page: Page):
    pick(shared_page, "preset-picker", "Blank (ChatML starter)")
    pick(shared_page, "runner-choice", "Local model")
    model_box(shared_page).fill("tiny/missing")
    assert "failed" in run_and_wait(shared_page)
    expect(shared_page.locator("#run-diagnostics .diag.error")).to_contain_text("no model tiny/missing")
    expect(shared_page.locator("#message-view")).not_to_contain_text("role")
