"""Showing text to a person: whitespace made visible, long text shortened, and what reads as one
special token. Shared by the checks, the command line, the runners and the app, so every view
agrees on how a delimiter or a newline looks."""

from __future__ import annotations

# Text that reads as one special token in almost every vocabulary: `<|im_end|>`,
# `<｜end▁of▁sentence｜>`, `<|START_OF_TURN_TOKEN|>`. The prompt view boxes these (and the
# tokens a format declares); the recorded runner never splits them.
GENERIC_SPECIAL_TOKEN = r"<\|[^<>|\s]{1,60}\|>|<｜[^<>｜\s]{1,60}｜>"
# ... and, for splitting a replay into tokens, tag-like text too: `<think>`, `</tool_call>`, `[TOOL_CALLS]`.
SPECIAL_TOKEN = GENERIC_SPECIAL_TOKEN + r"|</?[A-Za-z_][\w.\-]{0,60}>|\[/?[A-Z][A-Z0-9_]{1,40}\]"

_VISIBLE = {" ": "·", "\t": "→", "\n": "⏎", "\r": "␍"}


def visible(text: str) -> str:
    """`text` on one line with its whitespace drawn: · space, → tab, ⏎ newline."""
    return "".join(_VISIBLE.get(c, c) for c in text)


def short(text: str, limit: int = 60) -> str:
    """`text` with visible whitespace, cut to `limit` characters."""
    shown = visible(text)
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


def shorten(text: str, limit: int = 160) -> str:
    """`text` cut in the middle to about `limit` characters (its start and its end both stay)."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return text[:half] + " … " + text[-half:]


def first_difference(a: str, b: str) -> int | None:
    """Index of the first character where `a` and `b` differ (None if equal)."""
    if a == b:
        return None
    limit = min(len(a), len(b))
    low, high = 0, limit  # binary search on the common prefix: fast on 10 KB texts
    while low < high:
        mid = (low + high + 1) // 2
        if a[:mid] == b[:mid]:
            low = mid
        else:
            high = mid - 1
    return low


def show_difference(a: str, b: str, index: int, labels: tuple[str, str], width: int = 30) -> str:
    """Both texts around their first difference, whitespace visible, aligned one above the other."""
    start = max(0, index - width)
    label_width = max(len(labels[0]), len(labels[1]))
    lines = []
    for label, text in zip(labels, (a, b)):
        before = visible(text[start:index])
        after = visible(text[index : index + width]) or "(end of text)"
        ellipsis = "…" if start > 0 else ""
        tail = "…" if index + width < len(text) else ""
        lines.append(f"  {label.rjust(label_width)}: {ellipsis}{before}▕{after}{tail}")
    return "\n".join(lines)


def indent_error(error: str) -> str:
    """A multi-line error message indented under the line that introduces it."""
    return error.replace("\n", "\n    ")
