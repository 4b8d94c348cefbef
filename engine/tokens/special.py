"""A tokenizer brings its special tokens: the one rule for what `bos_token`, `eos_token`, `pad_token`,
`unk_token` and a model's named extras (`image_token`, `start_of_turn_token`…) are when a chat
template renders, for the page and every command alike.

`apply_chat_template` renders with `tokenizer.special_tokens_map`; a tokenizer's files declare it in
`tokenizer_config.json` (plain strings or `AddedToken` objects, and `extra_special_tokens`) or a legacy
`special_tokens_map.json`, read exactly as a Hub load reads them (`engine.hub.files.special_tokens_of`,
checked equal to what `AutoTokenizer.from_pretrained` builds). So:

1. the tokenizer's own special tokens, wherever it comes from (a folder, a Hub repo's tokenizer
   files, an upload, the local model), when it declares any;
2. else the ones the template files declare (a model folder's or a Hub repo's `tokenizer_config.json`,
   a preset's);
3. and what the author gives explicitly (`--special-tokens`, the page's field) wins, key by key.
"""

from __future__ import annotations

import json
from typing import Any

from ..diagnostics import Diagnostic, line_col, line_text
from ..inputs import load_json
from ..response_spec import key_offsets

TOKENIZER_CONFIG = "tokenizer_config.json"


def special_tokens_for(tokenizer: dict[str, str] | None = None, found: dict[str, str] | None = None,
                       explicit: dict[str, Any] | None = None) -> dict[str, Any]:
    """The special tokens templates render with: a tokenizer's own (`tokenizer`, when it declares
    any) over those the template files declare (`found`), and `explicit` over both, key by key."""
    base = dict(tokenizer) if tokenizer else dict(found or {})
    return {**base, **(explicit or {})}


def special_tokens_text(tokens: dict[str, Any]) -> str:
    """The special tokens as the page's field shows them (JSON, one per line)."""
    return json.dumps(tokens, indent=2, ensure_ascii=False)


def read_special_tokens(text: str) -> tuple[dict[str, str] | None, list[Diagnostic]]:
    """What an author typed as the special tokens (a JSON object of names to token texts), or the
    problems with it, located. Empty text means none."""
    if not (text or "").strip():
        return {}, []
    value, problems = load_json(text, "tokenizer", "special tokens")
    if problems:
        return None, problems
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        return None, [Diagnostic("error", "Special tokens are a JSON object of names to texts.", "tokenizer",
                                 hint='e.g. {"bos_token": "<s>", "eos_token": "</s>"}')]
    return value, []


def vocabulary_problems(tokenizer_json: Any, config_text: str | None, tokens: dict[str, str]) -> list[Diagnostic]:
    """Special tokens the config declares that tokenizer.json does not have (in its vocabulary or its
    added tokens), each at its key in tokenizer_config.json: transformers adds such a token as a new
    id past the vocabulary, one the model never saw."""
    if not isinstance(tokenizer_json, dict):
        return []
    model = tokenizer_json.get("model") if isinstance(tokenizer_json.get("model"), dict) else {}
    vocab = model.get("vocab")
    known: set[str] = set()
    if isinstance(vocab, dict):
        known.update(vocab)
    elif isinstance(vocab, list):  # Unigram: [[piece, score], ...]
        known.update(item[0] for item in vocab if isinstance(item, list) and item and isinstance(item[0], str))
    added = tokenizer_json.get("added_tokens")
    if isinstance(added, list):
        known.update(t["content"] for t in added if isinstance(t, dict) and isinstance(t.get("content"), str))
    problems: list[Diagnostic] = []
    size = len(known)
    offsets: dict[tuple, int] | None = None
    for name, value in tokens.items():
        if not isinstance(value, str) or not value or value in known:
            continue
        if offsets is None:  # located only when something is missing (a config can be megabytes)
            offsets = key_offsets(config_text) if config_text else {}
        offset = offsets.get((name,))
        if offset is None and (extra := offsets.get(("extra_special_tokens", name))) is not None:
            offset = extra
        line, column = line_col(config_text, offset) if offset is not None and config_text else (None, None)
        problems.append(Diagnostic(
            "error", f"{name} {value!r} is not in tokenizer.json (its vocabulary or added tokens): transformers adds it "
            f"as a new token past the {size:,} the model knows, so the model never saw it.", "tokenizer",
            line=line, column=column, snippet=line_text(config_text, line) if config_text else None,
            hint=f"Set {name} to a token tokenizer.json has, or add {value!r} to its added_tokens (and the model's "
                 "embeddings).", end_column=column + len(name) + 2 if column else None, file=TOKENIZER_CONFIG))  # fmt: skip
    return problems


def parsed(data: bytes | None) -> Any:
    """A small JSON file's value (None when absent or not JSON: reported where it is loaded)."""
    if data is None:
        return None
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
