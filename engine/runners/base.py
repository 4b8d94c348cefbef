"""What every runner shares: the chunks it streams, the error it raises, and the interface the
playground and the command line drive it through."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ..diagnostics import Diagnostic


@dataclass(frozen=True)
class Chunk:
    """One piece of streamed output: its text, the tokens generated so far (cumulative) and the
    seconds since the run started."""

    text: str
    tokens: int
    seconds: float


class RunnerError(Exception):
    """A run failed (no model, no server, bad settings…). Carries a diagnostic (source "runner")
    that says what happened and what to do about it; runners raise nothing else."""

    def __init__(self, message: str, hint: str | None = None, severity: str = "error"):
        super().__init__(message)
        self.diagnostic = Diagnostic(severity, message, "runner", hint=hint)  # type: ignore[arg-type]


@runtime_checkable
class Runner(Protocol):
    """Streams a model's output for a rendered prompt. `tools` are the case's tools (for runners
    that need them); setting `stop` ends the stream promptly. `diagnostics` holds warnings found
    while streaming (read it after the stream ends): they do not stop the run."""

    diagnostics: list[Diagnostic]

    def stream(
        self, prompt: str, *, tools: list | None = None, stop: threading.Event | None = None
    ) -> Iterator[Chunk]: ...


def paced(pieces: list[str], tokens_per_second: float, stop: threading.Event | None) -> Iterator[Chunk]:
    """Yield `pieces` as chunks, one token each, at `tokens_per_second` (0: as fast as possible).
    Waiting on the stop event rather than sleeping lets Stop end a slow replay at once."""
    start = time.monotonic()
    for count, piece in enumerate(pieces, 1):
        if stop is not None and stop.is_set():
            return
        if tokens_per_second > 0:
            delay = start + (count - 1) / tokens_per_second - time.monotonic()
            if delay > 0 and stop is not None and stop.wait(delay):
                return
            if delay > 0 and stop is None:
                time.sleep(delay)
        yield Chunk(piece, count, time.monotonic() - start)
