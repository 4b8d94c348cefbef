"""Module-level functions for sandbox tests to run in a worker process (workers import by name)."""

from __future__ import annotations

import os
import time


def nap(seconds: float) -> int:
    """Sleep, then say which process did."""
    time.sleep(seconds)
    return os.getpid()
