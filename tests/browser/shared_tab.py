"""One browser tab kept open across tests (the `shared_page` fixture), brought back between tests to
a known state instead of loading the page afresh.

A fresh page costs 3-4 core-seconds (a new Chromium renderer compiling Gradio's scripts, the server
building the page); a reload in a tab that stays open about 2; bringing the tab back through the page
itself (the default preset picked again, the Playground tab shown, toggles off) under 1. The known
state is the page as a new visitor gets it, with the default preset then picked through its picker,
nothing saved in the browser, at 1500×1000. After each test the tab is tidied back and compared with
that state, the whole page (every element, its classes and attributes, every field's value, each
editor's text and cursor, the address, the browser's saved keys); where anything differs (checks
that ran, a tokenizer loaded, a tab visited, a share link made…), it is loaded afresh instead. So a
test on the shared tab starts from the same page as the previous test did, or from a fresh one."""

from __future__ import annotations

import difflib
import os
import sys
import time
from urllib.parse import urlsplit

from playwright.sync_api import Browser, Page
from playwright.sync_api import Error as PlaywrightError

from app.run_panel import RUNNER_CHOICES
from app.sources import preset_choices
from app.state import DEFAULT_PRESET

VIEWPORT = {"width": 1500, "height": 1000}
DEFAULT_PRESET_LABEL = next(label for label, name in preset_choices() if name == DEFAULT_PRESET)
RECORDED_LABEL = next(label for label, name in RUNNER_CHOICES if name == "recorded")  # a new visitor's runner
# What the page saves as it is used (a reload restores it): never part of the known state.
SAVED_WORKSPACE = "template-playground/workspace"

# Client-side leftovers the page's own controls undo: a run still streaming, presentation mode,
# another tab, open accordions and lists, the JSON view of the messages, the response editor shown
# alone (narrow screens), the focus and a selection, scrolling, the editors' cursors.
TIDY_JS = r"""() => {
  const root = document.documentElement;
  const stop = document.querySelector('#stop-button');
  if (stop && !stop.disabled) stop.click();
  if (root.classList.contains('presenting')) document.getElementById('present-toggle').click();
  const tab = [...document.querySelectorAll('#tabs button[role=tab]')].find((b) => b.textContent.trim() === 'Playground');
  if (tab && tab.getAttribute('aria-selected') !== 'true') tab.click();
  for (const open of document.querySelectorAll('.label-wrap.open')) open.click();
  if (root.classList.contains('messages-json')) {
    document.dispatchEvent(new CustomEvent('playground:messages-view', { detail: { view: 'conversation' } }));
  }
  const chat = document.querySelector('.editor-switch button[data-show="chat"]');
  if (chat && chat.getAttribute('aria-pressed') !== 'true') chat.click();
  for (const open of document.querySelectorAll('.status-more[open]')) open.open = false;
  if (document.activeElement) document.activeElement.blur();
  window.getSelection().removeAllRanges();
  // Tab starts from the top again, as on a page just loaded (the browser starts after what was last
  // clicked or focused).
  const top = document.createElement('span');
  top.tabIndex = -1;
  document.body.prepend(top);
  top.focus();
  top.blur();
  top.remove();
  for (const editor of document.querySelectorAll('.cm-editor')) {
    const view = window.playgroundEditorView(editor.parentElement);
    if (view && view.state.selection.main.head !== 0) view.dispatch({ selection: { anchor: 0 } });
    const scroller = editor.querySelector('.cm-scroller');
    if (scroller) { scroller.scrollTop = 0; scroller.scrollLeft = 0; }
  }
  window.scrollTo(0, 0);
}"""

# Every tab and accordion shown once, then closed again (Gradio draws each the first time it is
# shown), and a character of the prompt pointed at and left (its readout is made then, kept hidden).
MOUNT_JS = r"""async () => {
  const frame = () => new Promise((done) => requestAnimationFrame(() => setTimeout(done, 0)));
  for (const tab of document.querySelectorAll('#tabs button[role=tab]')) { tab.click(); await frame(); }
  document.querySelector('#tabs button[role=tab]').click();
  for (const wrap of document.querySelectorAll('.label-wrap:not(.open)')) { wrap.click(); await frame(); wrap.click(); }
  const piece = document.querySelector('#prompt-view [data-p]');
  if (piece) {
    piece.dispatchEvent(new MouseEvent('mouseover', { bubbles: true }));
    piece.dispatchEvent(new MouseEvent('mouseout', { bubbles: true }));
  }
  await frame();
}"""

# The page as a test finds it, one line per fact: the address, the root's classes, the keys the browser
# saved, every field's value, each editor's text, cursor and the marks on its lines, then every element
# of the page with its classes and attributes (in one order). Left out: inline styles (layout, redone
# from the rest), an editor's drawn lines (drawn as it scrolls), Gradio's loading indicators, the ids
# it draws at random or counts (a slider drawn again takes the next number), the blob: addresses of
# its downloads, blanks between elements.
STATE_JS = r"""(saved) => {
  const lines = ['address ' + location.href, 'classes ' + document.documentElement.className + ' | ' + document.body.className,
    'saved ' + Object.keys(localStorage).filter((k) => k !== saved).sort().join(', ')];
  for (const e of document.querySelectorAll('input, textarea, select')) {
    const home = e.closest('[id]');
    const value = e.type === 'checkbox' || e.type === 'radio' ? String(e.checked) : JSON.stringify(e.value);
    lines.push(`field ${home ? home.id : '?'} ${e.type} ${value}`);
  }
  for (const editor of document.querySelectorAll('.cm-editor')) {
    const view = window.playgroundEditorView(editor.parentElement);
    const marks = new Set();
    for (const line of editor.querySelectorAll('.cm-line, .cm-gutterElement')) for (const c of line.classList) marks.add(c);
    lines.push(`editor ${editor.closest('[id]').id} ` + (view ? JSON.stringify(view.state.doc.toString()) + ' at '
      + view.state.selection.main.head : '?') + ' marks ' + [...marks].sort().join(' '));
  }
  const copy = document.body.cloneNode(true);
  for (const e of copy.querySelectorAll('script, style, [data-testid="status-tracker"]')) e.remove();
  for (const e of copy.querySelectorAll('.cm-content, .cm-gutters')) e.replaceChildren();
  for (const e of copy.querySelectorAll('*')) {
    const attributes = [...e.attributes].filter((a) => a.name !== 'style').sort((a, b) => (a.name < b.name ? -1 : 1));
    for (const a of [...e.attributes]) e.removeAttribute(a.name);
    for (const a of attributes) e.setAttribute(a.name, a.name === 'class' ? a.value.trim().split(/\s+/).join(' ') : a.value);
  }
  const walker = document.createTreeWalker(copy, NodeFilter.SHOW_COMMENT);
  const comments = [];
  while (walker.nextNode()) comments.push(walker.currentNode);
  for (const c of comments) c.remove();
  const page = copy.innerHTML
    .replace(/>\s+</g, '><')
    .replace(/ id="html-[a-z0-9]+"/g, '')
    .replace(/kbd-hint-\d+/g, 'kbd-hint')
    .replace(/"c\d+-options"/g, '"options"')
    .replace(/blob:[^"]+/g, 'blob:');
  return lines.concat(page.replace(/></g, '>\n<').split('\n')).join('\n').replace(/range_id_\d+/g, 'range_id');
}"""

# Resolves once nothing on the page has changed for `ms` milliseconds (an answer drawn, an editor
# redrawn after scrolling).
QUIET_JS = r"""(ms) => new Promise((done) => {
  let last = performance.now();
  const seen = new MutationObserver(() => { last = performance.now(); });
  seen.observe(document.documentElement, { childList: true, subtree: true, characterData: true, attributes: true });
  const check = () => { if (performance.now() - last >= ms) { seen.disconnect(); done(); } else setTimeout(check, 40); };
  setTimeout(check, 40);
})"""


class SharedTab:
    """A tab on the app at `url`, reused by test after test (`reset` before each)."""

    def __init__(self, browser: Browser, url: str) -> None:
        self.url = url
        self.origin = "{0.scheme}://{0.netloc}".format(urlsplit(url))
        self.context = browser.new_context(viewport=VIEWPORT)
        self.page = self.context.new_page()
        self.page.set_default_timeout(20_000)
        self.known: str | None = None
        self.mounted = False  # every tab and accordion drawn once (see `_tidy`)
        self.kept = self.loads = 0  # tests that started on the tidied tab; page loads
        self.seconds = 0.0  # spent in `reset`
        # Requests in flight (the heartbeat stays open for the page's life): a reset waits for none.
        self.pending: set = set()
        self.page.on("request", lambda r: self.pending.add(r) if "/heartbeat/" not in r.url else None)
        self.page.on("requestfinished", lambda r: self.pending.discard(r))
        self.page.on("requestfailed", lambda r: self.pending.discard(r))

    def reset(self) -> Page:
        """The tab in the known state: tidied if that brings it there, else loaded afresh."""
        started = time.monotonic()
        try:
            return self._reset()
        finally:
            self.seconds += time.monotonic() - started

    def _reset(self) -> Page:
        if self.known is None:
            self._load()
            self.known = self._tidy()
            return self.page
        try:
            state = self._tidy()
        except PlaywrightError as e:  # a page the test left unable to answer (its requests held back…)
            state = f"not tidied: {e}"
        if state == self.known:
            self.kept += 1
            return self.page
        if os.environ.get("SHARED_TAB_DEBUG"):  # what differed (then it is loaded afresh)
            print(_diff(self.known, state, "tidied"), file=sys.stderr)
        self._load()
        state = self._tidy()
        if state != self.known and os.environ.get("SHARED_TAB_DEBUG"):
            # Freshly loaded, so in the known state whatever this says: the comparison is what missed.
            print(_diff(self.known, state, "reloaded"), file=sys.stderr)
        return self.page

    def close(self) -> None:
        self.context.close()

    def _load(self) -> None:
        """Load the page afresh in this tab, with nothing saved in the browser (a load in an open tab
        reuses its renderer: about half the cost of a new one)."""
        self.page.goto("about:blank")  # the page gone first: nothing of it saves anything after this
        cdp = self.context.new_cdp_session(self.page)
        try:
            cdp.send("Storage.clearDataForOrigin", {"origin": self.origin, "storageTypes": "local_storage,cookies"})
        finally:
            cdp.detach()
        self.page.set_viewport_size(VIEWPORT)
        self.page.goto(self.url)
        self.page.wait_for_selector("#prompt-view .prompt-text", timeout=60_000)
        self.page.wait_for_selector("#messages-editor .cm-content", state="attached", timeout=60_000)  # (see open_app)
        self.loads += 1
        self.mounted = False

    def _tidy(self) -> str:
        """Undo what the page itself can undo, pick the default preset through its picker (the
        workspace, the run, the draft, the settings as a new visitor has them), forget what the browser
        saved, and return the page's state once every answer is drawn."""
        page = self.page
        page.unroute_all(behavior="ignoreErrors")  # (requests a test held back)
        page.set_viewport_size(VIEWPORT)
        if not self.mounted:
            # Gradio draws a tab or an accordion the first time it is shown, and keeps it: everything
            # is drawn once in the known state, so a test that only looks at one leaves it as it was.
            page.evaluate(MOUNT_JS)
            self.mounted = True
        page.mouse.move(0, 0)
        page.evaluate(TIDY_JS)
        for toggle in ("#show-whitespace input", "#show-tokens input", "#pv-by-message"):
            box = page.locator(toggle)
            if box.count() and box.is_checked():
                box.uncheck()
        self._settle()  # a run stopped, the toggles answered
        # The runner first: a preset picked keeps the one chosen.
        if page.locator("#runner-choice input").input_value() != RECORDED_LABEL:
            page.click("#runner-choice input")
            page.click(f'#runner-choice [role="option"][aria-label="{RECORDED_LABEL}"]')
            self._settle()
        with page.expect_response(lambda r: r.request.method == "POST" and "/gradio_api/" in r.url):
            page.click("#preset-picker input")
            page.click(f'#preset-picker [role="option"][aria-label="{DEFAULT_PRESET_LABEL}"]')
        self._settle()
        page.evaluate(TIDY_JS)  # (the picker's list had the focus)
        page.evaluate("localStorage.clear(); sessionStorage.clear()")
        page.evaluate(QUIET_JS, 100)
        return page.evaluate(STATE_JS, SAVED_WORKSPACE)

    def _settle(self) -> None:
        """Wait until no request is in flight and the page has not changed for a moment."""
        for _ in range(3):
            self.page.wait_for_function("() => true")  # a round trip: events queued by the page are sent
            for _ in range(400):  # (20 s at most)
                if not self.pending:
                    break
                self.page.wait_for_timeout(50)
            if self.pending and os.environ.get("SHARED_TAB_DEBUG"):
                print("still pending:", [r.url for r in self.pending], file=sys.stderr)
            self.page.evaluate(QUIET_JS, 200)
            if not self.pending:
                return


def _diff(known: str, now: str, how: str) -> str:
    lines = list(difflib.unified_diff(known.splitlines(), now.splitlines(), "known", how, lineterm="", n=1))
    return "\n".join(line[:400] for line in lines[:120])
