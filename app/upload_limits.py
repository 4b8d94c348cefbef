"""What an upload is charged, counted as its body streams past, before Gradio reads each part.

Gradio writes every part of an upload as a file in a folder of its own (two entries on disk and
about a millisecond of CPU each, whatever its size): 40 requests of 1,000 two-byte files were 30,000
entries and 120 MB on disk, charged 80 kB when uploads were counted in bytes. So a request may hold
at most `limits.MAX_UPLOAD_FILES` files (the page reads no more), and each file counts as at least
`limits.UPLOAD_FILE_MIN_BYTES` against the client's and the server's upload budgets (a request is
charged the larger of its bytes and its files' minimum, as they arrive: a body sent without a length
is charged as it comes). The parts are found with the parser Gradio uses (python-multipart), fed the
same bytes first; a request past a limit is ended by raising that parser's own error to Gradio,
which then deletes every file it had started and answers nothing the client sees: the refusal does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser, parse_options_header

from engine import limits
from engine.clients import Quota


class Refused(Exception):
    """An upload past a limit: its HTTP status and message."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class UploadCharge:
    """The running count of one upload request: its files and bytes, charged to `client` in `quota`."""

    def __init__(self, content_type: str, client: str, quota: Quota, length: int, limit: int):
        self.client, self.quota, self.limit = client, quota, limit
        self.files, self.seen, self.charged = 0, 0, 0
        self.length = length
        _, options = parse_options_header(content_type)
        boundary = options.get(b"boundary")
        self._parser = MultipartParser(boundary, {"on_part_begin": self._part}) if boundary else None
        self._refusal: Refused | None = None

    def start(self) -> None:
        """Charge what the request says it holds (its length); Refused if that is past the budget."""
        self._charge(self.length)

    def _part(self) -> None:
        self.files += 1
        if self.files > limits.MAX_UPLOAD_FILES:
            self._refusal = Refused(413, f"Upload refused: more than {limits.MAX_UPLOAD_FILES} files in one request "
                                    f"(the page sends at most {limits.MAX_UPLOAD_FILES}).")
            raise MultipartParseError("too many files")
        try:
            self._charge(self.files * limits.UPLOAD_FILE_MIN_BYTES)
        except Refused as refused:
            self._refusal = refused
            raise MultipartParseError("over the upload budget") from None

    def _charge(self, due: int) -> None:
        """Bring what the client was charged for this request up to `due` bytes."""
        if due <= self.charged:
            return
        why = self.quota.take(self.client, due - self.charged)
        if why is not None:
            raise Refused(429, f"Upload refused: {why} (a file counts as at least "
                               f"{limits.UPLOAD_FILE_MIN_BYTES / 1e6:g} MB). Try again later.")
        self.charged = due

    def feed(self, chunk: bytes) -> None:
        """Count a piece of the body before Gradio reads it; Refused past a limit."""
        self.seen += len(chunk)
        if self.seen > self.limit:
            raise Refused(413, f"Upload refused: it is over the {self.limit / 1e6:.0f} MB limit.")
        self._charge(self.seen)
        if self._parser is None:
            return
        try:
            self._parser.write(chunk)
        except MultipartParseError:
            if self._refusal is not None:
                raise self._refusal from None
            self._parser = None  # not one Gradio can read either: it says so itself


def counted(receive: Callable[[], Awaitable[dict]], charge: UploadCharge, refused: list[Refused]) -> Callable[[], Awaitable[dict]]:
    """`receive`, counting the body as it passes; past a limit, Gradio's reading ends with its own
    parser's error (it then deletes the files it started) and the refusal is put in `refused`."""

    async def receiving() -> dict:
        message = await receive()
        if message.get("type") == "http.request":
            try:
                charge.feed(message.get("body", b""))
            except Refused as refusal:
                refused.append(refusal)
                raise MultipartParseError(str(refusal)) from None
        return message

    return receiving


def answered_by(send: Callable[[dict], Awaitable[None]], refused: list[Refused],
                refuse: Callable[[Any, int, str], Awaitable[None]]) -> Callable[[dict], Awaitable[None]]:
    """`send`, with Gradio's answer to a refused upload replaced by the refusal."""

    async def sending(message: dict) -> None:
        if not refused:
            await send(message)
        elif message["type"] == "http.response.start":
            await refuse(send, refused[0].status, str(refused[0]))
        # (the body of Gradio's answer is dropped)

    return sending
