"""The remote runner: any OpenAI-compatible `/v1/completions` server (vLLM, TGI, llama.cpp server,
`transformers serve`), for models too big for this machine.

The playground renders the prompt itself, so it uses the raw-text completions endpoint (a chat
endpoint would apply the server's own chat template, not the one being written), streams the
server-sent events, and asks the server to keep special tokens: the delimiters a response
template looks for are usually special tokens, and many servers drop them by default.
"""

from __future__ import annotations

import http.client
import json
import queue
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from .. import limits
from ..diagnostics import Diagnostic
from ..public import Policy, policy
from ..response_spec import compile_spec, load_response_spec
from .base import Activity, Chunk, RunnerError

# Sent so that servers which support them keep delimiters in the text (vLLM's names; others ignore
# or reject them, and a rejection is retried without them).
KEEP_SPECIAL_TOKENS = {"skip_special_tokens": False, "spaces_between_special_tokens": False,
                       "include_stop_str_in_output": True}
SERVER_HINT = ("Check the URL and that the server is running and offers /v1/completions (vLLM, TGI, "
               "llama.cpp server and `transformers serve` do).")
PUBLIC_HINT = ("A public server's owner can allow the remote runner (PLAYGROUND_REMOTE=1) and list hosts it may "
               "reach at any address (PLAYGROUND_REMOTE_HOSTS); run the playground yourself to reach any server.")
# The longest server-sent line read at once (a token's event is a few hundred bytes).
MAX_LINE_BYTES = 1 << 20


class RemoteRunner:
    """Streams a completion of the rendered prompt from `base_url` (e.g. http://127.0.0.1:8000 or
    …/v1). `response_template` (JSON text or dict, optional) lets the runner warn when the output
    comes back without the delimiters it expects."""

    activity: Activity | None = None  # nothing to show before the first chunk

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        max_tokens: int = 512,
        temperature: float = 0.7,
        top_p: float = 1.0,
        seed: int | None = None,
        stop_tokens: list[str] | None = None,
        response_template: str | dict | None = None,
        keep_special_tokens: bool = True,
        timeout: float = 300,
        extra_body: dict | None = None,
    ):
        url = urlsplit((base_url or "").strip())
        try:
            url.port
        except ValueError:
            url = url._replace(netloc="")
        if url.scheme not in ("http", "https") or not url.hostname:
            raise RunnerError(f"Not a server URL: {base_url!r}.", hint="Use e.g. http://127.0.0.1:8000 or https://host/v1.")
        rules = policy()
        if problem := rules.remote_problem(url.scheme, url.hostname, url.port or _default_port(url.scheme)):
            raise RunnerError(problem, hint=PUBLIC_HINT)
        if problem := rules.new_tokens_problem(max_tokens):
            raise RunnerError(problem, hint="Lower max tokens.")
        if max_tokens < 1:
            raise RunnerError("max_tokens must be at least 1.")
        path = url.path.rstrip("/")
        self.url = url
        self.path = (path if path.endswith("/v1") else path + "/v1") + "/completions"
        self.model = model
        self._api_key = api_key  # never logged, never part of a message
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.top_p = top_p
        self.seed = seed
        self.stop_tokens = list(stop_tokens or [])
        self.response_template = response_template
        self.keep_special_tokens = keep_special_tokens
        self.timeout = timeout
        self.extra_body = dict(extra_body or {})
        self.diagnostics: list[Diagnostic] = []
        self.finish_reason: str | None = None

    def __repr__(self) -> str:  # keeps the API key out of logs and tracebacks
        return f"RemoteRunner({self._where()}{self.path}, model={self.model!r})"

    def _where(self) -> str:
        """scheme://host:port, without any credentials the URL may carry."""
        port = f":{self.url.port}" if self.url.port else ""
        return f"{self.url.scheme}://{self.url.hostname}{port}"

    def body(self, prompt: str, keep_special_tokens: bool) -> dict:
        body: dict[str, Any] = {"model": self.model, "prompt": prompt, "max_tokens": self.max_tokens,
                                "temperature": self.temperature, "top_p": self.top_p, "stream": True}
        if self.seed is not None:
            body["seed"] = self.seed
        if self.stop_tokens:
            body["stop"] = self.stop_tokens
        if keep_special_tokens:
            body.update(KEEP_SPECIAL_TOKENS)
        return {**body, **self.extra_body}

    def stream(
        self, prompt: str, *, tools: list | None = None, stop: threading.Event | None = None
    ) -> Iterator[Chunk]:
        """Text as the server streams it; setting `stop` closes the connection (servers then abort)."""
        self.diagnostics, self.finish_reason = [], None
        start = time.monotonic()
        rules = policy()
        connection, response = self._open(prompt, rules)
        lines: queue.Queue = queue.Queue(maxsize=1024)  # the reader waits for us: memory stays bounded
        reader = threading.Thread(target=_read_lines, args=(response, lines), name="playground-remote", daemon=True)
        reader.start()
        output, count, size = [], 0, 0
        try:
            for event in _events(lines, stop, rules.public):
                if event == "[DONE]":
                    break
                text, finish = _parse_event(event, rules.public)
                if finish:
                    self.finish_reason = finish
                if text:
                    count += 1
                    size += len(text)
                    if size > limits.MAX_OUTPUT_CHARS:
                        raise RunnerError(f"The output is over {limits.MAX_OUTPUT_CHARS:,} characters, the playground's "
                                          "limit; the rest is not read.", hint="Lower max_tokens.")
                    output.append(text)
                    yield Chunk(text, count, time.monotonic() - start)
        finally:
            _hang_up(connection)
            while not lines.empty():  # let a reader blocked on a full queue see the hang-up
                lines.get_nowait()
            reader.join(timeout=5)
        if stop is None or not stop.is_set():
            self._check_delimiters("".join(output))

    def _open(self, prompt: str, rules: Policy) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        """Send the request; when the server rejects the keep-special-tokens options, retry without them."""
        keep = self.keep_special_tokens
        while True:
            connection, response = self._post(self.body(prompt, keep), rules)
            if response.status == 200:
                return connection, response
            if 300 <= response.status < 400:
                _hang_up(connection)
                raise RunnerError(f"The server answered with a redirect ({response.status}); the playground does not "
                                  "follow redirects.", hint="Use the URL the server redirects to.")
            detail = _error_detail(response)
            _hang_up(connection)
            if keep and response.status in (400, 422) and any(k in detail for k in KEEP_SPECIAL_TOKENS):
                keep = False
                self.diagnostics.append(Diagnostic(
                    "warning",
                    "The server does not accept skip_special_tokens, so it may drop special tokens from the "
                    "output: the delimiters the response template looks for.",
                    "runner",
                    hint="If regions are missing, serve the model with a server that can keep special tokens (e.g. vLLM).",
                ))  # fmt: skip
                continue
            raise _status_error(response.status, detail, self.model, rules.public)

    def _post(self, body: dict, rules: Policy) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        """POST to the server. In public mode the host is looked up here, every address it has is
        checked, and the connection goes to the checked address (so DNS cannot answer differently
        between the check and the connection); nothing is sent to an address that fails."""
        host, port = self.url.hostname or "", self.url.port or _default_port(self.url.scheme)
        where = self._where()
        if problem := rules.remote_problem(self.url.scheme, host, port):
            raise RunnerError(problem, hint=PUBLIC_HINT)
        address = _checked_address(host, port, rules) if rules.public else None
        kind = _SecureConnection if self.url.scheme == "https" else _Connection
        connection = kind(host, port, timeout=self.timeout)
        connection.address = address
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        try:
            connection.request("POST", self.path, json.dumps(body).encode(), headers)
            return connection, connection.getresponse()
        except (OSError, http.client.HTTPException) as e:
            _hang_up(connection)
            reason = "" if rules.public else f": {e.strerror if isinstance(e, OSError) and e.strerror else e}"
            raise RunnerError(f"Cannot connect to {where}{reason}", hint=SERVER_HINT) from None

    def _check_delimiters(self, output: str) -> None:
        """Warn when the model finished its turn but none of the response template's delimiters (nor
        a stop token) is in the text: the sign of a server that strips special tokens."""
        if self.response_template is None or not output.strip() or self.finish_reason == "length":
            return
        template = self.response_template
        loaded = load_response_spec(template) if isinstance(template, str) else compile_spec(template)
        if not loaded.ok:
            return
        fields = loaded.template.fields.values()  # type: ignore[union-attr]
        patterns = [p for f in fields for p in (f.open_re, f.close_re) if p is not None]
        if any(p.search(output) for p in patterns) or any(s in output for s in self.stop_tokens):
            return
        literals = [s for f in fields for s in (f.open_literals or []) + (f.close_literals or [])]
        self.diagnostics.append(Diagnostic(
            "warning",
            "The output has none of the response template's delimiters"
            + (f" ({', '.join(literals[:6])})" if literals else "")
            + " and no end-of-turn token, although the model finished: the server is probably dropping special tokens.",
            "runner",
            hint="The playground asks for skip_special_tokens=false; if the server ignores it, regions will be missing. "
            "Serve the model with a server that keeps special tokens (e.g. vLLM), or check its detokenizer settings.",
        ))  # fmt: skip


def _read_lines(response: http.client.HTTPResponse, out: queue.Queue) -> None:
    """Reader thread: the response's lines, then None (or the exception that ended the read)."""
    try:
        for line in iter(lambda: response.readline(MAX_LINE_BYTES), b""):
            out.put(line.decode("utf-8", errors="replace"))
        out.put(None)
    except BaseException as e:  # noqa: BLE001 - includes the hang-up a Stop causes
        out.put(e)


def _events(lines: queue.Queue, stop: threading.Event | None, public: bool = False) -> Iterator[str]:
    """Server-sent events' data (multi-line data joined), until the stream ends or `stop` is set."""
    data: list[str] = []
    while True:
        if stop is not None and stop.is_set():
            return
        try:
            line = lines.get(timeout=0.05)
        except queue.Empty:
            continue
        if line is None:
            if data:
                yield "\n".join(data)
            return
        if isinstance(line, BaseException):
            raise RunnerError("The connection to the server broke" + ("." if public else f": {line}"), hint=SERVER_HINT)
        line = line.rstrip("\r\n")
        if not line:
            if data:
                yield "\n".join(data)
            data = []
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
        elif line.startswith("{"):  # a server that ignored "stream": one JSON body
            data.append(line)


def _parse_event(data: str, public: bool = False) -> tuple[str, str | None]:
    """(text, finish_reason) of one event. A public server never echoes what it was sent beyond a
    short, sanitised message (it could be anything a visitor's URL pointed at)."""
    try:
        event = json.loads(data)
    except (json.JSONDecodeError, RecursionError):
        shown = "" if public else f": {data[:200]!r}"
        raise RunnerError(f"The server sent something that is not JSON{shown}", hint=SERVER_HINT) from None
    if not isinstance(event, dict):
        shown = "." if public else f": {data[:200]!r}"
        raise RunnerError(f"Unexpected event from the server{shown}", hint=SERVER_HINT)
    if "error" in event:
        error = event["error"]
        message = error.get("message", error) if isinstance(error, dict) else error
        raise RunnerError(f"The server reported an error: {_shown(str(message), public)}")
    choices = event.get("choices") or [{}]
    choice = choices[0] if isinstance(choices[0], dict) else {}
    text = choice.get("text")
    if text is None and isinstance(choice.get("delta"), dict):  # a chat-style chunk
        text = choice["delta"].get("content")
    return (text if isinstance(text, str) else ""), choice.get("finish_reason")


def _error_detail(response: http.client.HTTPResponse) -> str:
    try:
        return response.read(4000).decode("utf-8", errors="replace")
    except (OSError, http.client.HTTPException):
        return ""


def _status_error(status: int, detail: str, model: str, public: bool = False) -> RunnerError:
    try:
        parsed = json.loads(detail)
        message = parsed.get("error", parsed.get("detail", parsed)) if isinstance(parsed, dict) else parsed
        if isinstance(message, dict):
            message = message.get("message", message)
        detail = str(message)
    except (json.JSONDecodeError, RecursionError):
        if public:  # not an API's error: never show a visitor what some other service answered
            detail = ""
    detail = _shown(detail, public)
    if status in (401, 403):
        return RunnerError(f"The server refused the request ({status}): {detail}", hint="Check the API key.")
    if status == 404:
        return RunnerError(f"Not found (404): {detail or 'no /v1/completions here'}",
                           hint=f"Check the URL and the model name ({model!r}); the server must offer the raw "
                           "completions endpoint, not only chat completions.")
    return RunnerError(f"The server answered {status}: {detail}", hint=SERVER_HINT)


def _shown(text: str, public: bool) -> str:
    """A server's message as shown: at most 300 characters; on a public server, at most 80
    printable ones on one line."""
    if not public:
        return text.strip()[:300]
    clean = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    return clean[:80] + ("…" if len(clean) > 80 else "")


def _default_port(scheme: str) -> int:
    return 443 if scheme == "https" else 80


def _checked_address(host: str, port: int, rules: Policy) -> str:
    """Look `host` up and check every address it has; the first is the one to connect to."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        raise RunnerError(f"Cannot find the server {host!r}.", hint=SERVER_HINT) from None
    addresses = list(dict.fromkeys(info[4][0] for info in infos))
    for address in addresses:
        if problem := rules.address_problem(host, port, address):
            raise RunnerError(problem, hint=PUBLIC_HINT)
    if not addresses:
        raise RunnerError(f"Cannot find the server {host!r}.", hint=SERVER_HINT)
    return addresses[0]


class _Pinned:
    """Connects to `address` (already checked) when one is set, rather than looking the host up
    again; TLS still verifies the certificate against the host name. Also remembers its socket:
    http.client forgets it once a response takes over the connection, but a Stop must still be
    able to shut it down."""

    address: str | None = None

    def _pinned(self, target: tuple, timeout: float, source: tuple | None = None) -> socket.socket:
        return socket.create_connection((self.address, target[1]), timeout, source)  # type: ignore[attr-defined]

    def connect(self) -> None:
        if self.address is not None:
            self._create_connection = self._pinned  # type: ignore[attr-defined]
        super().connect()  # type: ignore[misc]
        self.opened = self.sock  # type: ignore[attr-defined]


class _Connection(_Pinned, http.client.HTTPConnection):
    pass


class _SecureConnection(_Pinned, http.client.HTTPSConnection):
    pass


def _hang_up(connection: http.client.HTTPConnection) -> None:
    """Close the connection; shutting the socket down first also wakes a reader blocked on it."""
    sock = getattr(connection, "opened", None) or connection.sock
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
    connection.close()
