"""Many visitors and one attacker on a served playground, through `gradio_client` (what any API caller
can do), each a client of its own (its address in `X-Forwarded-For`, as the proxy in front of a Space
adds it). Used by tests/test_public_server.py (asserts) and benchmarks/bench_public.py (percentiles).

Each innocent visitor is its own session: it edits its own chat template (with its own marker) and
checks that the prompt it gets back is its own. The attacker, in one session, keeps submitting
hostile edits without waiting for answers (a backtracking regex on a long message, a looping
template, deep JSON) and runs the checks on a looping template."""

from __future__ import annotations

import html
import json
import os
import re
import statistics
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from gradio_client import Client

RESPONSE = json.dumps({"version": 1, "defaults": {"role": "assistant"}, "start_anchor": "<|im_start|>assistant\n",
                       "fields": {"content": {"close": "<|im_end|>"}}})
HOSTILE_REGEX = json.dumps({"version": 1, "start_anchor_pattern": "(a+)+$", "fields": {"content": {}}})
LOOP = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
DEEP = '{"version": 1, "start_anchor": "x", "fields": {"c": {"transform": ' + "[" * 5000 + "]" * 5000 + "}}}"
# gradio_client reports each Client to huggingface.co unless both its argument and this variable say
# no (it reads `analytics_enabled or GRADIO_ANALYTICS_ENABLED == "True"`): nothing here leaves 127.0.0.1.
os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"
CASE = "plain chat"  # the default preset's first case (what a new session holds)
SLOTS = 10  # the case form's template-kwarg slots after the fixed fields (bools, choices, texts)


def refresh_args(chat: str, response: str = RESPONSE, content: str = "hi") -> list:
    """The refresh endpoint's inputs: the editors, the case, whitespace off, then the case form."""
    messages = json.dumps([{"role": "user", "content": content}])
    slots = [False] * 4 + [None] * 3 + [""] * 3
    return [chat, response, CASE, False, messages, "", "", True, False, "", *slots[:SLOTS]]


def local_client(url: str, address: str | None = None) -> Client:
    """A gradio_client for the served app, sending nothing anywhere else; `address` is the client's
    own address as a proxy in front of the server reports it (the tests' servers trust one hop)."""
    return Client(url, verbose=False, analytics_enabled=False, headers={"X-Forwarded-For": address} if address else None,
                  httpx_kwargs={"timeout": 120})  # a busy shared machine: answers are timed, not cut off


@dataclass
class Outcome:
    latencies: list[float] = field(default_factory=list)  # seconds per innocent refresh
    wrong: list[str] = field(default_factory=list)  # sessions that saw something not theirs
    errors: list[str] = field(default_factory=list)
    newcomer_page: float | None = None  # GET / by a new visitor during the attack
    newcomer_refresh: float | None = None  # that visitor's first refresh
    attacker_calls: int = 0

    def percentiles(self) -> dict[str, float]:
        ordered = sorted(self.latencies)
        if not ordered:
            return {}
        cut = statistics.quantiles(ordered, n=100, method="inclusive") if len(ordered) > 1 else ordered * 99
        return {"p50": cut[49], "p90": cut[89], "p99": cut[98], "max": ordered[-1], "n": len(ordered)}


def shown_text(prompt_html: str) -> str:
    """The text of the prompt panel's HTML (each piece of a prompt is a span of its own)."""
    return html.unescape(re.sub(r"<[^>]+>", "", prompt_html))


def _innocent(url: str, index: int, rounds: int, outcome: Outcome) -> None:
    client = local_client(url, f"192.0.2.{index + 1}")
    for round_ in range(rounds):
        marker = f"SESSION-{index}-ROUND-{round_}"
        started = time.monotonic()
        try:
            result = client.predict(*refresh_args(marker + ": {{ messages[0].content }}", content=f"hello {index}"),
                                    api_name="/refresh")
        except Exception as e:  # noqa: BLE001 - reported by the caller
            outcome.errors.append(f"session {index}: {type(e).__name__}: {e}")
            continue
        outcome.latencies.append(time.monotonic() - started)
        prompt = shown_text(result[3] if isinstance(result, (list, tuple)) else "")
        if f"{marker}: hello {index}" not in prompt or "SESSION-" in prompt.replace(marker, ""):
            outcome.wrong.append(f"session {index} round {round_}: {prompt[:200]!r}")


def flood(url: str, stop: threading.Event, jobs: list) -> None:
    """The attacker of the scenario, in one session: hostile edits submitted without waiting for
    answers (a backtracking regex on a long message, a looping template, deep JSON) after the
    checks on a looping template, until `stop`; every job it submitted goes into `jobs`."""
    client = local_client(url, "198.51.100.1")
    hostile = [
        refresh_args("{{ messages[0].content }}", HOSTILE_REGEX, content="a" * 3000 + "!"),
        refresh_args(LOOP),
        refresh_args("{{ messages[0].content }}", DEEP),
    ]
    jobs.append(client.submit(*refresh_args(LOOP)[:3], *refresh_args(LOOP)[4:], api_name="/run_all_checks"))
    while not stop.is_set():
        for args in hostile:
            try:
                jobs.append(client.submit(*args, api_name="/refresh"))  # never waits for an answer
            except Exception:  # noqa: BLE001 - the attacker does not care
                jobs.append(None)
        stop.wait(0.05)


def newcomer(url: str, address: str, pages: int = 1) -> tuple[float, float, list[str], Client]:
    """A newcomer opens the page (`pages` times: the median is its time) and makes one edit: the
    page's seconds, the edit's, what it got that was not its own, and its client."""
    times = []
    for _ in range(pages):
        started = time.monotonic()
        with urllib.request.urlopen(url, timeout=60) as response:
            response.read()
        times.append(time.monotonic() - started)
        time.sleep(0.3 if pages > 1 else 0)
    client = local_client(url, address)
    started = time.monotonic()
    result = client.predict(*refresh_args("NEWCOMER: {{ messages[0].content }}"), api_name="/refresh")
    edit = time.monotonic() - started
    wrong = [] if "NEWCOMER: hi" in shown_text(result[3]) else [f"newcomer: {result[3][:200]!r}"]
    return statistics.median(times), edit, wrong, client


def run_scenario(url: str, sessions: int = 20, rounds: int = 5, attack: bool = True) -> Outcome:
    """`sessions` innocent visitors make `rounds` edits each while (optionally) an attacker floods the
    server; a newcomer then opens the page and makes one edit."""
    from tests.attacks import Attacker  # (it imports this module)

    outcome = Outcome()
    # The attacker is a process of its own: its client's hundreds of job threads (and their
    # cancelling, after) would otherwise take this process's CPU from the visitors' clients.
    attacker = Attacker(flood, url) if attack else None
    if attacker is not None:
        attacker.go()
        time.sleep(1.0)  # the attack is under way before anyone else arrives
    try:
        with ThreadPoolExecutor(max(1, sessions)) as pool:
            for index in range(sessions):
                pool.submit(_innocent, url, index, rounds, outcome)
            time.sleep(0.5)
            outcome.newcomer_page, outcome.newcomer_refresh, wrong, _ = newcomer(url, "192.0.2.250")
            outcome.wrong += wrong
    finally:
        if attacker is not None:
            outcome.attacker_calls = attacker.stop()
    return outcome
