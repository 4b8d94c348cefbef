"""Adversarial response templates and outputs that the trace's spans must get exactly right.

Each scenario is (spec, prompt, output, tools). Shared by the trace tests and the benchmark."""

from __future__ import annotations

import json

CHATML_ANCHOR = "<|im_start|>assistant\n"

SMOL = {
    "defaults": {"role": "assistant"},
    "start_anchor": CHATML_ANCHOR,
    "fields": {
        "reasoning_content": {"open": "<think>", "close": "</think>", "content": "text"},
        "tool_calls": {
            "open": "<tool_call>",
            "close": "</tool_call>",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"close": "<|im_end|>", "content": "text"},
    },
}

# Harmony (gpt-oss): every channel re-opens with <|start|>assistant, which no region claims (dropped),
# regex opens whose text also appears in bodies, a named capture merged by a transform, join.
HARMONY = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|start|>assistant",
    "fields": {
        "reasoning_content": {
            "open_pattern": r"<\|channel\|>analysis<\|message\|>",
            "close": "<|end|>",
            "repeats": True,
            "join": "\n",
        },
        "tool_calls": {
            "open_pattern": r"<\|channel\|>commentary to=functions\.(?P<name>[\w.]+)\s*(?:<\|constrain\|>json)?<\|message\|>",
            "close": "<|call|>",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}},
        },
        "content": {"open_pattern": r"<\|channel\|>final<\|message\|>", "close": ["<|return|>", "<|end|>"]},
    },
}

# Regex closes with trailing \s* (held back until a non-space arrives), and a literal list whose
# members overlap as prefixes (a finished short match may still grow).
REGEX_WS = {
    "start_anchor": CHATML_ANCHOR,
    "fields": {
        "reasoning_content": {"open": "<think>", "close_pattern": r"\s*</think>\s*"},
        "tool_calls": {
            "open": ["<tool_call>", "<tool_call>\n"],
            "close_pattern": r"\s*</tool_call>\s*",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"content": "text"},
    },
}

# No implicit field: text outside regions is dropped, and an unclosed region runs to the end.
NO_IMPLICIT = {
    "start_anchor": CHATML_ANCHOR,
    "fields": {
        "answer": {"open": "<answer>", "close": "</answer>", "repeats": True},
        "score": {"open_pattern": r"<score\s*=\s*", "close": "/>", "content": "int"},
        "notes": {"open": "[notes]"},
    },
}

# Cohere-style: one JSON array of actions reshaped per element.
COHERE = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>",
    "fields": {
        "reasoning_content": {"open": "<|START_THINKING|>", "close": "<|END_THINKING|>"},
        "tool_calls": {
            "open": "<|START_ACTION|>",
            "close": "<|END_ACTION|>",
            "content": "json",
            "transform_each": True,
            "transform": {"type": "function", "function": {"name": "{tool_name}", "arguments": "{parameters}"}},
        },
        "content": {"open": "<|START_RESPONSE|>", "close": "<|END_RESPONSE|>"},
    },
}

WEATHER_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            },
        },
    }
]

CHATML_PROMPT = "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\nAgain?<|im_end|>\n" + CHATML_ANCHOR

SCENARIOS: dict[str, tuple[dict, str, str, list | None]] = {
    "chatml reasoning, parallel calls, silent implicit close": (
        SMOL,
        CHATML_PROMPT,
        "<think>\nI should call </thi the tool <think> twice\n</think>\n\n"
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "</tool_call x", "days": 3}}\n</tool_call>\n'
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo", "days": "2"}}</tool_call><|im_end|>',
        WEATHER_TOOLS,
    ),
    "chatml answer with delimiter-like text": (
        SMOL,
        CHATML_PROMPT,
        "Use a < b and </thi or <tool_ to compare {\"a\": 1} <|im_en d|>. Done<|im_end|>trailing",
        None,
    ),
    "chatml think opened by the prompt": (
        SMOL,
        CHATML_PROMPT + "<think>\n",
        "Still thinking about <think> tags\n</think>\nThe answer<|im_end|>",
        None,
    ),
    "chatml cut off inside reasoning": (SMOL, CHATML_PROMPT, "<think>\nLet me count: 1, 2, 3, </th", None),
    "harmony channels, one character at a time": (
        HARMONY,
        "<|start|>user<|message|>Weather?<|end|><|start|>assistant",
        "<|channel|>analysis<|message|>The user asks assistant analysis about <|channel|> final weather.<|end|>"
        "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
        '{"city": "Paris", "days": "2"}<|call|>'
        "<|start|>assistant<|channel|>analysis<|message|>Second thought: final answer next.<|end|>"
        "<|start|>assistant<|channel|>final<|message|>It is <b>sunny</b> in Paris, assistant<|return|>",
        WEATHER_TOOLS,
    ),
    "regex closes with \\s* and overlapping literal list": (
        REGEX_WS,
        "<|im_start|>assistant\n",
        "<think>  reason here  \n</think>\n\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>\n\n"
        "<tool_call>{\"name\": \"g\", \"arguments\": {\"x\": 1}}</tool_call>   then text   ",
        None,
    ),
    "thinking off: empty think block prefilled, regex close straddles the prompt": (
        REGEX_WS,
        "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n",
        "\n  Direct answer without reasoning.",
        None,
    ),
    "no implicit field: text dropped": (
        NO_IMPLICIT,
        "",
        "preamble <answer>first</answer> between <score = 7/> more noise <answer>second <answ</answer> tail [notes] runs to the end",
        None,
    ),
    "cohere actions array": (
        COHERE,
        "<|START_OF_TURN_TOKEN|><|USER_TOKEN|>weather?<|END_OF_TURN_TOKEN|><|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>",
        "<|START_THINKING|>I will look it up.<|END_THINKING|><|START_ACTION|>["
        '{"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "Rome", "days": 1}},'
        '{"tool_call_id": "1", "tool_name": "get_weather", "parameters": {"city": "Oslo", "days": "4"}}'
        "]<|END_ACTION|>",
        WEATHER_TOOLS,
    ),
}


def realistic_output(size: int) -> str:
    """About `size` characters of SmolLM3-style output: long reasoning, tool calls, a long answer."""
    sentence = "The quick brown fox considers <b>tags</b> and {braces} before answering. "
    reasoning = sentence * max(1, size // (3 * len(sentence)))
    call = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}</tool_call>\n'
    body = f"<think>\n{reasoning}</think>\n\n" + call * 3 + reasoning + reasoning
    return (body * (size // len(body) + 1))[:size] + "<|im_end|>"


def dump(spec: dict) -> str:
    return json.dumps(spec, indent=2)
