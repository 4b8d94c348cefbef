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
    """One piece of streamed output: its text, the tokens generated so far (cumulative), the
    seconds since the run started, and its token ids when a tokenizer cut it (else empty)."""

    text: str
    tokens: int
    seconds: float
    ids: tuple[int, ...] = ()


@dataclass(frozen=True)
class Activity:
    """What a runner is doing before (and while) it writes: what a page shows next to a run.
    `done` / `total` measure a download in bytes; `ahead` counts runs ahead in line."""

    phase: str  # "waiting" | "checking" | "downloading" | "converting" | "loading" | "generating"
    model: str = ""
    done: int | None = None
    total: int | None = None
    ahead: int | None = None

    def describe(self) -> str:
        if self.phase == "waiting":
            return f"waiting for the model: {self.ahead} run{'s' if self.ahead != 1 else ''} ahead"
        if self.phase == "downloading" and self.total:
            return f"downloading {self.model}: {size_text(self.done or 0)} of {size_text(self.total)}"
        if self.phase == "downloading":
            return f"downloading {self.model}"
        if self.phase == "converting":
            return f"converting {self.model} from GGUF to safetensors (once; about a minute)"
        if self.phase == "checking":
            return f"checking {self.model}"
        if self.phase == "loading":
            return f"loading {self.model}"
        return self.phase

    @property
    def fraction(self) -> float | None:
        """How far a download is (0 to 1), or None when there is nothing to measure."""
        return min(1.0, (self.done or 0) / self.total) if self.phase == "downloading" and self.total else None


def size_text(n: int) -> str:
    """A byte count as a person reads it: 154 kB, 12.5 MB, 1.50 GB."""
    if n >= 1e9:
        return f"{n / 1e9:.2f} GB"
    if n >= 1e6:
        return f"{n / 1e6:.1f} MB"
    return f"{n / 1e3:.0f} kB"


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
    # What the runner is doing before its first chunk (a local model waiting in line, downloading,
    # loading), or None.
    activity: Activity | None

    def stream(
        self, prompt: str, *, tools: list | None = None, stop: threading.Event | None = None
    ) -> Iterator[Chunk]: ...


def paced(pieces: list[str], ids: list[tuple[int, ...]], tokens_per_second: float,
          stop: threading.Event | None) -> Iterator[Chunk]:
    """Yield `pieces` as chunks, one token each (with its `ids`, when known), at `tokens_per_second`
    (0: as fast as possible). Waiting on the stop event rather than sleeping lets Stop end a slow
    replay at once."""
    start = time.monotonic()
    count = 0
    for index, piece in enumerate(pieces):
        if stop is not None and stop.is_set():
            return
        if tokens_per_second > 0:
            delay = start + count / tokens_per_second - time.monotonic()
            if delay > 0 and stop is not None and stop.wait(delay):
                return
            if delay > 0 and stop is None:
                time.sleep(delay)
        token_ids = ids[index] if index < len(ids) else ()
        count += len(token_ids) or 1  # tokens so far: real ids when known
        yield Chunk(piece, count, time.monotonic() - start, token_ids)
