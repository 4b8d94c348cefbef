"""Browser end-to-end fixtures: the app served by `python app.py` on a free 127.0.0.1 port, and
Debian's Chromium driven by Playwright (never `playwright install`). Screenshots of the main states
go to artifacts/screenshots/ (gitignored).

Two pages a test can ask for:
- `shared_page`: the tab most tests use, kept open from test to test and brought back to a known state
  before each (tests/browser/shared_tab.py: the page as a new visitor gets it, the default preset then
  picked through its picker, nothing saved in the browser, 1500×1000). A test that leaves something
  the page cannot undo (checks that ran, a tokenizer, a share link) makes the next one start on a
  freshly loaded page; nothing is lost but time.
- `page`: a fresh browser context (its own localStorage), loaded: for what only a new visitor sees (the
  first visit, a share link opened, a reload that restores the saved copy, another viewport or theme
  from the first paint). It costs a page load in a new renderer (3-4 core-seconds)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright
from tests.browser.shared_tab import SharedTab
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


@pytest.fixture(scope="session")
def shared_tab(browser: Browser, app_url: str) -> Iterator[SharedTab]:
    tab = SharedTab(browser, app_url)
    yield tab
    TABS.append(tab)
    tab.close()


@pytest.fixture
def shared_page(shared_tab: SharedTab) -> Page:
    """The shared tab on the app, in the known state (see the module's docstring)."""
    return shared_tab.reset()


TABS: list[SharedTab] = []  # the shared tabs of this session, for the summary below


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """How the shared tabs went: tests that started on a tidied page, and on a freshly loaded one."""
    for tab in TABS:
        terminalreporter.write_line(f"shared tab on {tab.url}: {tab.kept} tests on the tidied tab, {tab.loads} page loads, "
                                    f"{tab.seconds:.0f} s in resets")


def open_app(page: Page, url: str) -> None:
    page.goto(url)
    page.wait_for_selector("#prompt-view .prompt-text", timeout=60_000)
    # The editors are drawn after the prompt can be: a test that reads one (the messages' JSON view,
    # hidden) must not find it missing on a busy machine.
    page.wait_for_selector("#messages-editor .cm-content", state="attached", timeout=60_000)


def screenshot(page: Page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test here drives Chromium: marked `browser` (the fast loop leaves them out)."""
    for item in items:
        if Path(item.path).is_relative_to(Path(__file__).parent):
            item.add_marker(pytest.mark.browser)
