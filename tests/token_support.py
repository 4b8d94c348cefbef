"""Tiny tokenizers for the token tests, built offline with the `tokenizers` library (as
tests/tiny_model.py does): a byte-level BPE trained in memory on a few sentences, so any text
encodes, with the special and added tokens a format needs, optionally adding BOS the way Llama's
tokenizers do (a TemplateProcessing post-processor), and saved as the files a repo holds."""

from __future__ import annotations

import re
import tempfile
from functools import lru_cache
from pathlib import Path

from engine.tokens import TokenizerFiles, load_tokenizer_files

_CORPUS = [
    "The weather in Paris is sunny today, with a light breeze from the west.",
    "Let me think about the question before I answer it step by step.",
    "Hello! How can I help you today? I am a small test model.",
    '{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}',
    "user assistant system tool <think> </think> <tool_call> </tool_call>",
    "First line.\n\nSecond line.\n",
] * 4

# Text that reads as a special token in a template's literals (<|im_start|>, <｜end▁of▁sentence｜>).
GENERIC = re.compile(r"<\|[^<>|\s]{1,60}\|>|<｜[^<>｜\s]{1,60}｜>")


@lru_cache(maxsize=64)
def tokenizer_files(special: tuple[str, ...] = (), added: tuple[str, ...] = (), *, bos: str | None = None,
                    eos: str | None = None, add_bos: bool = False, vocab_size: int = 400) -> TokenizerFiles:
    """The files (tokenizer.json, tokenizer_config.json) of a tiny tokenizer: `special` added as
    special tokens, `added` as ordinary added tokens (special=False), BOS added by the
    post-processor when `add_bos`."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    specials = list(dict.fromkeys([*(t for t in (bos, eos) if t), *special]))
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(_CORPUS, trainer=trainer)
    tokenizer.add_tokens([AddedToken(t, special=False, normalized=False) for t in added])
    if add_bos and bos:
        tokenizer.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, tokenizer.token_to_id(bos))])
    kwargs = {k: v for k, v in (("bos_token", bos), ("eos_token", eos)) if v}
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, **kwargs)
    with tempfile.TemporaryDirectory() as folder:
        fast.save_pretrained(folder)
        config = Path(folder, "tokenizer_config.json").read_bytes()
        data = Path(folder, "tokenizer.json").read_bytes()
    return TokenizerFiles(data, config, None, source="test tokenizer")


def tiny(special: tuple[str, ...] = (), added: tuple[str, ...] = (), **options):
    """The loaded tokenizer (engine.tokens.LoadedTokenizer) of `tokenizer_files(...)`."""
    loaded, problems = load_tokenizer_files(tokenizer_files(tuple(special), tuple(added), **options))
    assert loaded is not None, problems
    return loaded


def format_tokenizer(chat_template: str, special_tokens: dict, stop_tokens=(), **options):
    """A tokenizer that mimics a format's: every `<|…|>`-style text of the template, its special
    tokens and stop tokens are special tokens."""
    special = sorted(set(GENERIC.findall(chat_template)) | set(special_tokens.values()) | set(stop_tokens))
    return tiny(tuple(special), bos=special_tokens.get("bos_token"), eos=special_tokens.get("eos_token"), **options)
