"""Browser end-to-end fixtures: the app served by `python app.py` on a free 127.0.0.1 port, and
Debian's Chromium driven by Playwright (never `playwright install`). Screenshots of the main states
go to artifacts/screenshots/ (gitignored)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright
from tests.servers import free_port, serving

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "artifacts" / "screenshots"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]  # fmt: skip


@pytest.fixture(scope="session")
def app_url() -> Iterator[str]:
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False", "PYTHONUNBUFFERED": "1"}
    (ROOT / "artifacts").mkdir(exist_ok=True)
    url = f"http://127.0.0.1:{port}/"
    command = [sys.executable, "app.py", "--port", str(port)]
    with serving(command, url, ROOT / "artifacts" / "browser-app.log", env=env, cwd=ROOT, timeout=90):
        yield url


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser, app_url: str) -> Iterator[Page]:
    """A fresh browser context (its own localStorage) on the app, loaded and rendered."""
    context = browser.new_context(viewport={"width": 1500, "height": 1000})
    opened = context.new_page()
    opened.set_default_timeout(20_000)
    open_app(opened, app_url)
    yield opened
    context.close()


def open_app(page: Page, url: str) -> None:
    page.goto(url)
    page.wait_for_selector("#prompt-view .prompt-text", timeout=60_000)


def screenshot(page: Page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test here drives Chromium: marked `browser` (the fast loop leaves them out)."""
    for item in items:
        if Path(item.path).is_relative_to(Path(__file__).parent):
            item.add_marker(pytest.mark.browser)
