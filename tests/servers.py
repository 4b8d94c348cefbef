"""Real servers the tests start on 127.0.0.1 (the playground, `transformers serve`): a free port,
a bounded wait until they answer, and a clean stop."""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def serving(command: list[str], ready_url: str, log_path: Path, *, env: dict, cwd: Path | None = None,
            timeout: float = 120) -> Iterator[subprocess.Popen]:
    """Run `command` until `ready_url` answers 200 (within `timeout` seconds), then stop it. Output
    goes to `log_path`; a server that exits or never answers fails with the end of its log."""
    with open(log_path, "w+") as log:
        process = subprocess.Popen(command, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    with urllib.request.urlopen(ready_url, timeout=2) as response:
                        if response.status == 200:
                            break
                except OSError:
                    pass
                if process.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    raise RuntimeError(f"{command[1:3]} did not start (exit {process.poll()}):\n{log.read()[-3000:]}")
                time.sleep(0.3)
            yield process
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)
