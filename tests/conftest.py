"""Fixtures every test module may use."""

from __future__ import annotations

import os

# Tests reach 127.0.0.1 only: no telemetry from gradio or huggingface_hub (set before either is imported).
os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"
os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BROWSER_TESTS = ROOT / "tests" / "browser"
# Modules whose every test is slow (each marks itself: `pytestmark = pytest.mark.slow`), by path under
# tests/; slow tests elsewhere carry `@pytest.mark.slow` one by one.
SLOW_MODULES = ("test_public_server.py", "test_benchmarks.py", "test_fuzz.py", "test_real_model.py", "test_real_model_serve.py")


def group_of(path: str) -> str:
    """The process group of a test file (`path` relative to the repository, as in a node id): every
    browser test in one, else the module's own."""
    return "browser" if path.startswith(BROWSER_TESTS.relative_to(ROOT).as_posix() + "/") else path


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """Two processes share the suite (`-n 2 --dist loadgroup` in .ci/run, pytest-xdist): each module
    stays on one of them, so its module fixtures (a public server, a `transformers serve`) start once,
    and every browser test on the same one, so one app server and one Chromium serve them all (a
    group per browser module ran 12% longer: two of each on two cores; so did three processes).

    The groups are read from each test's path here, not from `xdist_group` marks: xdist 3.8 puts a
    mark's group into the test's node id, which pytest 9.2 no longer lets it change, and then every
    test became a group of its own (module fixtures started on both processes, a run twice as long)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByGroup(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid.split("::", 1)[0])

    return ByGroup(config, log)


@pytest.hookimpl(trylast=True)  # after tests/browser/conftest.py has marked its tests
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Fail collection when a test lacks the marker the fast loop (`-m "not browser and not slow"`)
    leaves it out by: every test under tests/browser is `browser`, every test of SLOW_MODULES `slow`."""
    unmarked = [f"{item.nodeid}: needs @pytest.mark.{marker}" for item in items for marker, needed in (
        ("browser", Path(item.path).is_relative_to(BROWSER_TESTS)),
        ("slow", Path(item.path).relative_to(ROOT / "tests").as_posix() in SLOW_MODULES),
    ) if needed and item.get_closest_marker(marker) is None]  # fmt: skip
    if unmarked:
        raise pytest.UsageError("Tests without their marker (see pytest.ini):\n" + "\n".join(unmarked))


@pytest.fixture
def cli(capsys: pytest.CaptureFixture) -> Callable[..., subprocess.CompletedProcess]:
    """`python -m engine ARGS` run in this process (`engine.cli.main`, what `__main__` calls), with
    the exit code and output a subprocess would give: starting Python and transformers for every
    call would take seconds. Each command also has one real subprocess test (`engine_process`)."""
    from engine.cli import main

    def run(*args: object) -> subprocess.CompletedProcess:
        capsys.readouterr()  # start from empty output
        try:
            code = main([str(a) for a in args])
        except SystemExit as e:  # argparse's own usage errors
            code = e.code if isinstance(e.code, int) else 2
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(args, code, out, err)

    return run


def engine_process(*args: object, timeout: float = 120) -> subprocess.CompletedProcess:
    """`python -m engine ARGS` as a real subprocess (one smoke test per command)."""
    return subprocess.run([sys.executable, "-m", "engine", *map(str, args)], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="session")
def smollm2():
    """The real chat model (tests/real_model.py), installed and converted once for the session."""
    from tests.real_model import installed_smollm2

    return installed_smollm2()
