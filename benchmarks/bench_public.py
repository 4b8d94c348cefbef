"""Latency of a public server under load (issue 11, "many users"): the playground served with
PLAYGROUND_PUBLIC=1 on a free 127.0.0.1 port; 20 visitors edit at once through `gradio_client`,
without and with one session flooding it with hostile edits (tests/load_scenario.py). Prints the
percentiles of the visitors' refresh latency and how fast a newcomer gets the page and a first edit.

Run: `python -m benchmarks.bench_public [--sessions 20] [--rounds 3]`."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from tests.load_scenario import run_scenario
from tests.servers import free_port, serving

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    port = free_port()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False", "PLAYGROUND_PUBLIC": "1"}
    url = f"http://127.0.0.1:{port}/"
    (ROOT / "artifacts").mkdir(exist_ok=True)
    with serving([sys.executable, "app.py", "--port", str(port)], url, ROOT / "artifacts" / "bench-public.log",
                 env=env, cwd=ROOT, timeout=120):
        print(f"{'scenario':<34}{'p50':>7}{'p90':>7}{'p99':>7}{'max':>7}  newcomer page / first edit")
        for sessions, attack in ((args.sessions, False), (args.sessions, True)):
            outcome = run_scenario(url, sessions=sessions, rounds=args.rounds, attack=attack)
            p = outcome.percentiles()
            label = f"{sessions} visitors" + (f" + attacker ({outcome.attacker_calls} calls)" if attack else "")
            print(f"{label:<34}{p['p50']:>6.2f}s{p['p90']:>6.2f}s{p['p99']:>6.2f}s{p['max']:>6.2f}s  "
                  f"{outcome.newcomer_page:.2f} s / {outcome.newcomer_refresh:.2f} s"
                  + (f"  ERRORS {outcome.errors[:2]}" if outcome.errors else "")
                  + (f"  WRONG {outcome.wrong[:2]}" if outcome.wrong else ""), flush=True)


if __name__ == "__main__":
    main()
