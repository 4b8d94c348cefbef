"""Issues 11 and 25: the playground served in public mode, behind a proxy as on a Space (one trusted
hop; each client sends its own address). 20 visitors edit at once through `gradio_client` while one
session floods it with hostile edits; then each of issue 25's attacks runs for a few seconds, one
after another (tests/attacks.py: compile bombs, memory, big tokenizers, 45 sessions of one client,
hostile checks, disk), with visitors editing and a newcomer arriving during each. During each, every
edit is answered with the visitor's own prompt and the newcomer is served: the server is neither
frozen nor mixed up. After the last (watched until the attackers' sessions are idle past the limit,
and 30 s more), the memory of the server and its workers comes back within 300 MB of where it was
before the first and the disk to where it was: what every attack left behind, together. The server runs with
`PLAYGROUND_STRICT_ROUTING=1`: a visitor's template compiled in the server is refused and logged.

Speed targets are not asserted here (the machine is shared): a page or an edit only fails the test
when it takes as long as a frozen server did (issue 25 measured freezes of 10 to 135 s).
benchmarks/bench_public measures each attack on its own and reports the issue's targets (a
newcomer's page ≤ 2 s, visitors' edits p95 ≤ 2 s) as met or missed."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine import limits
from tests.attacks import ATTACKS, MB, Attacker, Phase, quiet, run_phases
from tests.load_scenario import run_scenario
from tests.servers import free_port, serving

# Minutes each: a real public server under every attack (pytest.ini: the fast loop leaves them out).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
# Short limits, so the test can wait them out: sessions idle this long are released (the server sweeps
# four times per limit), files this old deleted. Not shorter: a visitor's edit waiting in the queue
# behind an attack (seconds) must not count as the visitor having left.
IDLE_MINUTES, TEMP_MINUTES = 0.17, 0.05
# Seconds a page or an edit may take before the server counts as frozen here: the freezes issue 25
# measured lasted 10 s and more; on a loaded machine, three times what it took with no attack.
FROZEN = 8


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int, list[Path], Path, list[Attacker]]]:
    port = free_port()
    base = tmp_path_factory.mktemp("public-server")
    folders = [base / "gradio", base / "tmp"]
    for folder in folders:
        folder.mkdir()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "GRADIO_ANALYTICS_ENABLED": "False", "PYTHONUNBUFFERED": "1",
           "PLAYGROUND_PUBLIC": "1", "PLAYGROUND_PROXY_HOPS": "1", "PLAYGROUND_STRICT_ROUTING": "1",
           "PLAYGROUND_IDLE_MINUTES": str(IDLE_MINUTES), "PLAYGROUND_TEMP_FILE_MINUTES": str(TEMP_MINUTES),
           "GRADIO_TEMP_DIR": str(folders[0]), "TMPDIR": str(folders[1])}
    (ROOT / "artifacts").mkdir(exist_ok=True)
    log = ROOT / "artifacts" / "public-app.log"
    url = f"http://127.0.0.1:{port}/"
    # The attackers start (and wait) while the server starts: each is a process of its own.
    attackers = [Attacker(attack, url) for attack in ATTACKS.values()]
    try:
        with serving([sys.executable, "app.py", "--port", str(port)], url, log, env=env, cwd=ROOT, timeout=120) as process:
            yield url, process.pid, folders, log, attackers
    finally:
        for attacker in attackers:
            if attacker.process is not None and attacker.process.poll() is None:
                attacker.process.kill()
                attacker.process.wait(timeout=10)


@pytest.fixture(scope="module")
def calm(server) -> Phase:
    """The same visitors and newcomer with no attack, on this machine as it is loaded now."""
    url, pid, folders, _, _ = server
    return run_phases(url, pid, folders, [Attacker(quiet, url)], seconds=3, visitors=3, settle=0)[0]


@pytest.fixture(scope="module")
def attacked(server, calm: Phase) -> dict[str, Phase]:
    """Every attack in turn, then quiet until memory and disk are back: at most until the attackers'
    sessions are idle past the limit, and 30 s more (watched from the end of the last attack, not
    after a fixed wait: in the run measured, both were back at once)."""
    url, pid, folders, _, attackers = server
    phases = run_phases(url, pid, folders, attackers, seconds=3, visitors=3, settle=0,
                        settled_within=IDLE_MINUTES * 60 * 1.25 + 30)
    return {phase.name: phase for phase in phases}


def frozen(seconds: float | None, calm: float | None) -> bool:
    return seconds is None or seconds > max(FROZEN, 3 * (calm or 0))


def test_twenty_visitors_and_an_attacker(server, calm: Phase) -> None:
    url = server[0]
    outcome = run_scenario(url, sessions=20, rounds=2)
    print(f"\ninnocent refresh latency under attack: {outcome.percentiles()}; newcomer page {outcome.newcomer_page:.2f} s, "
          f"first refresh {outcome.newcomer_refresh:.2f} s; attacker calls {outcome.attacker_calls}")
    assert outcome.errors == [] and outcome.wrong == []
    assert len(outcome.latencies) == 40  # every innocent edit answered, each with its own prompt
    assert outcome.attacker_calls > 20
    # The newcomer is served, and its first edit answered correctly.
    assert not frozen(outcome.newcomer_page, calm.newcomer_page) and outcome.newcomer_refresh is not None


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_an_attack_neither_freezes_nor_fills_the_server(server, calm: Phase, attacked: dict[str, Phase], attack: str) -> None:
    folders, log = server[2], server[3]
    phase = attacked[attack]
    print(f"\n{attack}: visitors' edits p95 {phase.p95():.2f} s ({len(phase.latencies)}), newcomer page "
          f"{phase.newcomer_page:.2f} s, edit {phase.newcomer_edit:.2f} s, checks {phase.visitor_checks}; memory "
          f"{phase.memory_before / MB:.0f} -> peak {phase.memory_peak / MB:.0f} -> {phase.memory_after / MB:.0f} MB; "
          f"disk {phase.disk_before / MB:.2f} -> {phase.disk_after / MB:.2f} MB; attacker calls {phase.attacker_calls}")
    assert phase.errors == [] and phase.wrong == []  # every edit answered with the visitor's own prompt
    assert phase.latencies and phase.attacker_calls > 0
    # During the attack: a newcomer is served, and no visitor waits as long as a frozen server made them.
    assert not frozen(phase.newcomer_page, calm.newcomer_page) and phase.newcomer_edit is not None
    assert not frozen(phase.p95(), calm.p95())
    if attack.startswith("checks"):  # were 56.5 s behind two hostile sessions' checks, a third 120 s
        assert phase.visitor_checks is not None and phase.visitor_checks <= 20
    # After the attacks: memory within 300 MB of where it started, the disk where it was.
    assert phase.back(), ([f"{f} {f.stat().st_size}" for folder in folders for f in folder.rglob("*") if f.is_file()],
                          {process: f"{rss / MB:.0f} MB" for process, rss in phase.processes_after.items()})
    assert "Rule broken" not in log.read_text()  # nothing compiled in the server process


def _sessions_allowed(seconds: float) -> int:
    """New sessions one client may start in `seconds` from a full allowance (it refills evenly)."""
    return int(limits.CLIENT_NEW_SESSIONS * (1 + seconds / 60))


def _uploads_allowed(seconds: float) -> int:
    """Requests of 10 tiny files one client may upload in `seconds` from a full allowance: each file
    counts as its minimum, and the allowance refills evenly over the temporary-file time (short here)."""
    per_window = limits.CLIENT_UPLOAD_BYTES // (10 * limits.UPLOAD_FILE_MIN_BYTES)
    return int(per_window * (1 + seconds / (TEMP_MINUTES * 60))) + 1


# Issues 36, 37 and 29 (items 3, 4): what each attack on the request layer must have been answered.
ANSWERED = {
    "Gradio's deep link after each edit": lambda o: o["deep_link"] == [404],  # refused, nothing written
    "a format's examples added 60 times": lambda o: o["refused"] > 0 and o["added"] < limits.MAX_CASES,
    "uploads of 1,000 tiny files": lambda o: set(o["thousand_files"]) <= {413, 429} and o["ten_files_last"] == [429]
    and o["ten_files_accepted"] <= _uploads_allowed(o["ten_files_seconds"]),
    "GETs of the page, config and API info": lambda o: o["answered"] > 0 and o["other"] == [],
    "new sessions under escaped JSON keys": lambda o: o["sent"] == 60 and o["accepted"] <= _sessions_allowed(o["seconds"]),
    "new sessions from forged addresses": lambda o: o["sent"] == 25 and o["accepted"] <= _sessions_allowed(o["seconds"]),
}


@pytest.mark.parametrize("attack", list(ANSWERED))
def test_the_request_layer_refuses_each_attack_or_counts_it_within_its_budget(attacked: dict[str, Phase], attack: str) -> None:
    outcome = attacked[attack].outcome
    print(f"\n{attack}: {outcome}")
    assert ANSWERED[attack](outcome), outcome
