"""Issues 36, 37 and 29 (items 3 and 4): attacks on the request layer and the budgets of a served
playground, bounded in count and time, on 127.0.0.1 only. Run as phases by tests/attacks.py (which
names them in ATTACKS); each also records what it was answered in `OUTCOME` (printed for the test):
refused, or within its budget."""

from __future__ import annotations

import http.client
import json
import os
import random
import threading
import time
from collections.abc import Callable

from tests.load_scenario import local_client, refresh_args

OUTCOME: dict = {}
TEMPLATE_150K = "{# " + "t" * 150_000 + " #}{{ messages[0].content }}"


def deep_links(url: str, stop: threading.Event, jobs: list) -> None:
    """Issue 36: a 150,000-character template edited again and again, each edit followed by Gradio's
    deep-link call for the session (which wrote its every value to disk, 0.31 MB a call)."""
    c = local_client(url, "198.51.100.70")
    statuses: list[int] = []
    round_ = 0
    while not stop.is_set():
        try:
            c.predict(*refresh_args(TEMPLATE_150K + f"{{# {round_} #}}"), api_name="/refresh")
        except Exception:  # noqa: BLE001 - an attacker does not care
            pass
        statuses.append(_http(url, "GET", f"/gradio_api/deep_link?session_hash={c.session_hash}", "198.51.100.70")[0])
        jobs.append(None)
        round_ += 1
    OUTCOME["deep_link"] = sorted(set(statuses))


def format_examples(url: str, stop: threading.Event, jobs: list) -> None:
    """Issue 37.1: "Add its examples as recordings", 60 times in one session (79 cases and 311
    recordings were kept, past the 50 and 50 a workspace may hold)."""
    from tests.attacks import edited_args  # (imported here: tests.attacks imports this module)

    c = local_client(url, "198.51.100.71")
    added = refused = 0
    for _ in range(60):  # (until refused at least, however long the phase: the limit is the point)
        if stop.is_set() and refused:
            break
        try:
            shown = str(c.predict(*edited_args("{{ messages[0].content }}"), "hermes", api_name="/add_examples"))
        except Exception:  # noqa: BLE001
            continue
        jobs.append(None)
        added += "Added the case" in shown
        refused += "Too many" in shown or "Too large" in shown
    OUTCOME.update(added=added, refused=refused)


def tiny_files(url: str, stop: threading.Event, jobs: list) -> None:
    """Issue 37.2: uploads of 1,000 two-byte files a request (each was a file in a folder of its own,
    charged two bytes), then of as many files as the page sends, until refused."""
    statuses: list[int] = []
    for index in range(40):  # (bounded in count: each is refused at its eleventh file)
        statuses.append(_upload(url, "198.51.100.72", [b"%d" % (index * 1000 + i) for i in range(1000)]))
        jobs.append(None)
    page_sized, started = [], time.monotonic()
    for index in range(300):  # until refused (20 requests of 10 files fill a client's 200 MB)
        page_sized.append(_upload(url, "198.51.100.73", [b"[%d,%d]" % (index, i) for i in range(10)]))
        jobs.append(None)
        if page_sized[-1] == 429:
            break
    OUTCOME.update(thousand_files=sorted(set(statuses)), ten_files_accepted=page_sized.count(200),
                   ten_files_last=page_sized[-1:], ten_files_seconds=round(time.monotonic() - started, 2))


def get_floods(url: str, stop: threading.Event, jobs: list) -> None:
    """Issue 37.3: the page, its layout and the API's description asked for in a loop, eight at once
    (each was rebuilt per call: 67, 19 and 38 ms of the server's CPU; none was refused)."""
    statuses: list[int] = []

    def ask() -> None:
        while not stop.is_set():
            for path in ("/gradio_api/info", "/config", "/"):
                statuses.append(_http(url, "GET", path, "198.51.100.74")[0])
                jobs.append(None)

    threads = [threading.Thread(target=ask, daemon=True) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    OUTCOME.update(answered=statuses.count(200), busy=statuses.count(429),
                   other=sorted(set(statuses) - {200, 429}))


def escaped_sessions(url: str, stop: threading.Event, jobs: list) -> None:
    """Issue 29.3: new sessions whose JSON names them as "session\\u005fhash" (Gradio decodes the
    escape; the limit read the raw bytes): 60 of one client opened in 1.8 s."""
    OUTCOME["accepted"], OUTCOME["sent"] = _new_sessions(url, stop, jobs, 60, '"session\\u005fhash"',
                                                          lambda i: [("X-Forwarded-For", "198.51.100.75")])


def forged_addresses(url: str, stop: threading.Event, jobs: list) -> None:
    """Issue 29.4: new sessions, each claiming another address: the client's own X-Forwarded-For
    line (a new address each time) before the one the proxy appends, sent as two header lines."""
    OUTCOME["accepted"], OUTCOME["sent"] = _new_sessions(
        url, stop, jobs, 25, '"session_hash"',
        lambda i: [("X-Forwarded-For", f"203.0.113.{i}"), ("X-Forwarded-For", "198.51.100.76")])


def _new_sessions(url: str, stop: threading.Event, jobs: list, count: int, key: str, headers: Callable) -> tuple[int, int]:
    """`count` new sessions of one edit each, the session named under `key`; how many were let in."""
    fn_index = _fn_index(url, "refresh")
    accepted = sent = 0
    started = time.monotonic()
    for i in range(count):  # (bounded in count, sent whatever the phase: the limit is the point)
        body = json.dumps({"data": refresh_args("{{ messages[0].content }}"), "fn_index": fn_index, "trigger_id": None,
                           "session_hash": f"attack-{os.getpid()}-{i}-{random.random()}"}).replace('"session_hash"', key)
        status, answer = _http(url, "POST", "/gradio_api/queue/join", headers(i), body.encode())
        sent += 1
        accepted += not (status == 429 and b"new sessions" in answer)
        jobs.append(None)
    OUTCOME["seconds"] = round(time.monotonic() - started, 2)
    return accepted, sent


def _fn_index(url: str, api_name: str) -> int:
    config = json.loads(_http(url, "GET", "/config", "198.51.100.77")[1])
    return next(d["id"] for d in config["dependencies"] if d.get("api_name") == api_name)


def _http(url: str, method: str, path: str, forwarded: str | list[tuple[str, str]], body: bytes | None = None,
          content_type: str = "application/json") -> tuple[int, bytes]:
    """One request, its `X-Forwarded-For` line(s) as given (a list: each its own header line)."""
    host, port = url.split("//", 1)[1].strip("/").rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=60)
    try:
        connection.putrequest(method, path)
        lines = [("X-Forwarded-For", forwarded)] if isinstance(forwarded, str) else forwarded
        for name, value in [*lines, ("Content-Type", content_type), ("Content-Length", str(len(body or b"")))]:
            connection.putheader(name, value)
        connection.endheaders(body)
        response = connection.getresponse()
        return response.status, response.read()
    except OSError:
        return 0, b""
    finally:
        connection.close()


def _upload(url: str, address: str, contents: list[bytes]) -> int:
    boundary = f"attack{random.randrange(1 << 30)}"
    body = b"".join(f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="f{i}.json"\r\n'
                    f"Content-Type: application/json\r\n\r\n".encode() + content + b"\r\n"
                    for i, content in enumerate(contents)) + f"--{boundary}--\r\n".encode()
    return _http(url, "POST", "/gradio_api/upload", address, body, f"multipart/form-data; boundary={boundary}")[0]
