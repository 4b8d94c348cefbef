"""Text helpers for reading delimiters: markup tokens, regex escaping, the literal runs of a regex,
and the common start or end of several texts cut where a delimiter may begin or end."""

from __future__ import annotations

import os

import regex

# Special tokens and tags: <|im_end|>, <think>, </tool_call>, <｜tool▁sep｜>, [TOOL_CALLS], [/INST].
MARKUP = regex.compile(r"<[^<>\s]{1,80}>|\[/?[A-Z][A-Z_]{1,40}\]")


def escape(text: str) -> str:
    """`text` as a regex: only the characters regexes treat specially are escaped (spaces stay
    readable), and newlines and tabs are written as \\n and \\t."""
    return regex.sub(r"[.^$*+?{}\[\]\\|()]", lambda m: "\\" + m.group(), text).replace("\n", "\\n").replace("\t", "\\t")


def shortest_close(common: str) -> str:
    """The start of `common` up to the end of its first markup token, or of its first word when
    whitespace follows that word first (Command R+'s ``` before a newline)."""
    first = MARKUP.search(common)
    space = regex.search(r"\S\s", common)
    if space is not None and (first is None or space.end() - 1 <= first.start()):
        return common[: space.start() + 1]
    return common[: first.end()] if first else common


def open_starts(text: str) -> list[int]:
    """Where an open may start, shortest first: at a markup token, then after whitespace or at the start."""
    markup = sorted({m.start() for m in MARKUP.finditer(text)}, reverse=True)
    words = sorted({m.end() for m in regex.finditer(r"\s+", text)} | {len(text) - len(text.lstrip())}, reverse=True)
    return markup + [w for w in words if w not in markup and w < len(text)]


def common_suffix(texts: list[str]) -> str:
    return os.path.commonprefix([t[::-1] for t in texts])[::-1]


def boundary_suffix(texts: list[str]) -> str:
    """The common end of `texts`, from where an open may start (a markup token, or a word start in
    every text)."""
    common = common_suffix(texts)
    if all(len(t) == len(common) for t in texts):
        return common
    starts = {m.start() for m in MARKUP.finditer(common)} | {m.end() for m in regex.finditer(r"\s+", common)}
    if all(len(t) == len(common) or t[-len(common) - 1] in " \n\t>]" for t in texts):
        starts.add(0)
    starts.discard(len(common))
    return common[min(starts) :] if starts else ""


def boundary_prefix(texts: list[str]) -> str:
    """The common start of `texts`, up to where a close may end (after a markup token, before
    whitespace, or the end of a text)."""
    common = os.path.commonprefix(texts)
    if all(len(t) == len(common) for t in texts):
        return common
    ends = {m.end() for m in MARKUP.finditer(common)} | {m.start() for m in regex.finditer(r"\s+", common)}
    if all(len(t) == len(common) or t[len(common)] in " \n\t<[" for t in texts):
        ends.add(len(common))
    ends.discard(0)
    return common[: max(ends)] if ends else ""


_REGEX_SPECIAL = set("()[]{}*+?|.^$")


def literal_runs(pattern: str) -> list[str]:
    """The runs of literal characters in a regex (`<\\|tool_call\\|>` gives `<|tool_call|>`); classes,
    group headers and a character a quantifier makes optional end a run."""
    runs, current, i = [], "", 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern):
            escaped, i = pattern[i + 1], i + 2
            if escaped in "nt":
                current += "\n" if escaped == "n" else "\t"
            elif not escaped.isalnum():
                current += escaped
            else:  # \s, \d, \w, \b...: a class, not a literal
                runs, current = runs + [current], ""
                continue
        elif char == "[":  # a character class: skip it
            i = _class_end(pattern, i)
            runs, current = runs + [current], ""
            continue
        elif char == "(":  # a group: skip its header ((?:, (?=, (?P<name>, (?<=...)
            header = regex.match(r"\(\?(?:P?<[A-Za-z_]\w*>|<=|<!|[:=!>])?", pattern[i:])
            i += len(header.group()) if header else 1
            runs, current = runs + [current], ""
            continue
        elif char in _REGEX_SPECIAL:
            if char in "*?{" and current:
                current = current[:-1]  # the character before a quantifier may be absent
            runs, current = runs + [current], ""
            i += 1
            continue
        else:
            current += char
            i += 1
        if i < len(pattern) and pattern[i] in "*?{" and current:
            runs, current = runs + [current[:-1]], ""
    runs.append(current)
    return [r for r in runs if r]


def _class_end(pattern: str, start: int) -> int:
    """The index after the `]` that closes the class opening at `start`."""
    i = start + 1
    if i < len(pattern) and pattern[i] == "^":
        i += 1
    if i < len(pattern) and pattern[i] == "]":
        i += 1
    while i < len(pattern) and pattern[i] != "]":
        i += 2 if pattern[i] == "\\" else 1
    return i + 1
