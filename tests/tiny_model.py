"""Test helpers: a tiny random-weight Llama model and tokenizer built offline in a folder, plus a
small ChatML chat template / response template pair written for the tests.

Nothing here downloads anything: the tokenizer is a byte-level BPE trained in memory on a few
sentences (so it can encode any text), with the chat delimiters added as special tokens, and the
model is a 2-layer `LlamaConfig` saved as safetensors. Reused by the runner tests and the UI tests.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.trace_cases import SMOL

# A ChatML template (tools in the system turn, `<think>` reasoning, `<tool_call>` JSON), written for
# these tests: enough shapes to exercise every runner without depending on the presets.
CHATML_TEMPLATE = """\
{%- if tools %}
{{- '<|im_start|>system\\n' }}
{%- if messages[0].role == 'system' %}{{- messages[0].content + '\\n\\n' }}{%- endif %}
{{- 'Tools:\\n' }}
{%- for tool in tools %}{{- tool | tojson + '\\n' }}{%- endfor %}
{{- 'Call a tool as <tool_call>{"name": ..., "arguments": {...}}</tool_call>.<|im_end|>\\n' }}
{%- elif messages[0].role == 'system' %}
{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}
{%- endif %}
{%- for message in messages %}
{%- if message.role == 'user' %}
{{- '<|im_start|>user\\n' + message.content + '<|im_end|>\\n' }}
{%- elif message.role == 'assistant' %}
{{- '<|im_start|>assistant\\n' }}
{%- if message.reasoning_content %}{{- '<think>\\n' + message.reasoning_content + '\\n</think>\\n\\n' }}{%- endif %}
{%- if message.content %}{{- message.content }}{%- endif %}
{%- for call in message.tool_calls or [] %}
{{- '<tool_call>\\n' + {'name': call.function.name, 'arguments': call.function.arguments} | tojson + '\\n</tool_call>' }}
{%- endfor %}
{{- '<|im_end|>\\n' }}
{%- elif message.role == 'tool' %}
{{- '<|im_start|>user\\n<tool_response>\\n' + message.content + '\\n</tool_response><|im_end|>\\n' }}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
{{- '<|im_start|>assistant\\n' }}
{%- if enable_thinking is defined and not enable_thinking %}{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}
{%- endif %}
"""

# The SmolLM-style response template the trace tests use (tests/trace_cases.py).
CHATML_RESPONSE_TEMPLATE = json.dumps(SMOL, indent=2)

CHATML_SPECIAL_TOKENS = {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}
CHATML_STOP_TOKENS = ["<|im_end|>"]
# The format's delimiters, each one token. As in Qwen3's tokenizer, the turn markers are special
# tokens (servers that skip special tokens drop them) and the region tags are ordinary added tokens.
CHATML_SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHATML_ADDED = ["<think>", "</think>", "<tool_call>", "</tool_call>"]

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "The city"},
                "days": {"type": "integer", "description": "How many days"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                "detailed": {"type": "boolean"},
            },
            "required": ["city", "days", "unit"],
        },
    },
}

_CORPUS = [
    "The weather in Paris is sunny today, with a light breeze from the west.",
    "Let me think about the question before I answer it step by step.",
    "Hello! How can I help you today? I am a small test model.",
    '{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}',
    "The user asks about the weather, so I should call the tool with the city.",
] * 4


def build_tokenizer(special_tokens: list[str] = CHATML_SPECIAL, added_tokens: list[str] = CHATML_ADDED,
                    eos_token: str = "<|im_end|>", pad_token: str = "<|endoftext|>", vocab_size: int = 400):
    """A byte-level BPE tokenizer (any text encodes and decodes exactly) with `special_tokens` added
    as special tokens and `added_tokens` as ordinary single tokens, as a `PreTrainedTokenizerFast`."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(special_tokens),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(_CORPUS, trainer=trainer)
    tokenizer.add_tokens([AddedToken(t, special=False, normalized=False) for t in added_tokens])
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token=eos_token, pad_token=pad_token)


def build_tiny_model(folder: str | Path, special_tokens: list[str] = CHATML_SPECIAL,
                     added_tokens: list[str] = CHATML_ADDED, eos_token: str = "<|im_end|>",
                     chat_template: str | None = CHATML_TEMPLATE, seed: int = 0) -> Path:
    """Write a tiny random-weight Llama causal LM and its tokenizer to `folder` (safetensors only)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(special_tokens, added_tokens, eos_token)
    if chat_template is not None:
        tokenizer.chat_template = chat_template
    tokenizer.save_pretrained(folder)
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
        tie_word_embeddings=True,
    )
    model = LlamaForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(folder)  # safetensors (the transformers 5 default)
    return folder


def allow_only(tokenizer, prompt: str, output: str):
    """A `prefix_allowed_tokens_fn` for `generate()` that forces the model to write `output` after
    `prompt` (then only the eos token): a random-weight model with a scripted reply."""
    script = tokenizer.encode(output, add_special_tokens=False)
    start = len(tokenizer.encode(prompt, add_special_tokens=False))

    def allowed(batch_id, input_ids):
        step = input_ids.shape[-1] - start
        return [script[step]] if step < len(script) else [tokenizer.eos_token_id]

    return allowed


def forcing_bias(tokenizer, prompt: str, output: str, context: int = 8, bias: float = 100.0) -> list:
    """A `sequence_bias` (a GenerationConfig field, so it travels as JSON to a server) that makes
    greedy decoding write `output` after `prompt`: each step's token is boosted when the `context`
    tokens before it match the script."""
    before = tokenizer.encode(prompt, add_special_tokens=False)
    script = tokenizer.encode(output, add_special_tokens=False)
    tokens = before + script
    rules: dict[tuple, int] = {}
    for i in range(len(before), len(tokens)):
        key = tuple(tokens[max(0, i - context) : i])
        if rules.setdefault(key, tokens[i]) != tokens[i]:
            raise ValueError("The script repeats a context with a different next token: raise `context`.")
    return [[[*key, token], bias] for key, token in rules.items()]
