"""Issues 11 and 25: the playground served in public mode, behind a proxy as on a Space (one trusted
hop; each client sends its own address). 20 visitors edit at once through `gradio_client` while one
session floods it with hostile edits; then each of issue 25's attacks runs for a few seconds
(tests/attacks.py: compile bombs, memory, big tokenizers, 45 sessions of one client, hostile checks,
disk), with visitors editing and a newcomer arriving. During each, the newcomer's page and the
visitors' edits stay fast and correct; after each, once the attacker's sessions are idle past the
limit, the memory of the server and its workers comes back and the disk is as it was. The server
runs with `PLAYGROUND_STRICT_ROUTING=1`: a visitor's template compiled in the server is refused
and logged. Latency and memory tables: benchmarks/bench_public."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.attacks import ATTACKS, Phase, quiet, run_phase
from tests.load_scenario import run_scenario
from tests.servers import free_port, serving

ROOT = Path(__file__).resolve().parent.parent
MB = 1_000_000
# Short limits, so the test can wait them out: sessions idle this long are released, files this old deleted.
IDLE_MINUTES, TEMP_MINUTES = 0.17, 0.05


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int, list[Path], Path]]:
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
    with serving([sys.executable, "app.py", "--port", str(port)], url, log, env=env, cwd=ROOT, timeout=120) as process:
        yield url, process.pid, folders, log


@pytest.fixture(scope="module")
def calm(server) -> Phase:
    """The same visitors and newcomer with no attack, on this machine as it is loaded now."""
    url, pid, folders, _ = server
    return run_phase(url, pid, folders, quiet, seconds=4, visitors=3, settle=0)


def test_twenty_visitors_and_an_attacker(server, calm: Phase) -> None:
    url = server[0]
    outcome = run_scenario(url, sessions=20, rounds=2)
    print(f"\ninnocent refresh latency under attack: {outcome.percentiles()}; newcomer page {outcome.newcomer_page:.2f} s, "
          f"first refresh {outcome.newcomer_refresh:.2f} s; attacker calls {outcome.attacker_calls}")
    assert outcome.errors == [] and outcome.wrong == []
    assert len(outcome.latencies) == 40  # every innocent edit answered, each with its own prompt
    assert outcome.attacker_calls > 20
    # The newcomer's page is answered within 2 s (the bound on an idle machine; on a shared one,
    # within three times what it took with no attack); its first edit is answered correctly too.
    assert outcome.newcomer_page <= max(2, 3 * (calm.newcomer_page or 0)) and outcome.newcomer_refresh is not None


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_an_attack_neither_freezes_nor_fills_the_server(server, attack: str) -> None:
    url, pid, folders, log = server
    phase = run_phase(url, pid, folders, ATTACKS[attack], seconds=5, visitors=3, settle=IDLE_MINUTES * 60 + 5, calm=3)
    calm = phase.calm
    print(f"\n{attack}: visitors' edits p95 {phase.p95():.2f} s ({len(phase.latencies)}), newcomer page "
          f"{phase.newcomer_page:.2f} s, edit {phase.newcomer_edit:.2f} s, checks {phase.visitor_checks}; memory "
          f"{phase.memory_before / MB:.0f} -> peak {phase.memory_peak / MB:.0f} -> {phase.memory_after / MB:.0f} MB; "
          f"disk {phase.disk_before / MB:.2f} -> {phase.disk_after / MB:.2f} MB; attacker calls {phase.attacker_calls}")
    assert phase.errors == [] and phase.wrong == []
    assert phase.latencies and phase.attacker_calls > 0
    # During the attack: a newcomer's page within 2 s, a visitor's edits within 2 s (p95): the issue's
    # bounds on an idle machine; on a shared one, within three times what they got just before, with no attack.
    assert phase.newcomer_page is not None and phase.newcomer_page <= max(2, 3 * (calm.newcomer_page or 0))
    assert phase.p95() <= max(2, 3 * calm.p95())
    if attack.startswith("checks"):  # were 56.5 s behind two hostile sessions' checks, a third 120 s
        assert phase.visitor_checks is not None and phase.visitor_checks <= 20
    # After it: memory within 300 MB of where it started, the disk where it was.
    assert phase.memory_after <= phase.memory_before + 300 * MB
    assert phase.disk_after <= phase.disk_before + 64_000
    assert "Rule broken" not in log.read_text()  # nothing compiled in the server process
