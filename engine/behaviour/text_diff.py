"""The smallest character difference between two prompts, as places where one text became another.

The texts are cut to what differs (their common start and end), the rest is compared line by line
(fast: lines are few and mostly distinct), the lines that differ token by token (a tag or special
token such as `<|im_end|>` is one token, then runs of whitespace, words and single punctuation, so the
diff never pairs the `<` of one delimiter with the `<` of another), and each differing stretch is
trimmed again, character by character, to what really changed: a newline added after
`assistant\\n` is one inserted `\\n`, not a replaced line."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from ..text import first_difference

_TOKEN = re.compile(r"<[^<>\s]{1,64}>|\s+|\w+|[^\w\s]")
# Past this many tokens in the part that differs, the difference is one stretch (the comparison
# grows with the square of the length; prompts that differ over 20,000 tokens differ everywhere).
MAX_TOKENS = 20_000


@dataclass(frozen=True)
class Hunk:
    """`before[a0:a1]` became `after[b0:b1]` (an empty side: an insertion or a deletion)."""

    a0: int
    a1: int
    b0: int
    b1: int


def hunks(before: str, after: str) -> list[Hunk]:
    """Where `before` and `after` differ, in order (none when they are equal)."""
    start = first_difference(before, after)
    if start is None:
        return []
    end = _common_suffix(before, after, start)
    a1, b1 = len(before) - end, len(after) - end
    if a1 == start or b1 == start:
        return [Hunk(start, a1, start, b1)]
    # Lines first (few, and mostly distinct: fast), then tokens inside the lines that differ.
    a_lines, b_lines = _pieces(before, start, a1, _lines), _pieces(after, start, b1, _lines)
    out = []
    for a_from, a_to, b_from, b_to in _differing(a_lines, b_lines, a1, b1):
        if a_from == a_to or b_from == b_to:
            out.append(_trimmed(before, after, Hunk(a_from, a_to, b_from, b_to)))
            continue
        a_tokens, b_tokens = _pieces(before, a_from, a_to, _tokens), _pieces(after, b_from, b_to, _tokens)
        if len(a_tokens) + len(b_tokens) > MAX_TOKENS:
            out.append(_trimmed(before, after, Hunk(a_from, a_to, b_from, b_to)))
            continue
        out += [_trimmed(before, after, Hunk(*span)) for span in _differing(a_tokens, b_tokens, a_to, b_to)]
    return [h for h in out if h.a0 != h.a1 or h.b0 != h.b1]


def _differing(a: list[tuple[str, int]], b: list[tuple[str, int]], a_end: int, b_end: int) -> list[tuple[int, int, int, int]]:
    """The (a0, a1, b0, b1) character ranges of the runs of pieces that differ."""
    matcher = difflib.SequenceMatcher(None, [t for t, _ in a], [t for t, _ in b], autojunk=False)
    out = []
    for op, i0, i1, j0, j1 in matcher.get_opcodes():
        if op == "equal":
            continue
        a_from = a[i0][1] if i0 < len(a) else a_end
        a_to = a[i1 - 1][1] + len(a[i1 - 1][0]) if i1 > i0 else a_from
        b_from = b[j0][1] if j0 < len(b) else b_end
        b_to = b[j1 - 1][1] + len(b[j1 - 1][0]) if j1 > j0 else b_from
        out.append((a_from, a_to, b_from, b_to))
    return out


def _common_suffix(a: str, b: str, start: int) -> int:
    """How many characters `a` and `b` end with in common, not reaching back before `start`."""
    limit = min(len(a), len(b)) - start
    low, high = 0, limit
    while low < high:  # binary search, as `first_difference` does: fast on long prompts
        mid = (low + high + 1) // 2
        if a[len(a) - mid :] == b[len(b) - mid :]:
            low = mid
        else:
            high = mid - 1
    return low


_LINE = re.compile(r"[^\n]*\n|[^\n]+")


def _pieces(text: str, start: int, end: int, pattern: re.Pattern) -> list[tuple[str, int]]:
    """`text[start:end]` cut by `pattern` (lines, or tokens), each piece with where it starts."""
    return [(m.group(), m.start()) for m in pattern.finditer(text, start, end)]


_lines, _tokens = _LINE, _TOKEN


def _trimmed(before: str, after: str, hunk: Hunk) -> Hunk:
    """The hunk without the characters both sides start and end with."""
    a0, a1, b0, b1 = hunk.a0, hunk.a1, hunk.b0, hunk.b1
    while a0 < a1 and b0 < b1 and before[a0] == after[b0]:
        a0, b0 = a0 + 1, b0 + 1
    while a0 < a1 and b0 < b1 and before[a1 - 1] == after[b1 - 1]:
        a1, b1 = a1 - 1, b1 - 1
    return Hunk(a0, a1, b0, b1)


def marked(text: str, spans: list[tuple[int, int]]) -> list[tuple[str, bool]]:
    """`text` cut into pieces, each with whether it lies in one of `spans` (sorted, not
    overlapping): what a view marks as changed. An empty span is an empty marked piece: where text
    of the other side was inserted or deleted."""
    out, cursor = [], 0
    for start, end in spans:
        if start > cursor:
            out.append((text[cursor:start], False))
        out.append((text[start:end], True))
        cursor = max(cursor, end)
    if cursor < len(text):
        out.append((text[cursor:], False))
    return out
