"""Load a model's templates from a Hub repo (at a revision) or a local folder.

Only the small template files are fetched (`files.TEMPLATE_FILES` and
`additional_chat_templates/*.jinja`), never weights. A repo is read at one commit: its info gives
the commit hash and file list, then each file is downloaded pinned to that hash, so the files
agree with each other and a later pull request can be based on exactly what was shown."""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field, replace
from collections.abc import Callable
from pathlib import Path

from huggingface_hub import HfApi, constants, get_token
from huggingface_hub.utils import validate_repo_id

from ..diagnostics import Diagnostic
from ..public import policy
from ..sandbox import bounded_if_large
from .errors import hub_error
from .files import CHAT_TEMPLATE_DIR, TEMPLATE_FILES, ChatTemplate, TemplateOrigin, is_template_file, read_templates

# Template files are a few kB; a "template file" far beyond this is not one (and not worth a download).
# A repo's template files together (named templates can be many) are bounded the same.
MAX_FILE_BYTES = 20_000_000


@dataclass
class HubTemplates:
    """A model's templates as loaded: `source` is the repo id or folder, `commit` the commit they
    were read at (None for a folder), `files` the raw template files (the base a publish diffs against)."""

    source: str
    revision: str | None
    commit: str | None
    chat_template: ChatTemplate | None = None
    origin: TemplateOrigin | None = None
    response_template: str | None = None
    special_tokens: dict[str, str] = field(default_factory=dict)
    files: dict[str, bytes] = field(default_factory=dict)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    is_repo: bool = True
    added_tokens: list[str] = field(default_factory=list)  # the tokens the tokenizer treats as special

    @property
    def ok(self) -> bool:
        """Whether the source was read without errors (it may still hold no chat template)."""
        return not any(d.severity == "error" for d in self.diagnostics)


def hub_endpoint(endpoint: str | None = None) -> str:
    """The Hub URL to talk to: the argument, else HF_ENDPOINT as set now, else huggingface.co."""
    return (endpoint or os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")


def local_token() -> str | None:
    """The token of a local session: HF_TOKEN, else the one saved by `hf auth login`. Only for the
    command line and a locally run app: in public mode (engine.public) it is None, since the
    machine's credentials must never act for a visitor; only the visitor's own sign-in does."""
    if not policy().ambient_token:
        return None
    return get_token()


def load_templates(
    source: str, revision: str | None = None, *, token: str | None = None, endpoint: str | None = None,
    allow_folders: bool | None = None,
) -> HubTemplates:
    """Load from a local folder (when `source` is one) or a Hub repo id. Never raises: failures
    (not found, gated, offline, …) are diagnostics. `token=None` reads anonymously: ambient
    credentials are never picked up implicitly (pass `local_token()` to use them).

    `allow_folders` defaults to what public mode allows (engine.public): on a server open to
    visitors their text must not name folders on the server's disk, so it is read as a repo id."""
    if allow_folders is None:
        allow_folders = policy().allow_paths
    if allow_folders and Path(source).is_dir():
        return load_folder(source)
    return load_repo(source, revision, token=token, endpoint=endpoint)


def load_folder(folder: str | os.PathLike) -> HubTemplates:
    """Templates from a folder laid out like a model repo (e.g. a `save_pretrained` output)."""
    root = Path(folder)
    paths = [name for name in TEMPLATE_FILES if (root / name).is_file()]
    if (root / CHAT_TEMPLATE_DIR).is_dir():
        paths += [f"{CHAT_TEMPLATE_DIR}/{p.name}" for p in sorted((root / CHAT_TEMPLATE_DIR).glob("*.jinja"))
                  if p.is_file()]
    diagnostics: list[Diagnostic] = []
    files = {}
    for path in paths:
        try:
            files[path] = (root / path).read_bytes()
        except OSError as e:
            diagnostics.append(Diagnostic("error", f"Cannot read {path} in {root}: {e.strerror}.", "hub"))
    return _templates(str(folder), None, None, files, diagnostics, is_repo=False)


def load_repo(
    repo_id: str, revision: str | None = None, *, token: str | None = None, endpoint: str | None = None
) -> HubTemplates:
    """Templates from a Hub model repo at `revision` (default: main)."""
    endpoint = hub_endpoint(endpoint)
    try:
        validate_repo_id(repo_id)
    except Exception as e:  # noqa: BLE001 - HFValidationError: a typo, not a crash
        return HubTemplates(repo_id, revision, None, diagnostics=[hub_error(e, repo_id, endpoint=endpoint)])
    try:
        commit, files, _ = download_files(repo_id, revision, is_template_file, token=token, endpoint=endpoint,
                                          max_bytes=MAX_FILE_BYTES)
    except TooLarge as e:
        return HubTemplates(repo_id, revision, None, diagnostics=[
            Diagnostic("error", f"{e.path} in {repo_id} is over {MAX_FILE_BYTES // 1_000_000} MB; not a template file.",
                       "hub")])
    except Exception as e:  # noqa: BLE001 - every Hub failure becomes a message
        diagnostic = hub_error(e, repo_id, endpoint=endpoint, revision=revision, token=token)
        return HubTemplates(repo_id, revision, None, diagnostics=[diagnostic])
    return _templates(repo_id, revision, commit, files, [])


def download_files(repo_id: str, revision: str | None, wanted: Callable[[str], bool], *, token: str | None,
                   endpoint: str, max_bytes: int) -> tuple[str | None, dict[str, bytes], list[str]]:
    """The files of `repo_id` at one commit whose path `wanted` accepts: (commit, {path: bytes},
    every path of the repo). Sizes are checked from the repo's metadata before anything is downloaded, and again after
    (TooLarge); `paths` of the repo that are not wanted are never fetched. Raises the Hub's errors."""
    # token=False: without a token of the caller's, read anonymously (never the ambient HF_TOKEN).
    api = HfApi(endpoint=endpoint, token=token or False, library_name="template-playground")
    info = api.model_info(repo_id, revision=revision, timeout=30, files_metadata=True)
    commit = info.sha
    siblings = [s for s in info.siblings or [] if wanted(s.rfilename)]
    files = {}
    if sum(s.size or 0 for s in siblings) > max_bytes:
        raise TooLarge(", ".join(s.rfilename for s in siblings[:3]) + (" …" if len(siblings) > 3 else "") + " together")
    with tempfile.TemporaryDirectory(prefix="playground-hub-") as cache:
        # A throwaway cache: on a shared server, one visitor's gated files must not stay on disk.
        for sibling in sorted(siblings, key=lambda s: s.rfilename):
            if (sibling.size or 0) > max_bytes:
                raise TooLarge(sibling.rfilename)
            local = api.hf_hub_download(repo_id, sibling.rfilename, revision=commit or revision, cache_dir=cache,
                                        etag_timeout=30)
            if os.path.getsize(local) > max_bytes:
                raise TooLarge(sibling.rfilename)
            files[sibling.rfilename] = Path(local).read_bytes()
    return commit, files, [s.rfilename for s in info.siblings or []]


class TooLarge(Exception):
    def __init__(self, path: str):
        super().__init__(path)
        self.path = path


def _templates(source: str, revision: str | None, commit: str | None, files: dict[str, bytes],
               diagnostics: list[Diagnostic], *, is_repo: bool = True) -> HubTemplates:
    # Someone else's JSON: a large tokenizer_config.json is decoded in a worker (engine.sandbox).
    found, problem = bounded_if_large(read_templates, {"files": files}, sum(map(len, files.values())),
                                      doing=f"Reading the files of {source}")
    if problem is not None:
        return HubTemplates(source, revision, commit, files=files, diagnostics=[*diagnostics, replace(problem, source="hub")],
                            is_repo=is_repo)
    return HubTemplates(
        source=source, revision=revision, commit=commit, chat_template=found.chat_template, origin=found.origin,
        response_template=found.response_template, special_tokens=found.special_tokens, files=files,
        diagnostics=diagnostics + found.diagnostics, is_repo=is_repo, added_tokens=found.added_tokens,
    )
