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


_prepared: list[int] = []


def prepare() -> None:
    """What a worker does when the pool warms it (`Pool.warm(prepare=...)`): remember it did."""
    _prepared.append(os.getpid())


def prepared() -> list[int]:
    """The processes that prepared this worker (its own pid, once, when it was warmed)."""
    return list(_prepared)


def fail() -> None:
    raise RuntimeError("this preparation fails")
