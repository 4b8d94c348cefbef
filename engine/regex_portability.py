"""Regex portability: constructs Python's `regex` module accepts that other engines (JavaScript's
RegExp, RE2, Rust's regex, C++ std::regex) do not, so a response template using them only works in
Python. The portable subset: literals, classes, `.`, anchors, alternation, greedy and lazy
quantifiers, `(...)`, `(?:...)` and `(?P<name>...)`.

A careful scanner, not a regex over the pattern: it walks the pattern the way the engine parses it,
so `\\(?=` (an escaped paren) and `[(?=]` (a character class) are not lookaheads."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

_QUANTIFIER = re.compile(r"\{(\d*)(,(\d*))?\}")
_FUZZY = re.compile(r"\{[eisd]\s*(<=|<|=)")
_REGEX_ONLY_ESCAPES = {
    "K": "`\\K` (keep out)",
    "G": "`\\G` (continue where the last match ended)",
    "X": "`\\X` (grapheme cluster)",
    "m": "`\\m` (start of word)",
    "M": "`\\M` (end of word)",
    "L": "`\\L<name>` (named list)",
}


@dataclass(frozen=True)
class RegexFinding:
    """A non-portable construct at `index` (`length` characters) of the pattern."""

    index: int
    length: int
    construct: str
    fix: str


def scan(pattern: str) -> list[RegexFinding]:
    """Every non-portable construct in `pattern`, in order."""
    found: list[RegexFinding] = []
    n = len(pattern)
    i = 0
    can_repeat = False  # whether the previous item can take a quantifier

    def add(start: int, end: int, construct: str, fix: str) -> None:
        found.append(RegexFinding(start, end - start, construct, fix))

    while i < n:
        c = pattern[i]
        if c == "\\":
            i = _escape(pattern, i, add)
            can_repeat = True
        elif c == "[":
            i = _class_end(pattern, i)
            can_repeat = True
        elif c == "(":
            i = _group(pattern, i, add)
            can_repeat = False
        elif c == ")":
            i += 1
            can_repeat = True
        elif c in "*+?" and can_repeat:
            i = _after_quantifier(pattern, i + 1, i, add)
            can_repeat = False
        elif c == "{":
            fuzzy = _FUZZY.match(pattern, i)
            quantifier = _QUANTIFIER.match(pattern, i)
            if fuzzy:
                end = pattern.find("}", i)
                end = n if end < 0 else end + 1
                add(i, end, "fuzzy matching `{e<=…}`", "match the text exactly")
                i, can_repeat = end, False
            elif quantifier and (quantifier.group(1) or quantifier.group(3)) and can_repeat:
                i = _after_quantifier(pattern, quantifier.end(), i, add)
                can_repeat = False
            else:
                i += 1  # a literal brace
                can_repeat = True
        else:
            i += 1
            can_repeat = c not in "|^$"
    return found


def spec_patterns(spec: dict) -> list[tuple[tuple, str]]:
    """(JSON path, pattern) for every regex in the spec: anchors, delimiters, content_args patterns."""
    out = []
    if isinstance(spec.get("start_anchor_pattern"), str):
        out.append((("start_anchor_pattern",), spec["start_anchor_pattern"]))
    for name, field in spec.get("fields", {}).items():
        for key in ("open_pattern", "close_pattern"):
            if isinstance(field.get(key), str):
                out.append((("fields", name, key), field[key]))
        out += _arg_patterns(field.get("content_args"), ("fields", name, "content_args"))
    return out


def _arg_patterns(args: Any, path: tuple) -> list[tuple[tuple, str]]:
    if not isinstance(args, dict):
        return []
    out = []
    for key, value in args.items():
        if key == "tag_pattern" and isinstance(value, str):
            out.append(((*path, key), value))
        elif isinstance(value, dict):
            out += _arg_patterns(value, (*path, key))
    return out


def _escape(pattern: str, i: int, add) -> int:
    """Handle the escape at `i`; return the index after it."""
    following = pattern[i + 1 : i + 2]
    if following.isdigit() and following != "0":
        end = i + 2
        while end < len(pattern) and pattern[end].isdigit():
            end += 1
        add(i, end, f"backreference `{pattern[i:end]}`", "capture the text once and compare in code, or repeat the literal text")
        return end
    if following in ("g", "k") and pattern[i + 2 : i + 3] in ("<", "{", "'"):
        closer = {"<": ">", "{": "}", "'": "'"}[pattern[i + 2]]
        end = pattern.find(closer, i + 3)
        end = len(pattern) if end < 0 else end + 1
        add(i, end, f"backreference `{pattern[i:end]}`", "repeat the literal text instead")
        return end
    if following in _REGEX_ONLY_ESCAPES:
        end = i + 2
        if following == "L" and pattern[end : end + 1] == "<":
            close = pattern.find(">", end)
            end = len(pattern) if close < 0 else close + 1
        add(i, end, _REGEX_ONLY_ESCAPES[following], "use a construct from the portable subset")
        return end
    if following in ("p", "P", "N", "x", "u") and pattern[i + 2 : i + 3] == "{":
        close = pattern.find("}", i + 3)  # \p{L}, \N{NAME}: the braces are not a quantifier
        return len(pattern) if close < 0 else close + 1
    return i + 2


def _class_end(pattern: str, i: int) -> int:
    """Index after the character class opening at `i` (`]` right after `[` or `[^` is literal)."""
    j = i + 1
    if pattern[j : j + 1] == "^":
        j += 1
    if pattern[j : j + 1] == "]":
        j += 1
    while j < len(pattern):
        if pattern[j] == "\\":
            j += 2
            continue
        if pattern[j] == "[" and pattern[j + 1 : j + 2] == ":":  # POSIX class [:alpha:]
            close = pattern.find(":]", j + 2)
            if close >= 0:
                j = close + 2
                continue
        if pattern[j] == "]":
            return j + 1
        j += 1
    return len(pattern)


_GROUPS = [
    ("P<", None, None),  # (?P<name>...): portable
    (":", None, None),  # (?:...): portable
    ("=", "lookahead `(?=…)`", "match the text itself, or split the delimiter into literals"),
    ("!", "negative lookahead `(?!…)`", "list the allowed texts instead"),
    ("<=", "lookbehind `(?<=…)`", "include the preceding text in the delimiter"),
    ("<!", "negative lookbehind `(?<!…)`", "include the preceding text in the delimiter"),
    ("P=", "named backreference `(?P=…)`", "repeat the literal text instead"),
    ("P>", "recursion `(?P>…)`", "write the nesting out, or parse it with a content parser"),
    (">", "atomic group `(?>…)`", "use a plain group `(?:…)`"),
    ("R", "recursion `(?R)`", "write the nesting out, or parse it with a content parser"),
    ("&", "subroutine call `(?&…)`", "write the group out again"),
    ("|", "branch reset group `(?|…)`", "use separate named groups"),
    ("(", "conditional `(?(…)…)`", "use alternation"),
    ("#", "comment group `(?#…)`", "remove the comment"),
    ("<", "named group `(?<name>…)`", "write it `(?P<name>…)`"),
    ("'", "named group `(?'name'…)`", "write it `(?P<name>…)`"),
]


def _group(pattern: str, i: int, add) -> int:
    """Handle the group opening at `i`; return the index where its body starts."""
    if pattern[i + 1 : i + 2] != "?":
        return i + 1
    rest = pattern[i + 2 :]
    for prefix, construct, fix in _GROUPS:
        if rest.startswith(prefix):
            body = i + 2 + len(prefix)
            if prefix == "#":
                close = pattern.find(")", body)
                body = len(pattern) if close < 0 else close
            elif prefix in ("P<", "<", "'", "P=", "P>", "&"):
                closer = {"P<": ">", "<": ">", "'": "'", "P=": ")", "P>": ")", "&": ")"}[prefix]
                close = pattern.find(closer, body)
                body = len(pattern) if close < 0 else close + (0 if closer == ")" else 1)
            if construct is not None:
                add(i, min(body, len(pattern)), construct, fix)
            return body
    if rest[:1].isdigit() or rest[:1] in ("+", "-") and rest[1:2].isdigit():
        close = pattern.find(")", i)
        add(i, len(pattern) if close < 0 else close + 1, "subroutine call `(?1)`", "write the group out again")
        return len(pattern) if close < 0 else close
    # Inline flags: (?i) or (?i:...). JavaScript has no inline flags; write the cases out instead.
    end = i + 2
    while end < len(pattern) and pattern[end] not in ":)":
        end += 1
    add(i, min(end + 1, len(pattern)), f"inline flags `{pattern[i:end + 1]}`", "spell out the cases, e.g. [Tt]ool")
    return end + 1 if end < len(pattern) and pattern[end] == ":" else end


def _after_quantifier(pattern: str, j: int, start: int, add) -> int:
    """After a quantifier ending before `j`: a `+` makes it possessive (not portable), `?` lazy (fine)."""
    following = pattern[j : j + 1]
    if following == "+":
        add(start, j + 1, f"possessive quantifier `{pattern[start:j + 1]}`", f"use the greedy `{pattern[start:j]}`")
        return j + 1
    if following == "?":
        return j + 1
    return j


def string_offsets(json_text: str, start: int) -> list[int]:
    """For the JSON string literal whose opening quote is at `start`, the source offset of each
    decoded character (so a position in the pattern maps to a column in the editor)."""
    offsets: list[int] = []
    i = start + 1
    while i < len(json_text) and json_text[i] != '"':
        offsets.append(i)
        if json_text[i] == "\\":
            if json_text[i + 1 : i + 2] == "u":
                i += 6
                if json_text[i : i + 2] == "\\u" and 0xD800 <= int(json_text[i - 4 : i], 16) <= 0xDBFF:
                    i += 6  # a surrogate pair decodes to one character
                continue
            i += 2
            continue
        i += 1
    return offsets


def value_start(json_text: str, key_offset: int) -> int | None:
    """The offset of the value of the key whose opening quote is at `key_offset`."""
    try:
        _, end = json.decoder.scanstring(json_text, key_offset + 1)
    except (ValueError, IndexError):
        return None
    match = re.compile(r"\s*:\s*").match(json_text, end)
    return match.end() if match else None
