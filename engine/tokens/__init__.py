"""Tokens: a session's tokenizer and the prompt as token ids (the token view). The checks only
tokens reveal (double BOS, special-looking text that is not one special token, stop tokens,
training masks, delimiters across token boundaries) are `engine.checks.tokens`.

    loaded, problems = load_tokenizer_uploads({"tokenizer.json": data})   # or _repo, _path, from_model
    view = prompt_tokens(loaded.files, prompt, result.generation_spans, generation_start, timeout=10)
    view.ids, view.offsets, view.special, view.assistant_mask, view.generation_token
"""

from .load import (
    LoadedTokenizer,
    TokenizerFiles,
    cached_load,
    cached_tokenizer,
    from_model,
    load_tokenizer_bytes,
    load_tokenizer_files,
    load_tokenizer_path,
    load_tokenizer_repo,
    load_tokenizer_uploads,
    read_tokenizer_path,
)
from .special import read_special_tokens, special_tokens_for, special_tokens_text
from .view import TokenView, assistant_mask, prompt_tokens, token_view

__all__ = [
    "LoadedTokenizer",
    "TokenView",
    "TokenizerFiles",
    "assistant_mask",
    "cached_load",
    "cached_tokenizer",
    "from_model",
    "load_tokenizer_bytes",
    "load_tokenizer_files",
    "load_tokenizer_path",
    "load_tokenizer_repo",
    "load_tokenizer_uploads",
    "prompt_tokens",
    "read_special_tokens",
    "read_tokenizer_path",
    "special_tokens_for",
    "special_tokens_text",
    "token_view",
]
