"""Lints for what real outputs break, read off the response template itself (the robustness check
finds the same by trying outputs; these say it before any output is tried):

- `response_lint.optional_placeholder`: a transform names a group of an open or close pattern that
  takes no part in some matches (inside `(…)?`, `(…)*` or one branch of `a|b`): an output without
  it fails the whole parse (transformers: "transform placeholder … is not defined");
- `response_lint.untyped_values`: tool-call arguments read as text (`xml-inline` without a value
  parser): numbers, booleans and objects come back as strings unless the tools are passed."""

from __future__ import annotations

import re
from typing import Any

try:  # the standard library's parser of Python regexes: the groups and what encloses them
    from re import _parser as sre_parse  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python < 3.11
    import sre_parse  # type: ignore[no-redef]

from ..transformers_compat import TRANSFORM_PLACEHOLDER
from .context import CheckContext
from .results import CheckResult


def optional_placeholders(ctx: CheckContext) -> list[CheckResult]:
    out = []
    for name, spec_field in (ctx.spec.get("fields") or {}).items():
        names = _placeholders(spec_field.get("transform"))
        for key in ("open_pattern", "close_pattern"):
            pattern = spec_field.get(key)
            if not isinstance(pattern, str):
                continue
            for group in sorted(names & optional_groups(pattern)):
                out.append(CheckResult(
                    "", "warn",
                    f"Field `{name}`: the transform names `{{{group}}}`, and the {key}'s group `{group}` takes no part in "
                    "some matches: an output without it fails the whole parse (a placeholder that is not defined is an "
                    "error, not an absent key).",
                    ctx.field_location(name, key),
                ))  # fmt: skip
                out[-1].details += (" Make the group take part in every match, or, when the model writes the text in one "
                                    "version and not another, keep one template per spelling (docs/spec-limits.md#transform-fallback).")  # fmt: skip
    return out


def untyped_values(ctx: CheckContext) -> list[CheckResult]:
    out = []
    for name, spec_field in (ctx.spec.get("fields") or {}).items():
        args = spec_field.get("content_args") or {}
        if spec_field.get("content") == "xml-inline" and "value_parser" not in args and "value_parser_by" not in args:
            out.append(CheckResult(
                "", "info",
                f"Field `{name}` reads every argument as text (`xml-inline` without a value parser): `<parameter=count>2` "
                "gives the string \"2\" unless the tools are passed to parse_response (their JSON Schemas type each "
                "argument, as transformers serve passes them). Where no tools are at hand, a value parser reads JSON "
                'values: "value_parser": {"name": "json", "args": {"allow_non_json": true}} (a string argument that looks '
                "like a number then becomes one).",
                ctx.field_location(name, "content_args" if "content_args" in spec_field else None),
            ))  # fmt: skip
    return out


def optional_groups(pattern: str) -> set[str]:
    """Named groups of `pattern` that may take no part in a match."""
    try:
        parsed = sre_parse.parse(pattern)
    except (re.error, RecursionError, OverflowError):
        return set()
    names = {index: name for name, index in parsed.state.groupdict.items()}
    found: set[str] = set()
    _walk(parsed, False, names, found)
    return found


def _walk(items: Any, optional: bool, names: dict[int, str], found: set[str]) -> None:
    for op, value in items:
        if op is sre_parse.SUBPATTERN:
            group, _, _, body = value
            if group in names and optional:
                found.add(names[group])
            _walk(body, optional, names, found)
        elif op in (sre_parse.MAX_REPEAT, sre_parse.MIN_REPEAT, getattr(sre_parse, "POSSESSIVE_REPEAT", None)):
            low, _, body = value
            _walk(body, optional or low == 0, names, found)
        elif op is sre_parse.BRANCH:
            for branch in value[1]:
                _walk(branch, True, names, found)
        elif op in (sre_parse.ASSERT, sre_parse.ASSERT_NOT):
            _walk(value[1], optional, names, found)


def _placeholders(transform: Any) -> set[str]:
    if isinstance(transform, dict):
        return {n for v in transform.values() for n in _placeholders(v)}
    if isinstance(transform, list):
        return {n for v in transform for n in _placeholders(v)}
    if isinstance(transform, str) and (match := TRANSFORM_PLACEHOLDER.fullmatch(transform)):
        return {match.group(1).split(".")[0]}
    return set()
