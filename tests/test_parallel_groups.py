"""The README's test command runs the suite in two processes (`-n 2 --dist loadgroup`): each module on
one process (its module fixtures start once) and every browser test on the same one (one app server,
one Chromium). tests/conftest.py decides that from each test's path; a run that stopped keeping
modules together (as with pytest 9.2 and xdist's own groups: every test its own group) would start a
module's servers on both processes and take twice as long, with nothing else failing."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from tests.conftest import pytest_xdist_make_scheduler

ROOT = Path(__file__).resolve().parent.parent


class _Options:
    """The run's options as `-n 2 --dist <dist>` sets them, the rest as this run's."""

    def __init__(self, config: pytest.Config, dist: str) -> None:
        self._config, self._asked = config, {"dist": dist, "tx": ["2*popen"]}

    def getvalue(self, name: str) -> object:
        return self._asked[name] if name in self._asked else self._config.getvalue(name)

    def __getattr__(self, name: str) -> object:
        return getattr(self._config, name)


def test_every_browser_test_is_in_one_group_and_every_other_module_in_its_own(pytestconfig: pytest.Config):
    split = pytest_xdist_make_scheduler(_Options(pytestconfig, "loadgroup"), None)._split_scope
    assert split("tests/browser/test_page.py::test_axe[dark]") == split("tests/browser/test_draft.py::test_a") == "browser"
    assert split("tests/test_hub.py::test_a") == split("tests/test_hub.py::test_b[x::y]") == "tests/test_hub.py"
    assert split("tests/test_cli.py::test_a") != split("tests/test_hub.py::test_a")
    # Other ways of spreading the tests are left to xdist as asked.
    assert pytest_xdist_make_scheduler(_Options(pytestconfig, "load"), None) is None


@pytest.mark.slow  # a real parallel run: two worker processes
def test_a_parallel_run_keeps_each_module_on_one_process():
    modules = ["tests/test_inputs.py", "tests/test_errors.py"]  # 22 tests and 3: spread apart, they would not stay together
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2", "--dist", "loadgroup",
                           "-v", *modules], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:]
    workers = defaultdict(set)
    for worker, module in re.findall(r"\[(gw\d)\] .*?PASSED (tests/\S+?\.py)::", done.stdout):
        workers[module].add(worker)
    assert set(workers) == set(modules), done.stdout[-3000:]
    assert all(len(seen) == 1 for seen in workers.values()), dict(workers)
