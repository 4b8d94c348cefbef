"""Content parts: a message whose `content` is a list of parts (`{"type": "text", "text": …}`,
`{"type": "image"}`, video, audio), as vision and audio chat templates read them (Mistral Small 3.x,
Gemma 3, Qwen2.5-VL, SmolVLM, Llama 4). transformers passes parts to the template unchanged (a part
without text renders as the template writes it: `[IMG]`, `<start_of_image>`…); this module says what
the rest of the engine needs to know about them.

Whether a template reads parts is measured, never guessed from its source: a conversation with a
picture and a question as parts is rendered, and the template reads parts when the question's text
reaches the prompt and the list itself is not printed (Llama 3.1's template, for one, prints the list
as Python writes it). A template that reads *only* parts (SmolVLM's) drops text given as a string:
the checks and the draft then give it every message's text as a text part."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

PROBE_TEXT = "What is in this picture?"
# The conversation that tells whether a template reads parts (and the built-in checks' case).
PARTS_CONVERSATION = [
    {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": PROBE_TEXT}]},
    {"role": "assistant", "content": "A cat asleep on a windowsill."},
    {"role": "user", "content": [{"type": "text", "text": "And what colour is the cat?"}]},
]


def is_parts(content: Any) -> bool:
    """Whether `content` is a list of parts (objects with a `type`)."""
    return isinstance(content, list) and all(isinstance(part, dict) and "type" in part for part in content)


def text_of(content: Any) -> str:
    """The text of a message's content: a string as it is, the text parts of a list joined (what a
    model's reply to it is about; pictures, audio and video have no text)."""
    if isinstance(content, str):
        return content
    if is_parts(content):
        return "".join(str(part.get("text", "")) for part in content if part.get("type") == "text")
    return ""


def as_parts(message: dict) -> dict:
    """The message with a string `content` as one text part (other messages as they are)."""
    content = message.get("content")
    return {**message, "content": [{"type": "text", "text": content}]} if isinstance(content, str) else message


def writes_parts(messages: list[dict]) -> bool:
    """Whether a conversation gives its messages' content as parts (some message does, none gives a
    string): a parsed reply, a string, then goes back into it as a text part, as a vision app
    appends it."""
    contents = [m.get("content") for m in messages if isinstance(m, dict) and m.get("content") is not None]
    return any(is_parts(c) for c in contents) and not any(isinstance(c, str) for c in contents)


def reads_parts(render: Callable[[list[dict]], Any]) -> bool:
    """Whether the template reads content parts: `render(messages)` (a `RenderResult`) of the parts
    conversation succeeds, shows the question's text, and does not print the list itself."""
    result = render([PARTS_CONVERSATION[0]])
    if not result.ok or PROBE_TEXT not in result.prompt:
        return False
    return "'type'" not in result.prompt and '"type"' not in result.prompt


def drops_string_text(messages: list[dict], prompt: str | None) -> bool:
    """Whether none of the text the messages give as strings reaches `prompt` (a template that reads
    only parts)."""
    texts = [m["content"].strip() for m in messages if isinstance(m, dict) and isinstance(m.get("content"), str)
             and m["content"].strip()]  # fmt: skip
    return bool(texts) and prompt is not None and not any(text in prompt for text in texts)
