"""Who is asking: the client a request counts against, and how many of its requests run at once.

Fairness and budgets are per client, not per browser session: one person (or one script) can open
any number of sessions, so counting per session lets one client take the whole server. A client is
the Space's signed-in user when there is one, else the address the request came from.

Behind a proxy (a Space), every request comes from the proxy's address; the visitor's is in
`X-Forwarded-For`, which the proxy appends to. Whatever a client writes into that header itself
comes first, so only the entries the trusted proxies added (counted from the right) are believed:
`PLAYGROUND_PROXY_HOPS` proxies (1 on a Space, 0 elsewhere: then the header is ignored, since any
client could otherwise claim to be as many clients as it likes). A header sent several times is one
list, its lines joined in order (as a proxy that appends a line, and HTTP itself, read it). IPv6
addresses count per /64, the block one connection is usually given (a client can pick any address
inside it). This is the one reader of addresses: the server's own (uvicorn's) is turned off
(app.clients), and the request limits and the handlers both ask `client_key`."""

from __future__ import annotations

import ipaddress
import os
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from . import limits


def proxy_hops() -> int:
    """How many trusted proxies stand in front of the server (their `X-Forwarded-For` entries are believed)."""
    default = 1 if os.environ.get("SPACE_ID") else 0
    try:
        return max(0, int(os.environ.get("PLAYGROUND_PROXY_HOPS", default)))
    except ValueError:
        return default


def client_key(username: str | None, peer: str | None, forwarded_for: str | Sequence[str] | None = None,
               hops: int | None = None) -> str:
    """The client a request counts against: `user:<name>` for a signed-in user, else
    `address:<ip>` (IPv6 as its /64), with `X-Forwarded-For` (one value, or every line of a header
    sent several times, in order) read as `hops` trusted proxies wrote it."""
    if username:
        return f"user:{username}"
    hops = proxy_hops() if hops is None else hops
    address = peer or ""
    if hops and forwarded_for:
        lines = [forwarded_for] if isinstance(forwarded_for, str) else list(forwarded_for)
        entries = [entry.strip() for line in lines for entry in line.split(",") if entry.strip()]
        if len(entries) >= hops:
            address = entries[-hops]
    return f"address:{_block(address)}"


def _block(address: str) -> str:
    try:
        ip = ipaddress.ip_address(address.strip("[]"))
    except ValueError:
        return address[:64] or "unknown"
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network(f"{ip}/64", strict=False))
    return str(ip)


class Busy(Exception):
    """A client already has as many requests running as it may."""


class Gate:
    """At most `limit` requests of one client at once: each request holds a server thread (a render
    waiting for a worker, a run streaming), so one client with many sessions cannot hold them all."""

    def __init__(self, limit: int | None = None):
        self.limit = limit or limits.CLIENT_REQUESTS
        self._running: Counter[str] = Counter()
        self._lock = threading.Lock()

    @contextmanager
    def entered(self, client: str) -> Iterator[None]:
        """Hold one of `client`'s places while the request runs; Busy if it has none left."""
        with self._lock:
            if self._running[client] >= self.limit:
                raise Busy(f"{self._running[client]} requests from you are already running")
            self._running[client] += 1
        try:
            yield
        finally:
            with self._lock:
                self._running[client] -= 1
                if not self._running[client]:
                    del self._running[client]

    def running(self, client: str) -> int:
        with self._lock:
            return self._running[client]


class Quota:
    """At most `per_client` units (bytes uploaded, say) per `window` seconds for one client, and
    `total` for everyone: buckets that refill evenly, so a client that pauses gets its share back."""

    def __init__(self, per_client: float, total: float, window: float):
        self.per_client, self.total, self.window = per_client, total, window
        self._levels: dict[str, tuple[float, float]] = {}  # client -> (used, when)
        self._all = (0.0, time.monotonic())
        self._lock = threading.Lock()

    def take(self, client: str, amount: float) -> str | None:
        """Count `amount` against `client`; None if it fits, else why not (nothing is counted)."""
        now = time.monotonic()
        with self._lock:
            mine = self._drained(self._levels.get(client, (0.0, now)), self.per_client, now)
            everyone = self._drained(self._all, self.total, now)
            if mine + amount > self.per_client:
                return f"you sent {mine / 1e6:.0f} MB in the last {self.window / 60:.0f} minutes, the most one visitor may"
            if everyone + amount > self.total:
                return "the server has taken all it can for now"
            self._levels[client] = (mine + amount, now)
            self._all = (everyone + amount, now)
            if len(self._levels) > 100_000:  # forget the longest-quiet clients
                for key in sorted(self._levels, key=lambda k: self._levels[k][1])[:10_000]:
                    del self._levels[key]
            return None

    def _drained(self, level: tuple[float, float], capacity: float, now: float) -> float:
        used, when = level
        return max(0.0, used - (now - when) * capacity / self.window)
