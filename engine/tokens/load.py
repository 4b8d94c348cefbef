"""A session's tokenizer: from a `tokenizer.json` (uploaded, on the command line), a Hub repo, a local
folder (local mode only) or the local model a visitor ran.

Only `tokenizer.json` (with `tokenizer_config.json` and `special_tokens_map.json` when present) is
ever read: it is plain JSON that the `tokenizers` library loads, so no pickle and no remote code can
run. Repos with only a slow tokenizer (a sentencepiece `tokenizer.model`, `vocab.json` +
`merges.txt`, tiktoken files) are refused with a message saying so.

The files are what travels (to the render worker, in a session); the transformers tokenizer is built
from them exactly as `AutoTokenizer.from_pretrained` builds it from a repo holding only those files,
so `add_bos_token`, the special tokens and the tokenizer class are the ones a model author's users get.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from .. import limits
from ..diagnostics import Diagnostic, line_text
from ..public import policy
from .special import parsed, vocabulary_problems

TOKENIZER_FILE = "tokenizer.json"
TOKENIZER_CONFIG = "tokenizer_config.json"
SPECIAL_TOKENS_MAP = "special_tokens_map.json"
# What is read of a repo or folder, in this order; nothing else, ever.
TOKENIZER_FILES = (TOKENIZER_FILE, TOKENIZER_CONFIG, SPECIAL_TOKENS_MAP)
# Files that mean "this repo has a slow tokenizer only" (refused, since only tokenizer.json is loaded).
SLOW_ONLY = ("tokenizer.model", "spiece.model", "sentencepiece.bpe.model", "vocab.json", "vocab.txt",
             "tiktoken.model", "qwen.tiktoken")
MAX_TOKENIZER_BYTES = limits.MAX_TOKENIZER_BYTES


@dataclass(frozen=True)
class TokenizerFiles:
    """The bytes of a tokenizer's files, and where they came from (`source`, shown to the author).
    `key` (a hash of the bytes) names it in the worker's bounded cache."""

    tokenizer_json: bytes
    config: bytes | None = None
    special_tokens_map: bytes | None = None
    source: str = ""

    @cached_property
    def special_tokens(self) -> dict[str, str]:
        """The special tokens these files declare, as a Hub load reads them (and as
        `tokenizer.special_tokens_map` gives them): what templates render with (`engine.tokens.special`)."""
        from ..hub.files import special_tokens_of

        config, legacy = parsed(self.config), parsed(self.special_tokens_map)
        return special_tokens_of(config if isinstance(config, dict) else {}, legacy if isinstance(legacy, dict) else None)

    @cached_property  # asked for on every keystroke with Tokens on: hashing 10 MB takes ~10 ms
    def key(self) -> str:
        digest = hashlib.sha256()
        for part in (self.tokenizer_json, self.config or b"", self.special_tokens_map or b""):
            digest.update(len(part).to_bytes(8, "big"))
            digest.update(part)
        return digest.hexdigest()


@dataclass
class LoadedTokenizer:
    """A tokenizer ready to use: its files, the transformers tokenizer built from them, and notes
    made while loading (warnings, never errors: a tokenizer that fails to load is `None` instead)."""

    files: TokenizerFiles
    tokenizer: Any = field(repr=False)
    notes: list[Diagnostic] = field(default_factory=list)

    @property
    def source(self) -> str:
        return self.files.source

    def describe(self) -> str:
        """One line for the page: where it came from, its class and vocabulary size."""
        return f"{self.source} · {type(self.tokenizer).__name__} · {len(self.tokenizer):,} tokens"


def _error(message: str, hint: str | None = None) -> Diagnostic:
    return Diagnostic("error", message, "tokenizer", hint=hint)


def load_tokenizer_files(files: TokenizerFiles) -> tuple[LoadedTokenizer | None, list[Diagnostic]]:
    """Build the tokenizer from `files`; never raises: every problem is a diagnostic (a special token
    the config declares that tokenizer.json lacks is one, at its key in tokenizer_config.json)."""
    problems, tokenizer_json = _check_files(files)
    if problems:
        return None, problems
    config_text = files.config.decode("utf-8") if files.config is not None else None
    missing = vocabulary_problems(tokenizer_json, config_text, files.special_tokens)
    try:
        tokenizer, notes = _build(files)
    except Exception as e:  # noqa: BLE001 - a malformed tokenizer.json is the author's to see
        text = str(e).splitlines()[0][:200] if str(e) else type(e).__name__
        return None, [_error(f"{files.source or TOKENIZER_FILE} could not be loaded as a tokenizer: {text}",
                             "Use the tokenizer.json that tokenizer.save_pretrained() writes.")]
    if not getattr(tokenizer, "is_fast", True) or not hasattr(tokenizer, "backend_tokenizer"):
        return None, [_error("This is not a fast tokenizer.", "Save it with tokenizer.save_pretrained() to get a tokenizer.json.")]
    notes = [*missing, *notes]
    return LoadedTokenizer(files, tokenizer, notes), notes


def load_tokenizer_bytes(tokenizer_json: bytes, config: bytes | None = None, special_tokens_map: bytes | None = None,
                         source: str = "uploaded tokenizer.json") -> tuple[LoadedTokenizer | None, list[Diagnostic]]:
    """From the bytes of an upload (or files named on the command line)."""
    return load_tokenizer_files(TokenizerFiles(tokenizer_json, config, special_tokens_map, source))


def load_tokenizer_uploads(uploads: dict[str, bytes]) -> tuple[LoadedTokenizer | None, list[Diagnostic]]:
    """From uploaded files by name: `tokenizer.json` (required), `tokenizer_config.json` and
    `special_tokens_map.json` (optional); other files are refused by name."""
    if TOKENIZER_FILE not in uploads:
        slow = sorted(set(uploads) & set(SLOW_ONLY))
        return None, [_slow_only(", ".join(slow)) if slow else
                      _error("Upload a tokenizer.json (and optionally its tokenizer_config.json).")]
    ignored = sorted(set(uploads) - set(TOKENIZER_FILES))
    loaded, problems = load_tokenizer_bytes(uploads[TOKENIZER_FILE], uploads.get(TOKENIZER_CONFIG),
                                            uploads.get(SPECIAL_TOKENS_MAP), source="uploaded tokenizer.json")
    if ignored:
        problems = [Diagnostic("warning", f"Ignored {', '.join(ignored)}: only tokenizer.json, tokenizer_config.json "
                               "and special_tokens_map.json are read.", "tokenizer"), *problems]
    return loaded, problems


def read_tokenizer_path(path: str | os.PathLike, *, allow_paths: bool | None = None
                        ) -> tuple[TokenizerFiles | None, list[Diagnostic]]:
    """The files of a `tokenizer.json` (and its `tokenizer_config.json` and `special_tokens_map.json`
    beside it) or of a folder holding one, read but not built (what a command sends to the worker).
    `allow_paths` defaults to what public mode allows (a public server never reads a path a visitor
    names; the command line may)."""
    if not (policy().allow_paths if allow_paths is None else allow_paths):
        return None, [_error("This public server does not read folders.", "Upload tokenizer.json, or load a Hub repo.")]
    root = Path(path)
    if root.is_file():
        folder, names = root.parent, {TOKENIZER_FILE: root}
        names.update({n: folder / n for n in TOKENIZER_FILES[1:] if (folder / n).is_file()})
    elif root.is_dir():
        present = {n for n in TOKENIZER_FILES if (root / n).is_file()}
        if TOKENIZER_FILE not in present:
            slow = sorted(n for n in SLOW_ONLY if (root / n).is_file())
            return None, [_slow_only(", ".join(slow)) if slow else _error(f"No tokenizer.json in {root}.")]
        names = {n: root / n for n in present}
    else:
        return None, [_error(f"{root} is neither a tokenizer.json nor a folder.")]
    data: dict[str, bytes] = {}
    for name, file in names.items():
        if file.stat().st_size > MAX_TOKENIZER_BYTES:
            return None, [_too_large(name, file.stat().st_size)]
        try:
            data[name] = file.read_bytes()
        except OSError as e:
            return None, [_error(f"Cannot read {file}: {e.strerror}.")]
    return TokenizerFiles(data[TOKENIZER_FILE], data.get(TOKENIZER_CONFIG), data.get(SPECIAL_TOKENS_MAP),
                          source=str(root)), []


def load_tokenizer_path(path: str | os.PathLike, *, allow_paths: bool | None = None
                        ) -> tuple[LoadedTokenizer | None, list[Diagnostic]]:
    """From a `tokenizer.json` file or a folder holding one (`read_tokenizer_path`), built."""
    files, problems = read_tokenizer_path(path, allow_paths=allow_paths)
    return (None, problems) if files is None else load_tokenizer_files(files)


def load_tokenizer_repo(repo_id: str, revision: str | None = None, *, token: str | None = None,
                        endpoint: str | None = None) -> tuple[LoadedTokenizer | None, list[Diagnostic]]:
    """From a Hub repo: only tokenizer.json, tokenizer_config.json and special_tokens_map.json are
    downloaded (sizes checked before), at one commit. Never raises."""
    from ..hub.errors import hub_error
    from ..hub.load import TooLarge, download_files, hub_endpoint

    endpoint = hub_endpoint(endpoint)
    try:
        _, files, paths = download_files(repo_id, revision, TOKENIZER_FILES.__contains__, token=token,
                                         endpoint=endpoint, max_bytes=MAX_TOKENIZER_BYTES)
    except TooLarge as e:
        return None, [_error(f"{e.path} in {repo_id} is over the {MAX_TOKENIZER_BYTES / 1e6:.0f} MB limit for a tokenizer.")]
    except Exception as e:  # noqa: BLE001 - every Hub failure becomes a message
        return None, [hub_error(e, repo_id, endpoint=endpoint, revision=revision, token=token)]
    if TOKENIZER_FILE not in files:
        slow = sorted(set(paths) & set(SLOW_ONLY))
        return None, [_slow_only(", ".join(slow)) if slow else _error(f"{repo_id} has no tokenizer.json.")]
    at = f"@{revision}" if revision else ""
    return load_tokenizer_bytes(files[TOKENIZER_FILE], files.get(TOKENIZER_CONFIG), files.get(SPECIAL_TOKENS_MAP),
                                source=f"{repo_id}{at}")


def files_of(tokenizer: Any, source: str) -> TokenizerFiles | None:
    """The files of an already loaded fast tokenizer (the local model's), as `save_pretrained`
    writes them; None for a slow tokenizer (it has no tokenizer.json)."""
    if not getattr(tokenizer, "is_fast", False):
        return None
    with tempfile.TemporaryDirectory(prefix="playground-tokenizer-") as folder:
        tokenizer.save_pretrained(folder)
        read = {n: (Path(folder) / n).read_bytes() for n in TOKENIZER_FILES if (Path(folder) / n).is_file()}
    if TOKENIZER_FILE not in read:
        return None
    return TokenizerFiles(read[TOKENIZER_FILE], read.get(TOKENIZER_CONFIG), read.get(SPECIAL_TOKENS_MAP), source)


def from_model(tokenizer: Any, source: str) -> tuple[LoadedTokenizer | None, list[Diagnostic]]:
    """The local model's tokenizer as a session tokenizer (the same object, with its files)."""
    files = files_of(tokenizer, source)
    if files is None:
        return None, [_error(f"The model {source} has a slow tokenizer (no tokenizer.json); its tokens cannot be shown.")]
    return LoadedTokenizer(files, tokenizer), []


def _check_files(files: TokenizerFiles) -> tuple[list[Diagnostic], Any]:
    """Problems with the files' size and JSON, and tokenizer.json's value (for what else is checked)."""
    problems, tokenizer_json = [], None
    for name, data in ((TOKENIZER_FILE, files.tokenizer_json), (TOKENIZER_CONFIG, files.config),
                       (SPECIAL_TOKENS_MAP, files.special_tokens_map)):
        if data is None:
            continue
        if len(data) > MAX_TOKENIZER_BYTES:
            problems.append(_too_large(name, len(data)))
            continue
        try:
            value = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
            problems.append(_json_error(name, data, e))
            continue
        if not isinstance(value, dict):
            problems.append(_error(f"{name} must be a JSON object."))
        elif name == TOKENIZER_FILE and "model" not in value:
            problems.append(_error("tokenizer.json has no 'model': it is not a tokenizers file.",
                                   "Use the tokenizer.json that tokenizer.save_pretrained() writes."))
        elif name == TOKENIZER_FILE:
            tokenizer_json = value
    return problems, tokenizer_json


def _json_error(name: str, data: bytes, error: Exception) -> Diagnostic:
    """A file that is not JSON, at the line and column of the problem when there is one."""
    if isinstance(error, json.JSONDecodeError):
        line, column = error.lineno, error.colno
        return Diagnostic("error", f"{name} is not valid JSON: {error.msg}.", "tokenizer", line=line, column=column,
                          snippet=line_text(error.doc, line), file=name)
    return _error(f"{name} is not valid JSON: {str(error)[:160]}")


def _too_large(name: str, size: int) -> Diagnostic:
    return _error(f"{name} is {size / 1e6:.1f} MB, over the {MAX_TOKENIZER_BYTES / 1e6:.0f} MB limit for a tokenizer.",
                  "Real tokenizers are under 40 MB; PLAYGROUND_MAX_TOKENIZER_MB raises the limit.")


def _slow_only(names: str) -> Diagnostic:
    return _error(f"Only a slow tokenizer is there ({names}), no tokenizer.json.",
                  "The playground loads tokenizer.json only (never pickles or remote code). Convert it once with "
                  "AutoTokenizer.from_pretrained(repo).save_pretrained(folder), which writes tokenizer.json.")


def _build(files: TokenizerFiles) -> tuple[Any, list[Diagnostic]]:
    """`AutoTokenizer.from_pretrained` on a folder holding only these files (no remote code, nothing
    downloaded); `PreTrainedTokenizerFast` when the class the config names cannot be used."""
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    notes: list[Diagnostic] = []
    with tempfile.TemporaryDirectory(prefix="playground-tokenizer-") as folder:
        for name, data in ((TOKENIZER_FILE, files.tokenizer_json), (TOKENIZER_CONFIG, files.config),
                           (SPECIAL_TOKENS_MAP, files.special_tokens_map)):
            if data is not None:
                Path(folder, name).write_bytes(data)
        try:
            tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True, trust_remote_code=False)
        except Exception as e:  # noqa: BLE001 - e.g. a custom class (auto_map) that would need remote code
            notes.append(Diagnostic("warning", f"The class tokenizer_config.json names could not be used "
                                    f"({str(e).splitlines()[0][:120] if str(e) else type(e).__name__}); loaded as "
                                    "PreTrainedTokenizerFast.", "tokenizer"))
            tokenizer = PreTrainedTokenizerFast.from_pretrained(folder, local_files_only=True)
    return tokenizer, notes


# The worker builds each tokenizer once: a few entries (a real one can take 100 MB), keyed by the
# hash of its files, so nothing one visitor loads changes what another sees.
_CACHE_SIZE = 3
_cache: OrderedDict[str, Any] = OrderedDict()
_cache_lock = threading.Lock()


def cached_load(files: TokenizerFiles) -> LoadedTokenizer:
    """The tokenizer built from `files` (with what loading it noted), from this process's small keyed
    cache. Raises ValueError with the load problem when it cannot be built."""
    key = files.key
    with _cache_lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    loaded, problems = load_tokenizer_files(files)
    if loaded is None:
        raise ValueError(problems[0].message if problems else "the tokenizer could not be loaded")
    with _cache_lock:
        _cache[key] = loaded
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return loaded


def cached_tokenizer(files: TokenizerFiles) -> Any:
    """The transformers tokenizer of `cached_load(files)`."""
    return cached_load(files).tokenizer
