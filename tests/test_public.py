"""Issue 11, items 3, 4 and 5: public mode, one switch (engine/public.py). On a Space the server
never uses its own token for a visitor, never reads a path a visitor names, and its remote runner
(off unless the owner allows it) reaches only https URLs at public addresses or the owner's hosts.

Refusals are tested without sending anything anywhere: `socket.create_connection` is watched and
every refusal must happen before it is called. The only traffic is to a server on 127.0.0.1."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from engine.hub import load_templates, local_token
from engine.publish import plan_publish
from engine.public import is_public_address, policy
from engine.runners import RemoteRunner, RunnerError
from tests.local_http import COMPLETION, Local

PUBLIC_ENV = ("SPACE_ID", "PLAYGROUND_PUBLIC", "PLAYGROUND_MODELS", "PLAYGROUND_REMOTE", "PLAYGROUND_REMOTE_HOSTS")


@pytest.fixture
def public(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """A Space: public mode on, the owner's settings empty."""
    for name in PUBLIC_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SPACE_ID", "owner/playground")
    return monkeypatch


@pytest.fixture
def connections(monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    """Every connection the code under test opens, and the guarantee that none goes beyond 127.0.0.1."""
    opened: list[tuple] = []
    real = socket.create_connection

    def watched(address, *args, **kwargs):
        opened.append(address)
        assert address[0] in ("127.0.0.1", "::1"), f"tried to connect to {address}"
        return real(address, *args, **kwargs)

    monkeypatch.setattr(socket, "create_connection", watched)
    return opened


@pytest.fixture
def local_server():
    servers: list[Local] = []

    def start(*args, **kwargs) -> Local:
        servers.append(Local(*args, **kwargs))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def test_the_switch_and_the_owners_settings(public: pytest.MonkeyPatch) -> None:
    assert policy().public and not policy().allow_paths and not policy().ambient_token
    public.setenv("PLAYGROUND_PUBLIC", "0")  # the owner of a private Space may turn it off
    assert not policy().public and policy().allow_paths
    public.delenv("SPACE_ID")
    public.setenv("PLAYGROUND_PUBLIC", "1")  # a locally run server, opened to others
    public.setenv("PLAYGROUND_MODELS", "HuggingFaceTB/SmolLM2-135M-Instruct, Qwen/Qwen3-0.6B")
    rules = policy()
    assert rules.public and rules.local_model_problem("Qwen/Qwen3-0.6B") is None
    assert "listed" in rules.local_model_problem("meta-llama/Llama-3.1-405B")
    assert "off" in policy().__class__(public=True).local_model_problem("Qwen/Qwen3-0.6B")


@pytest.mark.parametrize(
    "address, public_",
    [("93.184.216.34", True), ("2606:4700::1111", True), ("127.0.0.1", False), ("10.1.2.3", False),
     ("172.16.0.1", False), ("192.168.1.1", False), ("169.254.169.254", False), ("100.64.0.1", False),
     ("0.0.0.0", False), ("::1", False), ("fe80::1%eth0", False), ("fd00::1", False), ("::ffff:127.0.0.1", False),
     ("::ffff:10.0.0.1", False), ("224.0.0.1", False), ("not an address", False),
     # IPv6 addresses that carry a private IPv4 one: NAT64, 6to4, IPv4-compatible
     ("64:ff9b::7f00:1", False), ("64:ff9b::a00:1", False), ("2002:7f00:1::1", False), ("::127.0.0.1", False)],
)
def test_public_addresses(address: str, public_: bool) -> None:
    assert is_public_address(address) is public_


def test_the_servers_token_is_never_used_for_a_visitor(public: pytest.MonkeyPatch) -> None:
    public.setenv("HF_TOKEN", "hf_ambient_owner_token_123456")
    assert local_token() is None
    public.setenv("PLAYGROUND_PUBLIC", "0")
    assert local_token() == "hf_ambient_owner_token_123456"


def test_a_visitor_cannot_read_a_server_folder(public: pytest.MonkeyPatch, tmp_path: Path, connections: list) -> None:
    (tmp_path / "chat_template.jinja").write_text("SERVER-SIDE TEMPLATE")
    loaded = load_templates(str(tmp_path))
    assert not loaded.ok and loaded.files == {} and loaded.chat_template is None
    plan = plan_publish(str(tmp_path), "x", None)
    assert plan.diagnostics and not plan.changes and "SERVER-SIDE" not in plan.diff()
    assert connections == []
    public.setenv("PLAYGROUND_PUBLIC", "0")  # locally, a folder is the author's own
    assert load_templates(str(tmp_path)).chat_template == "SERVER-SIDE TEMPLATE"


def test_the_remote_runner_is_off_on_a_space_unless_the_owner_allows_it(public: pytest.MonkeyPatch, connections: list) -> None:
    with pytest.raises(RunnerError, match="off on this public server") as raised:
        RemoteRunner("https://api.example.com/v1", "m")
    assert "PLAYGROUND_REMOTE" in raised.value.diagnostic.hint
    public.setenv("PLAYGROUND_REMOTE", "1")
    with pytest.raises(RunnerError, match="https URLs only"):
        RemoteRunner("http://api.example.com/v1", "m")
    assert connections == []


@pytest.mark.parametrize(
    "url", ["https://127.0.0.1:9/v1", "https://10.0.0.1/v1", "https://169.254.169.254/latest", "https://[::1]:8000",
            "https://[::ffff:127.0.0.1]/v1", "https://0.0.0.0/v1", "https://localhost:8000/v1"],
)
def test_private_addresses_are_refused_before_connecting(public: pytest.MonkeyPatch, connections: list, url: str) -> None:
    public.setenv("PLAYGROUND_REMOTE", "1")
    runner = RemoteRunner(url, "m")
    with pytest.raises(RunnerError, match="private or local address"):
        list(runner.stream("hi"))
    assert connections == []


def test_a_name_with_any_private_address_is_refused_after_dns(public: pytest.MonkeyPatch, connections: list) -> None:
    """DNS answers are checked, every one of them (a public first answer does not hide a private second)."""
    public.setenv("PLAYGROUND_REMOTE", "1")
    answers = {"models.example.com": ["93.184.216.34", "10.0.0.5"]}
    real = socket.getaddrinfo

    def resolver(host, port, *args, **kwargs):
        if host in answers:
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, port)) for ip in answers[host]]
        return real(host, port, *args, **kwargs)

    public.setattr(socket, "getaddrinfo", resolver)
    with pytest.raises(RunnerError, match="resolves to a private"):
        list(RemoteRunner("https://models.example.com/v1", "m").stream("hi"))
    assert connections == []


def test_an_owners_host_is_reached_at_the_address_that_was_checked(public: pytest.MonkeyPatch, connections: list,
                                                                    local_server) -> None:
    """An allowlisted host may be private and plain http; it is looked up once and the connection
    goes to that answer (no second lookup that DNS could answer differently)."""
    server = local_server(200, COMPLETION, {"Content-Type": "text/event-stream"})
    public.setenv("PLAYGROUND_REMOTE", "1")
    public.setenv("PLAYGROUND_REMOTE_HOSTS", "vllm.internal")
    lookups: list[str] = []
    real = socket.getaddrinfo

    def resolver(host, port, *args, **kwargs):
        lookups.append(host)
        if host == "vllm.internal":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]
        return real(host, port, *args, **kwargs)

    public.setattr(socket, "getaddrinfo", resolver)
    chunks = list(RemoteRunner(f"http://vllm.internal:{server.port}/v1", "m").stream("hi"))
    assert "".join(c.text for c in chunks) == "Hello"
    assert lookups.count("vllm.internal") == 1 and connections == [("127.0.0.1", server.port)]
    assert server.requests[0]["host"] == f"vllm.internal:{server.port}"


def test_redirects_are_not_followed(public: pytest.MonkeyPatch, connections: list, local_server) -> None:
    server = local_server(302, b"", {"Location": "http://10.0.0.1/v1/completions"})
    public.setenv("PLAYGROUND_REMOTE", "1")
    public.setenv("PLAYGROUND_REMOTE_HOSTS", f"127.0.0.1:{server.port}")
    with pytest.raises(RunnerError, match="redirect"):
        list(RemoteRunner(f"http://127.0.0.1:{server.port}", "m").stream("hi"))
    assert len(server.requests) == 1 and connections == [("127.0.0.1", server.port)]


def test_a_servers_answer_is_never_echoed_on_a_public_server(public: pytest.MonkeyPatch, connections: list,
                                                             local_server) -> None:
    public.setenv("PLAYGROUND_REMOTE", "1")
    secret = local_server(500, b"<html>INTERNAL-ONLY-SECRET db_password=hunter2</html>")
    api = local_server(400, json.dumps({"error": {"message": "bad request\n" + "x" * 500}}).encode())
    public.setenv("PLAYGROUND_REMOTE_HOSTS", f"127.0.0.1:{secret.port}, 127.0.0.1:{api.port}")
    with pytest.raises(RunnerError) as raised:
        list(RemoteRunner(f"http://127.0.0.1:{secret.port}", "m").stream("hi"))
    assert "SECRET" not in str(raised.value) and "500" in str(raised.value)
    with pytest.raises(RunnerError) as raised:
        list(RemoteRunner(f"http://127.0.0.1:{api.port}", "m", keep_special_tokens=False).stream("hi"))
    shown = str(raised.value).split(": ", 1)[1]
    assert shown.startswith("bad request x") and len(shown) <= 81 and "\n" not in shown
    public.setenv("PLAYGROUND_PUBLIC", "0")  # locally, the author sees what their server said
    with pytest.raises(RunnerError, match="INTERNAL-ONLY-SECRET"):
        list(RemoteRunner(f"http://127.0.0.1:{secret.port}", "m").stream("hi"))
