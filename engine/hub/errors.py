"""Hub failures as diagnostics an author can act on, and the rule that a token never shows up in one.

huggingface_hub raises typed errors (repo not found, gated, revision not found) and HTTP errors
with a status code; this module turns each into one plain sentence plus a hint. Messages are built
from our own words and the repo id, never from the raw exception text, so nothing the server or
the client library echoes (a URL, a header) can leak into the UI; `redact` is the second lock."""

from __future__ import annotations

import httpx2
from huggingface_hub.errors import (
    DisabledRepoError,
    GatedRepoError,
    HFValidationError,
    HfHubHTTPError,
    LocalEntryNotFoundError,
    OfflineModeIsEnabled,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

from ..diagnostics import Diagnostic
from ..errors import redact as redact_secrets

NOTHING_SENT = "Nothing was published."


def redact(text: str, token: str | None = None) -> str:
    """`text` with the token (and anything token-shaped, see `engine.errors.redact`) replaced by `hf_***`."""
    return redact_secrets(text.replace(token, "hf_***") if token else text)


def hub_error(
    error: BaseException, repo_id: str, *, endpoint: str, revision: str | None = None,
    publishing: bool = False, token: str | None = None,
) -> Diagnostic:
    """One diagnostic for a failed Hub call on `repo_id`. `publishing` adds that nothing was sent
    (a commit is atomic: it either lands whole as a pull request or not at all)."""
    message, hint = _describe(error, repo_id, endpoint, revision, publishing)
    if publishing:
        message = f"{message} {NOTHING_SENT}"
    return Diagnostic("error", redact(message, token), "hub", hint=redact(hint, token) if hint else None)


def _describe(
    error: BaseException, repo_id: str, endpoint: str, revision: str | None, publishing: bool
) -> tuple[str, str | None]:
    at = f" at revision {revision!r}" if revision else ""
    # hf_hub_download wraps the HTTP error it met in a LocalEntryNotFoundError: look underneath.
    error = next((e for e in _chain(error) if isinstance(e, (HfHubHTTPError, HFValidationError))), error)
    if _offline(error):
        return ("Hugging Face Hub access is switched off (HF_HUB_OFFLINE is set).",
                "Unset HF_HUB_OFFLINE, or load the templates from a local folder.")
    if _network(error):
        return (f"Cannot reach the Hugging Face Hub at {endpoint}: the network or the Hub is unavailable.",
                "Check the connection (and any proxy), or load the templates from a local folder.")
    if isinstance(error, HFValidationError):
        return (f"{repo_id!r} is not a repo id (owner/name) or an existing folder.",
                "Write the repo as it appears in its Hub URL, e.g. HuggingFaceTB/SmolLM3-3B.")
    if isinstance(error, GatedRepoError):
        return (f"{repo_id} is gated: its files are only available after accepting its conditions.",
                f"Accept them on {endpoint}/{repo_id} with the account whose token you use, then try again.")
    if isinstance(error, RevisionNotFoundError):
        return (f"{repo_id} has no revision {revision!r}." if revision else f"{repo_id} has no such revision.",
                "Use a branch name (e.g. main), a tag or a commit hash; pull requests target a branch.")
    if isinstance(error, DisabledRepoError):
        return f"{repo_id} has been disabled on the Hub.", None
    if isinstance(error, RepositoryNotFoundError):
        return (f"Repository {repo_id} not found{at}, or it is private and your token cannot see it.",
                "Check the spelling; for a private repo, sign in or use a token that can read it.")
    if isinstance(error, RemoteEntryNotFoundError):
        return f"A file of {repo_id} disappeared while it was being read{at}.", "Try again."
    status = _status(error)
    if status == 401:
        return ("The Hub did not accept your token: it is invalid or has expired.",
                "Create a new token at https://huggingface.co/settings/tokens (or sign in again).")
    if status == 403:
        if publishing:
            return (f"Your token is not allowed to open a pull request on {repo_id}.",
                    "Use a token with write access (a fine-grained token needs 'open pull requests' on this repo); "
                    "on a Space, sign in again and grant write access. Pull requests may also be disabled "
                    "on this repo.")
        return f"Access to {repo_id} was refused.", "Check that your token can read this repo."
    if status in (409, 412):
        return (f"{repo_id} changed while you were publishing, so the pull request could not be created.",
                "Show the diff again (it reloads the repo) and publish once more.")
    if status == 429:
        return "The Hub is rate-limiting requests right now.", "Wait a minute and try again."
    if status is not None and status >= 500:
        return f"The Hub had a server error ({status}).", "Try again in a moment; status: https://status.huggingface.co"
    if status is not None:
        return f"The Hub refused the request ({status}).", None
    # Unknown failure: name its type only; its text could hold anything the server sent.
    return f"Unexpected problem talking to the Hub ({type(error).__name__}).", None


def _chain(error: BaseException):
    """The error and the errors it was raised from (huggingface_hub wraps network failures)."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield error
        error = error.__cause__ or error.__context__


def _offline(error: BaseException) -> bool:
    return any(isinstance(e, OfflineModeIsEnabled) for e in _chain(error))


def _network(error: BaseException) -> bool:
    if any(isinstance(e, (httpx2.TransportError, ConnectionError, TimeoutError)) for e in _chain(error)):
        return True
    # hf_hub_download reports an unreachable Hub as "not in the local cache either".
    return isinstance(error, LocalEntryNotFoundError) and not isinstance(error, HfHubHTTPError)


def _status(error: BaseException) -> int | None:
    if isinstance(error, HfHubHTTPError) and error.response is not None:
        return error.response.status_code
    return None
