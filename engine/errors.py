"""The engine's one policy for error text, and its log.

Messages a person sees are written in our own words (what failed, what to do). A library's or a
server's own error text is quoted only through `quoted`: its first line, shortened, with anything
token-shaped redacted, so nothing a server echoes (a URL with credentials, an Authorization header,
a page of HTML) reaches the UI whole, and no path on the server's disk does either. The Hub's errors
quote nothing at all (`hub.errors`).

The log is for the owner of a server (a Space): every catch-all boundary records what failed with
its traceback through `log_failure`, redacted the same way. A token is never logged."""

from __future__ import annotations

import logging
import re
import traceback

logger = logging.getLogger("playground")

# Anything shaped like a Hugging Face token (user access tokens and OAuth tokens start with hf_),
# and credentials in URLs or bearer headers.
_SECRETS = [
    (re.compile(r"hf_(?:oauth_)?[A-Za-z0-9]{8,}"), "hf_***"),  # a token; not a name like hf_hub_download
    (re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{8,}"), r"\1***"),
    (re.compile(r"(?i)((?:api[_-]?key|token|password|secret)\s*[=:]\s*)[^\s&,;\"'*]{4,}"), r"\1***"),
    (re.compile(r"(//[^/\s:@]+:)[^/\s@]+@"), r"\1***@"),
]
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
# A path on the server's disk (not the path of a URL): only its last part is shown.
_PATH = re.compile(r"(?<![\w:/.~-])/(?:[\w.~-]+/)+([\w.~-]+)")


def redact(text: str, *secrets: str | None) -> str:
    """`text` with the given secrets, and anything shaped like a token or a credential, replaced."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "hf_***" if secret.startswith("hf_") else "***")
    for pattern, replacement in _SECRETS:
        text = pattern.sub(replacement, text)
    return text


def without_paths(text: str) -> str:
    """`text` with every absolute path on this machine cut to `…/<its last part>`: a visitor's
    message never shows how the server's disk is laid out (a temporary folder, a home directory)."""
    return _PATH.sub(r"…/\1", text)


def quoted(error: BaseException | str, limit: int = 200) -> str:
    """How a message quotes someone else's error text: `TypeName: first line` (or the text's first
    line), control characters removed, redacted, at most `limit` characters."""
    if isinstance(error, BaseException):
        first = str(error).strip().splitlines()[0] if str(error).strip() else ""
        text = f"{type(error).__name__}: {first}" if first else type(error).__name__
    else:
        text = error.strip().splitlines()[0] if error.strip() else ""
    text = without_paths(redact(_CONTROL.sub("", text)))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def log_failure(what: str, error: BaseException, *secrets: str | None) -> None:
    """Record a failure a visitor met (`what`: where, in our words) with its traceback, redacted,
    for whoever runs the server."""
    details = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    logger.error("%s\n%s", what, redact(details, *secrets).rstrip())
