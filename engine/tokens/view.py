"""The prompt as the model reads it: token ids with their characters, which are special, the
generation prompt, and the assistant mask exactly as `apply_chat_template(...,
return_assistant_tokens_mask=True)` computes it.

The template is untrusted, so it renders in the worker (`engine.render`), which returns the prompt
and its `{% generation %}` character spans; the tokenizer is untrusted too (an uploaded
tokenizer.json holds regexes), so the prompt is encoded in the same bounded worker
(`prompt_tokens(..., timeout=)`), with the tokenizer built once per worker from its files.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from .. import limits
from ..diagnostics import Diagnostic
from ..sandbox import bounded_or_why
from .load import TokenizerFiles, cached_tokenizer


# The page's element around one token, beside its id, spelling and text (`token_panel.tokens_html`).
TOKEN_BYTES = 60


@dataclass
class TokenView:
    """The tokens of one prompt, in parallel lists (compact: a prompt can have 50k tokens).
    `offsets[i]` is token i's (start, end) in the prompt; `generation_token` is the first token of
    the generation prompt; `added_before` / `added_after` are the ids `add_special_tokens=True`
    would add around it (apply_chat_template encodes with add_special_tokens=False, so they are not
    in `ids`)."""

    ids: list[int] = field(default_factory=list)
    offsets: list[tuple[int, int]] = field(default_factory=list)
    pieces: list[str] = field(default_factory=list)  # the tokenizer's own token strings ("Ġthe")
    special: list[bool] = field(default_factory=list)
    assistant_mask: list[int] = field(default_factory=list)
    generation_token: int | None = None
    added_before: list[int] = field(default_factory=list)
    added_after: list[int] = field(default_factory=list)
    bos_token_id: int | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    # Cut for the page (`for_page`): the lists hold the tokens up to `shown_end` (a prompt offset), and
    # the counts (all tokens, special, assistant mask) are the whole prompt's.
    shown_end: int | None = None
    totals: tuple[int, int, int] | None = None

    @property
    def count(self) -> int:
        return self.totals[0] if self.totals else len(self.ids)

    @property
    def special_count(self) -> int:
        return self.totals[1] if self.totals else sum(self.special)

    @property
    def assistant_count(self) -> int:
        return self.totals[2] if self.totals else sum(self.assistant_mask)

    def for_page(self, prompt: str, budget: int) -> TokenView:
        """The view with only the tokens whose HTML fits in about `budget` bytes (the page's
        `token_panel.tokens_html`: an element per token, with its id and spelling), the counts kept
        whole: what a render worker sends the server (a 200,000-character prompt can be 200,000
        tokens, and 14 MB of HTML)."""
        size = 0
        for i, (start, end) in enumerate(self.offsets):
            # Each token: its element, its id twice, its spelling, its text escaped (a newline drawn).
            size += TOKEN_BYTES + 2 * len(str(self.ids[i])) + 2 * len(self.pieces[i]) + 6 * max(0, end - start)
            if size > budget:
                return replace(self, ids=self.ids[:i], offsets=self.offsets[:i], pieces=self.pieces[:i],
                               special=self.special[:i], assistant_mask=self.assistant_mask[:i], shown_end=start,
                               totals=(self.count, self.special_count, self.assistant_count))
        return self

    @property
    def generation_count(self) -> int:
        return 0 if self.generation_token is None else self.count - self.generation_token

    def cells(self, length: int) -> list[tuple[int, int, list[int]]]:
        """The prompt cut into cells that tile it exactly, each with the tokens that start there:
        tokens sharing their first character (byte-level pieces of one character) share a cell, and
        text no token's offsets cover (a stripped space) joins the cell before it."""
        starts: list[tuple[int, list[int]]] = []
        for i, (start, _) in enumerate(self.offsets):
            if starts and start <= starts[-1][0]:
                starts[-1][1].append(i)
            else:
                starts.append((start, [i]))
        if not starts:
            return [(0, length, [])] if length else []
        cuts = [0] + [s for s, _ in starts[1:]] + [length]
        return [(cuts[k], cuts[k + 1], tokens) for k, (_, tokens) in enumerate(starts)]


def assistant_mask(offsets: list[tuple[int, int]], spans: list[tuple[int, int]]) -> list[int]:
    """1 for every token that overlaps a `{% generation %}` span: transformers' rule in
    `apply_chat_template` (5.24), which has no function of its own to call. A test compares the
    result with `apply_chat_template(..., return_assistant_tokens_mask=True)` on every preset case."""
    mask = [0] * len(offsets)
    span_idx = 0
    for token_id, (token_start, token_end) in enumerate(offsets):
        while span_idx < len(spans) and token_start >= spans[span_idx][1]:
            span_idx += 1
        if span_idx == len(spans):
            break
        if token_end > spans[span_idx][0]:
            mask[token_id] = 1
    return mask


def special_ids(tokenizer: Any) -> set[int]:
    """The ids of the tokenizer's special tokens (added tokens marked special, and the named ones)."""
    ids = {i for i, token in tokenizer.added_tokens_decoder.items() if getattr(token, "special", False)}
    return ids | set(tokenizer.all_special_ids)


def added_special_tokens(tokenizer: Any) -> tuple[list[int], list[int]]:
    """The ids `add_special_tokens=True` (the default of `tokenizer(text)`) adds before and after a text."""
    plain = tokenizer("a", add_special_tokens=False)["input_ids"]
    full = tokenizer("a", add_special_tokens=True)["input_ids"]
    for start in range(len(full) - len(plain) + 1):
        if full[start : start + len(plain)] == plain:
            return list(full[:start]), list(full[start + len(plain) :])
    return [], []


def token_view(tokenizer: Any, prompt: str, generation_spans: list[tuple[int, int]] | None = None,
               generation_start: int | None = None, max_chars: int | None = None) -> TokenView:
    """The tokens of `prompt` as `apply_chat_template` encodes it (`add_special_tokens=False`).
    A text over `max_chars` (default: the token view's bound) is not encoded: a diagnostic says so."""
    max_chars = limits.MAX_TOKEN_VIEW_CHARS if max_chars is None else max_chars
    if len(prompt) > max_chars:
        return TokenView(diagnostics=[Diagnostic(
            "info", f"The prompt is {len(prompt):,} characters: tokens are shown up to "
            f"{max_chars:,} (PLAYGROUND_MAX_TOKEN_VIEW_CHARS).", "tokenizer")])
    encoded = tokenizer(prompt, add_special_tokens=False)
    encoding = encoded.encodings[0]
    ids = list(encoding.ids)
    offsets = [tuple(o) for o in encoding.offsets]
    specials = special_ids(tokenizer)
    generation_token = None
    if generation_start is not None:
        generation_token = next((i for i, (_, end) in enumerate(offsets) if end > generation_start), len(ids))
    before, after = added_special_tokens(tokenizer)
    return TokenView(
        ids=ids,
        offsets=offsets,  # type: ignore[arg-type]
        pieces=list(encoding.tokens),
        special=[i in specials for i in ids],
        assistant_mask=assistant_mask(offsets, [tuple(s) for s in generation_spans or []]),  # type: ignore[misc]
        generation_token=generation_token,
        added_before=before,
        added_after=after,
        bos_token_id=tokenizer.bos_token_id,
    )


_MISSING = "tokenizer-not-cached"


def _view_in_worker(key: str, files: TokenizerFiles | None, prompt: str, generation_spans: list,
                    generation_start: int | None, max_chars: int | None = None, page_bytes: int | None = None):
    from .load import _cache, _cache_lock

    if files is None:
        with _cache_lock:
            if key not in _cache:
                return _MISSING
    tokenizer = cached_tokenizer(files) if files is not None else _cache_get(key)
    view = token_view(tokenizer, prompt, generation_spans, generation_start, max_chars)
    return view if page_bytes is None else view.for_page(prompt, page_bytes)


def _cache_get(key: str) -> Any:
    from .load import _cache, _cache_lock

    with _cache_lock:
        return _cache[key].tokenizer


def prompt_tokens(files: TokenizerFiles, prompt: str, generation_spans: list[tuple[int, int]] | None = None,
                  generation_start: int | None = None, *, timeout: float | None = None, owner: Any = None,
                  max_chars: int | None = None, page_bytes: int | None = None) -> TokenView:
    """`token_view` with the tokenizer built from `files`. With `timeout`, in the bounded worker:
    the first call on a worker builds the tokenizer there (and keeps it, keyed by its files' hash),
    later calls send only the key, so a keystroke does not ship a 10 MB tokenizer.json. `page_bytes`:
    only the tokens the page shows in that many bytes come back (`TokenView.for_page`, cut in the
    worker), the counts whole. Never raises."""
    spans = [tuple(s) for s in generation_spans or []]
    if timeout is None:
        try:
            view = token_view(cached_tokenizer(files), prompt, spans, generation_start, max_chars)  # type: ignore[arg-type]
            return view if page_bytes is None else view.for_page(prompt, page_bytes)
        except Exception as e:  # noqa: BLE001 - a tokenizer that fails is a message
            return TokenView(diagnostics=[Diagnostic("error", f"Tokenizing failed: {e}", "tokenizer")])
    kwargs = dict(key=files.key, files=None, prompt=prompt, generation_spans=spans, generation_start=generation_start,
                  max_chars=max_chars, page_bytes=page_bytes)
    for attempt in range(2):
        result, problem = bounded_or_why(_view_in_worker, kwargs, timeout, owner, doing="Tokenizing",
                                         hint="The tokenizer's pre-tokenizer regex may backtrack on this text.")
        if problem is not None:
            return TokenView(diagnostics=[replace(problem, source="tokenizer")])
        if result != _MISSING:
            return result
        kwargs["files"] = files
    return TokenView(diagnostics=[Diagnostic("error", "Tokenizing failed: the worker could not keep the tokenizer.",
                                             "tokenizer")])
