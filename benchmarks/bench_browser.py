"""What a user feels, measured in a real browser: the app served by `python app.py` on a free
127.0.0.1 port, driven by Debian's Chromium with Playwright (as tests/browser does).

- `page_load_s`: request → the first rendered prompt visible (fresh browser contexts, so nothing is
  cached in the page; the first right after the server answered, the others warm);
- `preset_switch_ms`: choose another preset in the picker → its prompt visible (every preset, 3 rounds);
- `keystroke_ms`: type one character into the chat template (a literal the prompt shows, at the
  start of the template) → the updated prompt visible, 20 edits; and (`explained_p50`) a character
  typed before a pause → that prompt shown with where its characters came from, 5 edits;
- `stream_wire_ratio`: the bytes the server sends the page for a 20,000-token run (pasted output,
  no pace), as Chromium's network layer received them on Gradio's event stream, over the bytes of
  the raw output;
- `app_rss_mb`: resident memory of the app's processes (the server and its render workers; no
  model loaded) after one run of each preset.

Times are taken in the page (`performance.now()`): from the key press or the option's mousedown
(captured before the page handles it) to the first animation frame in which the prompt shows the
expected text, so Playwright's own round trips are not counted.
Run: `python -m benchmarks.bench_browser [--quick]`."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]  # fmt: skip

# In every page: when the last key went down and the last option was pressed (capture phase: before
# the page's own handlers), and the prompt's text as a person reads it (markers left out, visible
# whitespace marks and the newline marks of tokens removed).
INIT_SCRIPT = """
window.__bench = {key: 0, option: 0};
document.addEventListener('keydown', () => { window.__bench.key = performance.now(); }, true);
document.addEventListener('mousedown', (e) => {
  if (e.target.closest && e.target.closest('[role=option]')) window.__bench.option = performance.now();
}, true);
window.__promptText = () => {
  const p = document.querySelector('#prompt-view .prompt-text');
  if (!p) return null;
  const copy = p.cloneNode(true);
  for (const m of copy.querySelectorAll('.mark, .ws')) m.remove();
  return copy.textContent;
};
"""
# Resolves (polled once per animation frame) with the time the prompt shows `expected`.
PROMPT_IS = "(expected) => window.__promptText() === expected ? performance.now() : false"


def percentile(values: list[float], q: float) -> float:
    """The q-quantile (0..1), linear between ranks."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    position = q * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def p50_p95(values: list[float]) -> dict[str, float]:
    return {"p50": statistics.median(values), "p95": percentile(values, 0.95), "n": len(values)}


class AppServer:
    """`python app.py` on a free 127.0.0.1 port, started on entering (so it can start while other
    work goes on); `ready()` waits until it answers and gives (url, pid)."""

    def __init__(self, timeout: float = 120):
        self.timeout = timeout
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> AppServer:
        from tests.servers import free_port

        self.url = f"http://127.0.0.1:{free_port()}/"
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False", "PYTHONUNBUFFERED": "1"}
        (ROOT / "artifacts").mkdir(exist_ok=True)
        self.log = open(ROOT / "artifacts" / "bench-app.log", "w+")
        port = self.url.rsplit(":", 1)[1].strip("/")
        self.process = subprocess.Popen([sys.executable, "app.py", "--port", port], cwd=ROOT, env=env, stdout=self.log,
                                        stderr=subprocess.STDOUT)  # fmt: skip
        self.started = time.monotonic()
        return self

    def ready(self) -> tuple[str, int]:
        assert self.process is not None
        deadline = self.started + self.timeout
        while True:
            try:
                with urllib.request.urlopen(self.url, timeout=2) as response:
                    if response.status == 200:
                        return self.url, self.process.pid
            except OSError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.log.seek(0)
                raise RuntimeError(f"the app did not start (exit {self.process.poll()}):\n{self.log.read()[-3000:]}")
            time.sleep(0.2)

    def __exit__(self, *exc: object) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self.log.close()



def rss_mb(pid: int) -> dict[str, float]:
    """Resident memory (MB) of process `pid` and of its descendants (the render workers, the
    fork server), read from /proc."""
    def rss(p: int) -> float:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        except OSError:
            pass
        return 0.0

    def children(p: int) -> list[int]:
        out = []
        for task in Path(f"/proc/{p}/task").glob("*"):
            try:
                out += [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
        return out

    todo, descendants = children(pid), []
    while todo:
        child = todo.pop()
        descendants.append(child)
        todo += children(child)
    server = rss(pid)
    workers = sum(rss(c) for c in descendants)
    return {"server": server, "workers": workers, "total": server + workers}


def expected_prompts() -> dict[str, str]:
    """Each preset's first prompt (its default case), rendered by the engine."""
    from engine.presets import load_preset, preset_names
    from engine.workspace import Workspace

    prompts = {}
    for name in preset_names():
        rendered = Workspace.from_preset(load_preset(name)).render()
        assert rendered.prompt is not None, name
        prompts[name] = rendered.prompt
    return prompts


def open_page(browser, url: str):
    context = browser.new_context(viewport={"width": 1500, "height": 1000})
    context.add_init_script(INIT_SCRIPT)
    page = context.new_page()
    page.set_default_timeout(60_000)
    return context, page


def page_load(browser, url: str, expected: str) -> float:
    """Seconds from the request to the frame that shows the default preset's prompt."""
    context, page = open_page(browser, url)
    try:
        page.goto(url, wait_until="commit")
        shown = page.wait_for_function(PROMPT_IS, arg=expected, polling="raf", timeout=60_000).json_value()
        return shown / 1000  # performance.now() counts from the navigation's start
    finally:
        context.close()


def pick(page, elem_id: str, label: str) -> None:
    page.click(f"#{elem_id} input")
    page.click(f'#{elem_id} [role="option"][aria-label="{label}"]')


def preset_switches(page, prompts: dict[str, str], rounds: int) -> list[float]:
    """Milliseconds from pressing each preset's option to its prompt on screen, `rounds` times over
    every preset (each switch from the one before)."""
    from app.sources import preset_choices

    times = []
    choices = preset_choices()
    for _ in range(rounds):
        for display, name in choices[1:] + choices[:1]:  # the page starts on the first default preset
            pick(page, "preset-picker", display)
            shown = page.wait_for_function(PROMPT_IS, arg=prompts[name], polling="raf").json_value()
            times.append(shown - page.evaluate("window.__bench.option"))
    return times


def keystrokes(page, prompt: str, edits: int) -> list[float]:
    """Milliseconds from a key press (a letter typed at the start of the chat template, which the
    prompt shows first) to the prompt showing it."""
    editor = page.locator("#chat-editor .cm-content")
    editor.click()
    page.keyboard.press("Control+Home")
    times = []
    for n in range(1, edits + 1):
        page.keyboard.type("a")
        shown = page.wait_for_function(PROMPT_IS, arg="a" * n + prompt, polling="raf").json_value()
        times.append(shown - page.evaluate("window.__bench.key"))
        page.wait_for_timeout(150)  # a typist's pause: each edit measured on its own
    return times


# Resolves with the time the prompt shows `expected` with where its characters came from (the page asks
# for that once the author pauses: app/provenance.js).
PROMPT_EXPLAINED = """(expected) => { const p = document.querySelector('#prompt-view .prompt-text');
  return p && p.dataset.pieces && !p.dataset.explain && window.__promptText() === expected ? performance.now() : false; }"""


def explained_after(page, prompt: str, typed: int, edits: int) -> list[float]:
    """Milliseconds from a key press (the author then pauses) to its prompt shown explained, after
    `typed` letters `keystrokes` typed."""
    times = []
    for n in range(typed + 1, typed + edits + 1):
        page.keyboard.type("a")
        shown = page.wait_for_function(PROMPT_EXPLAINED, arg="a" * n + prompt, polling="raf").json_value()
        times.append(shown - page.evaluate("window.__bench.key"))
        page.wait_for_timeout(300)
    return times


def set_number(page, elem_id: str, value: float) -> None:
    box = page.locator(f"#{elem_id} input[type=number]")
    box.fill(str(value))
    box.press("Enter")


def wait_for_run(page, expect: str = "", timeout: float = 120_000) -> str:
    """The run's stats once it has ended (and they contain `expect`, e.g. its chunk count)."""
    page.wait_for_function(
        """(expect) => { const s = document.querySelector('#run-stats'); const t = s ? s.textContent.replace(/\\s+/g, '') : '';
                        return /status(done|stopped|failed)/.test(t) && t.includes(expect); }""",
        arg=expect, timeout=timeout,
    )  # fmt: skip
    return page.locator("#run-stats").text_content() or ""


def run_each_preset(page, prompts: dict[str, str]) -> None:
    """One run of each preset's first recording, at once (pace 0)."""
    from app.sources import preset_choices

    for display, name in preset_choices():
        pick(page, "preset-picker", display)
        page.wait_for_function(PROMPT_IS, arg=prompts[name], polling="raf")
        set_number(page, "pace", 0)
        page.click("#run-button")
        assert "done" in wait_for_run(page), name


def wire_bytes(context, page, output: str) -> dict:
    """What the server sends the page while `output` (pasted, no pace) streams: the bytes Chromium
    received on Gradio's event stream from pressing Run to the final update, decoded (what Gradio
    wrote) and as they came over the connection."""
    from engine.runners import split_tokens

    cdp = context.new_cdp_session(page)
    urls: dict[str, str] = {}
    received: list[dict] = []
    cdp.on("Network.requestWillBeSent", lambda e: urls.__setitem__(e["requestId"], e["request"]["url"]))
    cdp.on("Network.dataReceived", lambda e: received.append(e))
    cdp.send("Network.enable")
    pick(page, "recording-picker", "Paste an output…")
    page.fill("#pasted-output textarea", output)
    set_number(page, "pace", 0)
    page.wait_for_timeout(1500)  # the settings' own events settle first
    received.clear()
    page.click("#run-button")
    stats = wait_for_run(page, f"chunks{len(split_tokens(output)):,}")
    page.wait_for_timeout(1000)  # the last bytes of the stream
    cdp.send("Network.disable")
    assert "done" in stats, stats
    stream = [e for e in received if "/queue/data" in urls.get(e["requestId"], "")]
    decoded = sum(e["dataLength"] for e in stream)
    encoded = sum(e.get("encodedDataLength", 0) for e in stream)
    raw = len(output.encode())
    return {"ratio": decoded / raw, "sent_bytes": decoded, "wire_bytes": encoded, "output_bytes": raw,
            "chunks": len(stream)}  # fmt: skip


def main(quick: bool = False, server: AppServer | None = None) -> dict:
    """The browser figures: page_load_s, preset_switch_ms, keystroke_ms, app_rss_mb, stream_wire_ratio
    (on `server`, or on an app started here)."""
    if server is None:
        with AppServer() as started:
            return main(quick, started)
    from playwright.sync_api import sync_playwright

    from benchmarks.bench_stream import recording

    prompts = expected_prompts()
    default = "smollm3"
    tokens = 2_000 if quick else 20_000
    out: dict = {}
    url, pid = server.ready()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            loads = [page_load(browser, url, prompts[default]) for _ in range(2 if quick else 7)]
            warm = loads[1:]
            out["page_load_s"] = {"p50": statistics.median(warm), "max": max(warm), "first": loads[0], "n": len(warm)}
            print(f"page load: first {loads[0]:.2f} s after the server answered; then {', '.join(f'{t:.2f}' for t in warm)} s")
            context, page = open_page(browser, url)
            page.goto(url)
            page.wait_for_function(PROMPT_IS, arg=prompts[default], polling="raf")
            switches = preset_switches(page, prompts, 1 if quick else 3)
            out["preset_switch_ms"] = p50_p95(switches)
            print(f"preset switch: {', '.join(f'{t:.0f}' for t in switches)} ms")
            keys = keystrokes(page, prompts[default], 5 if quick else 20)
            out["keystroke_ms"] = p50_p95(keys)
            print(f"keystroke: {', '.join(f'{t:.0f}' for t in keys)} ms")
            explained = explained_after(page, prompts[default], len(keys), 2 if quick else 5)
            out["keystroke_ms"]["explained_p50"] = statistics.median(explained)
            print(f"its explanation, the author pausing: {', '.join(f'{t:.0f}' for t in explained)} ms after the key")
            context.close()
            context, page = open_page(browser, url)
            page.goto(url)
            page.wait_for_function(PROMPT_IS, arg=prompts[default], polling="raf")
            run_each_preset(page, prompts)
            memory = rss_mb(pid)
            out["app_rss_mb"] = {"total": memory["total"], "server": memory["server"], "workers": memory["workers"]}
            print(f"memory after one run of each preset: server {memory['server']:.0f} MB + render workers "
                  f"{memory['workers']:.0f} MB = {memory['total']:.0f} MB")  # fmt: skip
            wire = wire_bytes(context, page, recording(tokens))
            out["stream_wire_ratio"] = wire
            print(f"a {tokens:,}-token run sent {wire['sent_bytes']:,} bytes ({wire['wire_bytes']:,} on the wire) for "
                  f"{wire['output_bytes']:,} bytes of output: {wire['ratio']:.2f}x")  # fmt: skip
            context.close()
        finally:
            browser.close()
    return out


if __name__ == "__main__":
    import json

    print(json.dumps(main("--quick" in sys.argv), indent=2))
