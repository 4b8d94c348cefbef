"""Issue 11, "many users": the playground served in public mode, 20 visitors editing at once through
`gradio_client` while one session floods it with hostile edits (a backtracking regex, a looping
template, deep JSON, checks on a looping template). Every visitor gets its own correct prompt, and a
21st visitor arriving mid-attack gets the page within 2 s. Latency percentiles: benchmarks/bench_public."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.load_scenario import run_scenario
from tests.servers import free_port, serving

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def public_url() -> Iterator[str]:
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False", "PYTHONUNBUFFERED": "1",
           "PLAYGROUND_PUBLIC": "1"}
    (ROOT / "artifacts").mkdir(exist_ok=True)
    url = f"http://127.0.0.1:{port}/"
    with serving([sys.executable, "app.py", "--port", str(port)], url, ROOT / "artifacts" / "public-app.log", env=env,
                 cwd=ROOT, timeout=120):
        yield url


def test_twenty_visitors_and_an_attacker(public_url: str) -> None:
    outcome = run_scenario(public_url, sessions=20, rounds=2)
    print(f"\ninnocent refresh latency under attack: {outcome.percentiles()}; newcomer page {outcome.newcomer_page:.2f} s, "
          f"first refresh {outcome.newcomer_refresh:.2f} s; attacker calls {outcome.attacker_calls}")
    assert outcome.errors == [] and outcome.wrong == []
    assert len(outcome.latencies) == 40  # every innocent edit answered, each with its own prompt
    assert outcome.attacker_calls > 20
    # The newcomer's page is answered within 2 s (the bound; its first edit, which renders in
    # a worker, is answered correctly too: its time is in the benchmark, not asserted on a shared machine).
    assert outcome.newcomer_page < 2 and outcome.newcomer_refresh is not None
