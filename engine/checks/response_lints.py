"""Response template lints: regexes that only work in Python, a reasoning field under another name,
text that no region claims, a start anchor the prompt never contains, named groups no transform uses,
required fields the recordings never have, a transform placeholder some matches lack and arguments
read as text only (`robustness_lints`)."""

from __future__ import annotations

from typing import Any

from transformers.utils.chat_parsing import parse_response

from ..diagnostics import line_col
from ..regex_portability import scan, spec_patterns, string_offsets, value_start
from ..response_spec import key_offsets
from ..trace import Trace
from ..transformers_compat import TRANSFORM_PLACEHOLDER
from .context import CheckContext
from .overlap import overlapping_literals
from .results import CheckResult, Location
from .robustness_lints import optional_placeholders, untyped_values

# Names people give the reasoning field; the ecosystem (OpenAI-compatible servers, chat templates)
# expects `reasoning_content`.
REASONING_NAMES = frozenset({"reasoning", "thinking", "think", "thought", "thoughts", "reasoning_text", "analysis", "cot"})
REASONING_WORDS = ("think", "reason", "analysis")


def check_response_lints(ctx: CheckContext) -> list[CheckResult]:
    results: list[CheckResult] = []
    for name, lint, ok in (
        ("response_lint.regex_portability", regex_portability, "Every regex uses only portable constructs."),
        ("response_lint.reasoning_field_name", reasoning_name, "Reasoning, if any, goes to `reasoning_content`."),
        ("response_lint.no_implicit_field", no_implicit_field, "A field without `open` collects the text outside other regions."),
        ("response_lint.start_anchor", start_anchor, "The start anchor occurs in every rendered prompt."),
        ("response_lint.unused_group", unused_groups, "Every named group is used by a transform."),
        ("response_lint.required_field", required_fields, "Every required field appears in the recordings."),
        ("response_lint.overlapping_literals", overlapping, "No field's literals end inside one another."),
        ("response_lint.optional_placeholder", optional_placeholders, "Every transform placeholder is in every match."),
        ("response_lint.untyped_values", untyped_values, "No field reads tool-call arguments as text only."),
    ):
        found = lint(ctx)
        for result in found:
            result.name = name
        results += found or [CheckResult(name, "pass", ok)]
    return results


def regex_portability(ctx: CheckContext) -> list[CheckResult]:
    offsets = key_offsets(ctx.response_text)
    out = []
    for path, pattern in spec_patterns(ctx.spec):
        for finding in scan(pattern):
            line, column = _pattern_position(ctx.response_text, offsets.get(path), finding.index)
            where = "/".join(str(p) for p in path)
            out.append(CheckResult(
                "", "fail" if "backreference" in finding.construct or "recursion" in finding.construct else "warn",
                f"{where}: {finding.construct} only works in Python's regex engine (not in JavaScript, RE2, Rust "
                f"or C++): {finding.fix}. Pattern: {pattern}",
                Location("response_template", line, column),
            ))  # fmt: skip
    return out


def _pattern_position(text: str, key_offset: int | None, index: int) -> tuple[int | None, int | None]:
    """Line and column in the JSON text of character `index` of the pattern stored under a key."""
    if key_offset is None:
        return None, None
    start = value_start(text, key_offset)
    if start is None or not text.startswith('"', start):
        return line_col(text, key_offset)
    offsets = string_offsets(text, start)
    return line_col(text, offsets[index] if index < len(offsets) else start)


def reasoning_name(ctx: CheckContext) -> list[CheckResult]:
    out = []
    for name, field in ctx.spec.get("fields", {}).items():
        if name == "reasoning_content":
            continue
        delimiters = " ".join(str(field.get(k, "")) for k in ("open", "open_pattern")).lower()
        by_name = name.lower() in REASONING_NAMES
        by_delimiter = any(word in delimiters for word in REASONING_WORDS)
        if by_name or by_delimiter:
            why = f"is named `{name}`" if by_name else f"opens with {field.get('open', field.get('open_pattern'))!r}"
            out.append(CheckResult(
                "", "warn",
                f"Field `{name}` looks like the model's reasoning (it {why}), but is not named `reasoning_content`, "
                "the name chat templates, servers and clients expect. Rename the field to `reasoning_content`.",
                ctx.field_location(name),
            ))  # fmt: skip
    return out


def no_implicit_field(ctx: CheckContext) -> list[CheckResult]:
    if ctx.template.implicit is not None:
        return []
    dropped = []
    for sample in ctx.samples:
        prompt = ctx.prompt_for(sample).prompt
        if prompt is None:
            continue
        trace = Trace(ctx.template, prompt=prompt, tools=sample.case.tools)
        trace.feed(sample.output)
        trace.finalize()
        text = "".join(sample.output[s.start : s.end] for s in trace.segments() if s.kind == "discarded")
        if text.strip():
            dropped.append(f"{sample.subject} loses {len(text.strip())} characters")
    evidence = f" In the outputs checked: {'; '.join(dropped)}." if dropped else ""
    return [CheckResult(
        "", "warn",
        "Every field has an `open` delimiter, so text outside all regions is dropped without a trace (a model "
        "that answers without the expected markup gives an empty message). Make the main field (usually "
        f"`content`) implicit by removing its `open`.{evidence}",
        ctx.key_location("fields"),
    )]  # fmt: skip


def start_anchor(ctx: CheckContext) -> list[CheckResult]:
    key = "start_anchor_pattern" if "start_anchor_pattern" in ctx.spec else "start_anchor"
    anchor = ctx.spec.get(key)
    out = []
    for case in ctx.cases:
        prompt = ctx.render(case).prompt
        if prompt is not None and ctx.template.start_anchor_re.search(prompt) is None:
            out.append(CheckResult(
                "", "fail",
                f"The start anchor {anchor!r} never occurs in the prompt rendered for case {case.name!r}, so the "
                "parser reads the whole prompt as part of the reply. Set it to the text the chat template writes "
                "right before the assistant's turn.",
                ctx.key_location(key), f"case {case.name!r}",
            ))  # fmt: skip
    return out


def unused_groups(ctx: CheckContext) -> list[CheckResult]:
    out = []
    for name, field in ctx.template.fields.items():
        if field.transform is not None:
            used = _placeholders(field.transform)
            for key, compiled in (("open_pattern", field.open_re), ("close_pattern", field.close_re)):
                if compiled is None or key not in ctx.spec["fields"][name]:
                    continue
                for group in sorted(set(compiled.groupindex) - used):
                    out.append(CheckResult(
                        "", "warn",
                        f"Field `{name}`: {key} captures `{group}`, but the transform never uses `{{{group}}}`: the "
                        f"captured text is dropped. Use it in the transform or make it a plain group `(?:…)`.",
                        ctx.field_location(name, key),
                    ))  # fmt: skip
        args = field.content_args if isinstance(field.content_args, dict) else {}
        pattern = args.get("tag_pattern") if field.content == "xml-inline" else None
        if isinstance(pattern, str):
            try:
                import regex

                groups = set(regex.compile(pattern).groupindex)
            except Exception:  # noqa: BLE001 - an invalid pattern is a load diagnostic already
                groups = set()
            for group in sorted(groups - {"key", "value"}):
                out.append(CheckResult(
                    "", "warn",
                    f"Field `{name}`: tag_pattern captures `{group}`, but xml-inline only uses `key` and `value`.",
                    ctx.field_location(name, "content_args"),
                ))  # fmt: skip
    return out


def _placeholders(transform: Any) -> set[str]:
    """Root names of the `{name}` / `{name.key}` placeholders in a transform."""
    if isinstance(transform, dict):
        return set().union(*(_placeholders(v) for v in transform.values())) if transform else set()
    if isinstance(transform, list):
        return set().union(*(_placeholders(v) for v in transform)) if transform else set()
    if isinstance(transform, str) and (match := TRANSFORM_PLACEHOLDER.fullmatch(transform)):
        return {match.group(1).split(".")[0]}
    return set()


def overlapping(ctx: CheckContext) -> list[CheckResult]:
    """One field's literals that make streaming depend on chunking (see `overlap`)."""
    return [CheckResult("", "warn", o.explain(), ctx.field_location(o.field, o.key)) for o in overlapping_literals(ctx.template)]


def required_fields(ctx: CheckContext) -> list[CheckResult]:
    required = [n for n, f in ctx.template.fields.items() if not f.optional]
    recordings = [s for s in ctx.samples if s.origin in ("recording", "run")]
    if not required or not recordings:
        return []
    messages = []
    for sample in recordings:
        if sample.expected is not None:
            messages.append((sample, sample.expected))
            continue
        prompt = ctx.prompt_for(sample).prompt or ""
        relaxed = {**ctx.spec, "fields": {n: {**f, "optional": True} for n, f in ctx.spec["fields"].items()}}
        try:
            messages.append((sample, parse_response(sample.output, relaxed, prefix=prompt, tools=sample.case.tools)))
        except Exception:  # noqa: BLE001 - an output that does not parse is the round trip's finding
            continue
    out = []
    for name in required:
        missing = [s.subject for s, message in messages if name not in message]
        if not missing:
            continue
        every = len(missing) == len(messages)
        out.append(CheckResult(
            "", "fail" if every else "warn",
            f"Field `{name}` is \"optional\": false, but {'no recording has it' if every else 'these recordings lack it: ' + ', '.join(missing)}"
            f"; parsing {'every' if every else 'such an'} output raises. Set \"optional\": true unless every reply must have it.",
            ctx.field_location(name, "optional"),
        ))  # fmt: skip
    return out
