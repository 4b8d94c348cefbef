"""Module-level functions for sandbox tests to run in a worker process (workers import by name)."""

from __future__ import annotations

import os
import time


def nap(seconds: float) -> int:
    """Sleep, then say which process did."""
    time.sleep(seconds)
    return os.getpid()


def leave_a_file(seconds: float) -> str:
    """Write a file where temporary files go, then sleep (killed mid-way, it leaves the file behind)."""
    import tempfile

    handle, path = tempfile.mkstemp(prefix="left-behind-")
    os.close(handle)
    time.sleep(seconds)
    return path


_held: list[bytearray] = []


def hold(megabytes: int) -> int:
    """Keep `megabytes` of memory in this worker (as a cache would), and say which process does."""
    _held.append(bytearray(b"x" * (megabytes * 1_000_000)))
    return os.getpid()
