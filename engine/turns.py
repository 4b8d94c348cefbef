"""An assistant turn as the chat template writes it: the text that follows the prompt when the
message is rendered into history. The simulated runner streams it; the response-template draft
reads delimiters from it.

Most templates simply continue the prompt (the history starts with it). Some render earlier turns
differently once a reply follows (gpt-oss drops the reasoning of turns before a final answer); then
the reply is found after the longest tail of the prompt (generation prompt included) that the
history still contains.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from .diagnostics import Diagnostic


@dataclass
class Reply:
    """The reply's text in the history, and a diagnostic when the history does not simply continue
    the prompt (info: earlier turns were re-rendered; warning: the generation prompt disagrees)."""

    text: str
    diagnostic: Diagnostic | None = None


def reply_after(prompt: str, history: str, header: str | None) -> Reply:
    """What follows `prompt` in `history` (the conversation rendered with the reply appended and no
    generation prompt). `header` is the generation prompt (None when it cannot tell)."""
    if history.startswith(prompt):
        return Reply(history[len(prompt) :])
    shared = len(os.path.commonprefix([prompt, history]))
    if header:
        length = longest_tail(prompt, history, shared)
        if length > len(header):
            at = history.find(prompt[-length:], max(0, shared - length)) + length
            return Reply(history[at:], Diagnostic(
                "info",
                f"With the reply in history, the template renders earlier turns differently (from character "
                f"{shared} of the prompt: {prompt[shared:shared + 30]!r} becomes {history[shared:shared + 30]!r}). "
                "The reply is its own text, found after the end of the prompt.",
                "runner",
                hint="Expected for formats that drop earlier reasoning from history; otherwise check the template.",
            ))  # fmt: skip
    # The two part ways inside a token (a prefilled "<think>" where the history has "<tool_call>"):
    # the reply starts with that whole token.
    while shared > 0 and not history[shared - 1].isspace() and history[shared - 1] not in ">]":
        shared -= 1
    return Reply(history[shared:], Diagnostic(
        "warning",
        f"The assistant turn rendered into history does not continue the prompt: from character "
        f"{shared} the prompt has {prompt[shared:shared + 30]!r} but the history has "
        f"{history[shared:shared + 30]!r}. The reply is taken as the history's text after the shared part.",
        "runner",
        hint="The generation prompt and the way the template renders an assistant message in history "
        "should agree (e.g. a prefilled <think> the history rendering leaves out).",
    ))  # fmt: skip


def longest_tail(prompt: str, history: str, shared: int) -> int:
    """The length of the longest tail of `prompt` found in `history` ending at or after `shared`.
    (A shorter tail is found wherever a longer one is, so a binary search finds the longest.)"""
    low, high = 0, len(prompt)
    while low < high:
        middle = (low + high + 1) // 2
        if history.find(prompt[-middle:], max(0, shared - middle)) >= 0:
            low = middle
        else:
            high = middle - 1
    return low


def up_to_stop(text: str, stop_tokens: list[str]) -> str:
    """`text` up to and including its first stop token: a model stops there, so what the template
    writes after it is not output."""
    for stop in stop_tokens:
        if stop and (at := text.find(stop)) >= 0:
            text = text[: at + len(stop)]
    return text
