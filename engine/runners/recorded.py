"""The recorded runner: replays a raw output (a preset's recording, or text the author pastes) as if a
model were writing it, token by token."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import regex

from .. import limits
from ..diagnostics import Diagnostic
from ..text import SPECIAL_TOKEN
from .base import Activity, Chunk, RunnerError, paced

# Special-token-looking text is kept whole, so a replay never shows half a delimiter as a "token".
# Otherwise word-sized pieces, as most tokenizers cut text: a word with its leading spaces, one
# punctuation mark, a run of newlines, a lone whitespace character.
_PIECE = regex.compile(
    rf"(?:{SPECIAL_TOKEN})|\n+|[ \t]*[\p{{L}}\p{{N}}_]+|[ \t]*(?!(?:{SPECIAL_TOKEN}))[^\s\p{{L}}\p{{N}}_]|\s",
    regex.VERSION1,
)


def split_tokens(text: str, tokenizer: Any = None) -> list[str]:
    """Cut `text` into the pieces a model would write it in. With a (fast) tokenizer: its tokens,
    cut at the token offsets so the pieces always join back to exactly `text`. Without one (or
    when the tokenizer cannot give offsets): special-token-looking text whole, the rest in
    word-sized pieces."""
    if not text:
        return []
    if tokenizer is not None:
        pieces = _split_with_tokenizer(text, tokenizer)
        if pieces is not None:
            return pieces
    return [m.group() for m in _PIECE.finditer(text)]


def _split_with_tokenizer(text: str, tokenizer: Any) -> list[str] | None:
    try:
        encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        offsets = encoded["offset_mapping"]
    except Exception:  # noqa: BLE001 - slow tokenizers have no offsets: use the fallback splitter
        return None
    pieces, cut = [], 0
    for _, end in offsets:
        # Byte-level tokens inside one character share its offsets: cut only where the text moves on.
        if end > cut:
            pieces.append(text[cut:end])
            cut = end
    if cut < len(text):  # text the tokenizer normalised away (trailing spaces, say)
        if pieces:
            pieces[-1] += text[cut:]
        else:
            pieces.append(text[cut:])
    return pieces


def count_tokens(text: str, tokenizer: Any) -> int | None:
    """How many tokens `tokenizer` makes of `text` (None without a tokenizer, or when it fails:
    a count is a nicety, never a reason to fail)."""
    if tokenizer is None:
        return None
    try:
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])
    except Exception:  # noqa: BLE001 - e.g. a tokenizer object of another kind
        return None


class RecordedRunner:
    """Replays `text` at `tokens_per_second` (0: as fast as possible), split by `tokenizer` when one
    is given (a loaded model's, so token counts are real) or by `split_tokens`' fallback."""

    activity: Activity | None = None  # nothing to show before the first chunk

    def __init__(self, text: str, tokens_per_second: float = 0, tokenizer: Any = None):
        if not isinstance(text, str):
            raise RunnerError("A recording must be text.", hint="Paste the raw model output, exactly as it was written.")
        if len(text) > limits.MAX_OUTPUT_CHARS:
            raise RunnerError(f"The output is {len(text):,} characters, over the playground's {limits.MAX_OUTPUT_CHARS:,} "
                              "limit.", hint="Real replies are far shorter: paste one reply, or a part of it.")
        if tokens_per_second < 0:
            raise RunnerError("tokens_per_second cannot be negative.", hint="Use 0 to replay as fast as possible.")
        self.text = text
        self.tokens_per_second = tokens_per_second
        self.tokenizer = tokenizer
        self.diagnostics: list[Diagnostic] = []

    def stream(
        self, prompt: str = "", *, tools: list | None = None, stop: threading.Event | None = None
    ) -> Iterator[Chunk]:
        """The recording's pieces, paced; the prompt and tools do not change a recording."""
        self.diagnostics = []
        if not self.text:
            self.diagnostics.append(Diagnostic("warning", "The recording is empty.", "runner",
                                               hint="Paste the raw output of a model, or pick a preset recording."))
        yield from paced(split_tokens(self.text, self.tokenizer), self.tokens_per_second, stop)
