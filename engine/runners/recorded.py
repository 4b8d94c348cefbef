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
    return token_pieces(text, tokenizer)[0]


def token_pieces(text: str, tokenizer: Any = None) -> tuple[list[str], list[tuple[int, ...]]]:
    """`split_tokens`, with the token ids of each piece (empty without a tokenizer). A piece holds
    several ids when byte-level tokens share one character (an emoji is 2-4 tokens). A session's
    loaded tokenizer (`engine.tokens.LoadedTokenizer`, untrusted: its regexes run on the text) is
    run in the bounded worker; a model's own tokenizer object is called here."""
    if not text:
        return [], []
    if tokenizer is not None:
        cut = _split_with_tokenizer(text, tokenizer)
        if cut is not None:
            return cut
    return [m.group() for m in _PIECE.finditer(text)], []


def _encode(text: str, tokenizer: Any) -> tuple[list[int], list[tuple[int, int]]] | None:
    files = getattr(tokenizer, "files", None)
    if files is not None:  # a session's loaded tokenizer: in the worker, bounded
        from ..tokens import prompt_tokens

        view = prompt_tokens(files, text, timeout=limits.RENDER_SECONDS, max_chars=limits.MAX_OUTPUT_CHARS)
        return (view.ids, view.offsets) if not view.diagnostics else None
    try:
        encoded = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        return list(encoded["input_ids"]), list(encoded["offset_mapping"])
    except Exception:  # noqa: BLE001 - slow tokenizers have no offsets: use the fallback splitter
        return None


def _split_with_tokenizer(text: str, tokenizer: Any) -> tuple[list[str], list[tuple[int, ...]]] | None:
    encoded = _encode(text, tokenizer)
    if encoded is None:
        return None
    pieces: list[str] = []
    ids: list[tuple[int, ...]] = []
    cut, early = 0, ()
    for token_id, (_, end) in zip(*encoded):
        # Byte-level tokens inside one character share its offsets: they join the piece of that character.
        if end > cut:
            pieces.append(text[cut:end])
            ids.append((*early, token_id))
            cut, early = end, ()
        elif pieces:
            ids[-1] += (token_id,)
        else:  # a token with no text before any piece (zero-width): it goes with the first piece
            early += (token_id,)
    if cut < len(text):  # text the tokenizer normalised away (trailing spaces, say)
        if pieces:
            pieces[-1] += text[cut:]
        else:
            pieces.append(text[cut:])
            ids.append(early)
    return pieces, ids


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
        yield from paced(*token_pieces(self.text, self.tokenizer), self.tokens_per_second, stop)
