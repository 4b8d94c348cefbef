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

from ..diagnostics import Diagnostic
from ..response_spec import compile_spec, load_response_spec
from .base import Chunk, RunnerError

# Sent so that servers which support them keep delimiters in the text (vLLM's names; others ignore
# or reject them, and a rejection is retried without them).
KEEP_SPECIAL_TOKENS = {"skip_special_tokens": False, "spaces_between_special_tokens": False,
                       "include_stop_str_in_output": True}
SERVER_HINT = ("Check the URL and that the server is running and offers /v1/completions (vLLM, TGI, "
               "llama.cpp server and `transformers serve` do).")


class RemoteRunner:
    """Streams a completion of the rendered prompt from `base_url` (e.g. http://127.0.0.1:8000 or
    …/v1). `response_template` (JSON text or dict, optional) lets the runner warn when the output
    comes back without the delimiters it expects."""

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
        if url.scheme not in ("http", "https") or not url.hostname:
            raise RunnerError(f"Not a server URL: {base_url!r}.", hint="Use e.g. http://127.0.0.1:8000 or https://host/v1.")
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
        connection, response = self._open(prompt)
        lines: queue.Queue = queue.Queue()
        reader = threading.Thread(target=_read_lines, args=(response, lines), name="playground-remote", daemon=True)
        reader.start()
        output, count = [], 0
        try:
            for event in _events(lines, stop):
                if event == "[DONE]":
                    break
                text, finish = _parse_event(event)
                if finish:
                    self.finish_reason = finish
                if text:
                    count += 1
                    output.append(text)
                    yield Chunk(text, count, time.monotonic() - start)
        finally:
            _hang_up(connection)
            reader.join(timeout=5)
        if stop is None or not stop.is_set():
            self._check_delimiters("".join(output))

    def _open(self, prompt: str) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        """Send the request; when the server rejects the keep-special-tokens options, retry without them."""
        keep = self.keep_special_tokens
        while True:
            connection, response = self._post(self.body(prompt, keep))
            if response.status == 200:
                return connection, response
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
            raise _status_error(response.status, detail, self.model)

    def _post(self, body: dict) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        kind = _SecureConnection if self.url.scheme == "https" else _Connection
        connection = kind(self.url.hostname, self.url.port, timeout=self.timeout)
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        where = self._where()
        try:
            connection.request("POST", self.path, json.dumps(body).encode(), headers)
            return connection, connection.getresponse()
        except (OSError, http.client.HTTPException) as e:
            _hang_up(connection)
            raise RunnerError(f"Cannot connect to {where}: {e.strerror if isinstance(e, OSError) and e.strerror else e}",
                              hint=SERVER_HINT) from None

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
        for line in iter(response.readline, b""):
            out.put(line.decode("utf-8", errors="replace"))
        out.put(None)
    except BaseException as e:  # noqa: BLE001 - includes the hang-up a Stop causes
        out.put(e)


def _events(lines: queue.Queue, stop: threading.Event | None) -> Iterator[str]:
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
            raise RunnerError(f"The connection to the server broke: {line}", hint=SERVER_HINT)
        line = line.rstrip("\r\n")
        if not line:
            if data:
                yield "\n".join(data)
            data = []
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
        elif line.startswith("{"):  # a server that ignored "stream": one JSON body
            data.append(line)


def _parse_event(data: str) -> tuple[str, str | None]:
    """(text, finish_reason) of one event."""
    try:
        event = json.loads(data)
    except json.JSONDecodeError:
        raise RunnerError(f"The server sent something that is not JSON: {data[:200]!r}", hint=SERVER_HINT) from None
    if not isinstance(event, dict):
        raise RunnerError(f"Unexpected event from the server: {data[:200]!r}", hint=SERVER_HINT)
    if "error" in event:
        error = event["error"]
        message = error.get("message", error) if isinstance(error, dict) else error
        raise RunnerError(f"The server reported an error: {str(message)[:300]}")
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


def _status_error(status: int, detail: str, model: str) -> RunnerError:
    try:
        parsed = json.loads(detail)
        message = parsed.get("error", parsed.get("detail", parsed)) if isinstance(parsed, dict) else parsed
        if isinstance(message, dict):
            message = message.get("message", message)
        detail = str(message)
    except json.JSONDecodeError:
        pass
    detail = detail.strip()[:300]
    if status in (401, 403):
        return RunnerError(f"The server refused the request ({status}): {detail}", hint="Check the API key.")
    if status == 404:
        return RunnerError(f"Not found (404): {detail or 'no /v1/completions here'}",
                           hint=f"Check the URL and the model name ({model!r}); the server must offer the raw "
                           "completions endpoint, not only chat completions.")
    return RunnerError(f"The server answered {status}: {detail}", hint=SERVER_HINT)


class _Connection(http.client.HTTPConnection):
    """Remembers its socket: http.client forgets it once a response takes over the connection,
    but a Stop must still be able to shut it down."""

    def connect(self) -> None:
        super().connect()
        self.opened = self.sock


class _SecureConnection(http.client.HTTPSConnection):
    def connect(self) -> None:
        super().connect()
        self.opened = self.sock


def _hang_up(connection: http.client.HTTPConnection) -> None:
    """Close the connection; shutting the socket down first also wakes a reader blocked on it."""
    sock = getattr(connection, "opened", None) or connection.sock
    if sock is not None:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
    connection.close()
