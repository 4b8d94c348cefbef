"""A public server under load and under attack (issues 11 and 25): the playground served with
PLAYGROUND_PUBLIC=1 on a free 127.0.0.1 port, behind a pretend proxy (one trusted hop; each client
sends its own address). First 20 visitors edit at once through `gradio_client`, without and with one
session flooding it with hostile edits (tests/load_scenario.py); then each of issue 25's attacks runs
for a while (tests/attacks.py) while visitors edit and a newcomer arrives, and after it the memory of
the server with its workers and the disk under its temporary folders are measured once the
attacker's sessions are idle past the limit (shortened for the run). Targets (issue 25): during each
attack a newcomer's page ≤ 2 s and the visitors' edits p95 ≤ 2 s; after it, memory within 300 MB of
where it started and the disk where it was. Issue 29's attacks are among them (deep call chains of a
recursive macro, explained; the share link of a huge conversation), and a browser tab opening that
link is timed at the end (a page script answers within 1 s). The attacks on the request layer (issues 36, 37, 29:
deep links, a format's examples, tiny files, GET floods, escaped session keys, forged addresses)
add what the attacker was answered to their row; before them, what the answers every visitor gets
(the page, its layout, the API's description) cost the server per call.

Run: `python -m benchmarks.bench_public [--sessions 20] [--rounds 3] [--seconds 10] [--only 'deep link,GETs']` (or
`python -m benchmarks --public`)."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from tests.attacks import ATTACKS, Phase, big_tokenizers, compile_bombs, quiet, run_phase
from tests.load_scenario import run_scenario
from tests.servers import free_port, serving

ROOT = Path(__file__).resolve().parent.parent
MB = 1_000_000
IDLE_MINUTES = 0.25  # the run waits this out after each attack (30 minutes on a real server)


def _row(phase: Phase) -> str:
    ok = (phase.newcomer_page or 99) <= 2 and phase.p95() <= 2 and phase.back() and not phase.errors and not phase.wrong
    checks = f"{phase.visitor_checks:.1f} s" if phase.visitor_checks is not None else ""
    return (f"| {phase.name} | {phase.attacker_calls} | {phase.p95():.2f} s ({len(phase.latencies)}) | "
            f"{phase.newcomer_page or 0:.2f} / {phase.newcomer_edit or 0:.2f} s | {checks} | "
            f"{phase.memory_before / MB:.0f} → {phase.memory_peak / MB:.0f} → {phase.memory_after / MB:.0f} MB | "
            f"{phase.disk_before / MB:.2f} → {phase.disk_after / MB:.2f} MB | {'met' if ok else 'MISSED'} |"
            + (f" errors: {phase.errors[:2]}" if phase.errors else "") + (f" wrong: {phase.wrong[:2]}" if phase.wrong else "")
            + (f" answered: {phase.outcome}" if phase.outcome else ""))


def answer_costs(url: str, pid: int, calls: int = 30) -> dict[str, tuple[int, float]]:
    """What the answers every visitor gets cost the server (issue 37: each was rebuilt per call):
    by path, its size and the server process's CPU seconds per call (the mean of `calls`, asked one
    after another by one client)."""
    costs = {}
    for path in ("/", "/config", "/gradio_api/info", "/gradio_api/info?all_endpoints=True", "/theme.css"):
        before, size = _cpu(pid), 0
        for _ in range(calls):
            with urllib.request.urlopen(url.rstrip("/") + path, timeout=60) as response:
                size = len(response.read())
        costs[path] = (size, (_cpu(pid) - before) / calls)
    return costs


def _cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tab_opening_largest_case(url: str) -> str:
    """Issue 29: a browser tab opening a share link of the largest case a workspace holds (thousands of
    empty messages in a link of a few kB): how long until its conversation is drawn, and the slowest
    of five page scripts after that (target: each within 1 s; before, the tab froze for minutes)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS
    from tests.browser.test_large_case import largest_case

    code, count = largest_case()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1500, "height": 1000})
            started = time.monotonic()
            page.goto(f"{url}#s={code}")
            try:
                page.wait_for_selector(f'#conversation[data-count="{count}"]', timeout=120_000)
            except PlaywrightTimeout:
                return f"a tab opening a share link of {count:,} messages: not drawn within 120 s — MISSED"
            drawn = time.monotonic() - started
            worst = 0.0
            for _ in range(5):
                asked = time.monotonic()
                try:
                    page.wait_for_function("() => true", timeout=10_000)
                except PlaywrightTimeout:
                    pass
                worst = max(worst, time.monotonic() - asked)
                page.wait_for_timeout(300)
        finally:
            browser.close()
    return (f"a tab opening a share link of {count:,} messages ({len(code):,} characters): conversation drawn in "
            f"{drawn:.1f} s, the slowest of 5 page scripts after it answered in {worst:.2f} s — "
            + ("met" if worst <= 1 else "MISSED"))


def main(argv: list[str] | None = None) -> list[Phase]:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=10, help="how long each attack runs")
    parser.add_argument("--only", default="", help="run only the attacks whose name holds one of these comma-separated "
                        "words (and no scenario), e.g. --only 'deep link,tiny files'")
    args = parser.parse_args(argv)
    port = free_port()
    base = Path(tempfile.mkdtemp(prefix="bench-public-"))
    folders = [base / "gradio", base / "tmp"]
    for folder in folders:
        folder.mkdir()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False", "PLAYGROUND_PUBLIC": "1",
           "PLAYGROUND_PROXY_HOPS": "1", "PLAYGROUND_STRICT_ROUTING": "1", "PLAYGROUND_IDLE_MINUTES": str(IDLE_MINUTES),
           "PLAYGROUND_TEMP_FILE_MINUTES": "0.1", "GRADIO_TEMP_DIR": str(folders[0]), "TMPDIR": str(folders[1])}
    url = f"http://127.0.0.1:{port}/"
    (ROOT / "artifacts").mkdir(exist_ok=True)
    phases = []
    with serving([sys.executable, "app.py", "--port", str(port)], url, ROOT / "artifacts" / "bench-public.log",
                 env=env, cwd=ROOT, timeout=120) as process:
        print("| answer (GET) | size | server CPU per call |\n|---|---|---|")
        for path, (size, cpu) in answer_costs(url, process.pid).items():
            print(f"| {path} | {size / 1000:.0f} kB | {cpu * 1000:.1f} ms |", flush=True)
        print(f"\n{'scenario':<34}{'p50':>7}{'p90':>7}{'p99':>7}{'max':>7}  newcomer page / first edit")
        for sessions, attack in ((args.sessions, False), (args.sessions, True)) if not args.only else ():
            outcome = run_scenario(url, sessions=sessions, rounds=args.rounds, attack=attack)
            p = outcome.percentiles()
            label = f"{sessions} visitors" + (f" + attacker ({outcome.attacker_calls} calls)" if attack else "")
            print(f"{label:<34}{p['p50']:>6.2f}s{p['p90']:>6.2f}s{p['p99']:>6.2f}s{p['max']:>6.2f}s  "
                  f"{outcome.newcomer_page:.2f} s / {outcome.newcomer_refresh:.2f} s"
                  + (f"  ERRORS {outcome.errors[:2]}" if outcome.errors else "")
                  + (f"  WRONG {outcome.wrong[:2]}" if outcome.wrong else ""), flush=True)
        print("\n| attack | attacker calls | visitors' edits p95 (n) | newcomer page / edit | a visitor's checks "
              "| memory before → peak → after | disk before → after | |")
        print("|---|---|---|---|---|---|---|---|")
        settle = IDLE_MINUTES * 60 + 8
        heavy = {compile_bombs: {"heavy": True}, big_tokenizers: {"megabytes": 35}}
        words = [word.strip().lower() for word in args.only.split(",") if word.strip()]
        chosen = [a for name, a in ATTACKS.items() if not words or any(word in name.lower() for word in words)]
        for attack in (quiet, *chosen):
            phase = run_phase(url, process.pid, folders, attack, seconds=args.seconds, visitors=4,
                              settle=settle if attack is not quiet else 0, **heavy.get(attack, {}))
            phases.append(phase)
            print(_row(phase), flush=True)
        print("\n" + tab_opening_largest_case(url), flush=True)
    return phases


if __name__ == "__main__":
    main()
