"""A scripted HTTP server on 127.0.0.1 for runner tests: answers every POST as told, counts requests."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# A server-sent completion stream, as /v1/completions sends it.
COMPLETION = b'data: {"choices": [{"text": "Hello", "finish_reason": null}]}\n\ndata: [DONE]\n\n'


def completion(pieces: list[str]) -> bytes:
    events = [json.dumps({"choices": [{"text": p, "finish_reason": None}]}) for p in pieces]
    return "".join(f"data: {e}\n\n" for e in events).encode() + b"data: [DONE]\n\n"


class Local:
    """A server on 127.0.0.1 that answers as told and counts requests."""

    def __init__(self, status: int = 200, body: bytes = b"", headers: dict | None = None):
        self.requests: list[dict] = []
        local = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                local.requests.append({"host": self.headers.get("Host"), "body": json.loads(self.rfile.read(length))})
                self.send_response(status)
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
