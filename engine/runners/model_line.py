"""Generations take turns: a local model is one set of weights in memory, so runs that need it wait
in line (first come, first served) instead of loading over each other or slowing each other down.
A waiting run knows its place (`position`: how many runs are ahead), so the page can say so, and
Stop takes it out of the line at once."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager


class LeftTheLine(Exception):
    """Stop was pressed while the run was still waiting for its turn."""


class TakeTurns:
    """A first-come-first-served line for one shared resource."""

    def __init__(self) -> None:
        self._line: list[object] = []
        self._changed = threading.Condition()

    @contextmanager
    def turn(self, stop: threading.Event | None = None, on_position: Callable[[int], None] | None = None) -> Iterator[None]:
        """Wait for this caller's turn, then hold it for the block. `on_position(n)` hears how many
        are ahead whenever that changes (0 once it is this caller's turn). Raises LeftTheLine when
        `stop` is set while waiting."""
        ticket = object()
        with self._changed:
            self._line.append(ticket)
        try:
            shown = None
            with self._changed:
                while self._line[0] is not ticket:
                    ahead = self._line.index(ticket)
                    if ahead != shown and on_position is not None:
                        on_position(ahead)
                        shown = ahead
                    if stop is not None and stop.is_set():
                        raise LeftTheLine
                    self._changed.wait(0.05)
            if on_position is not None:
                on_position(0)
            yield
        finally:
            with self._changed:
                self._line.remove(ticket)
                self._changed.notify_all()
