"""Streaming equals one-shot: however the output arrives in chunks, the streamed message and events
must be what parsing it in one piece gives. Streaming is the playground's own `Trace` (what the
playground shows, over transformers' `ResponseParser`); one-shot is transformers' `parse_response`.

Chunkings tried: 1-character chunks, the tokenizer's tokens (when one is loaded), a few fixed sizes,
and N seeded random splits. Half of each random split's cuts land in or next to a delimiter (where
streaming bugs live: a delimiter split across chunks), the rest anywhere. On a difference, the failing
chunking is shrunk to the fewest cuts that still show it."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from transformers.utils.chat_parsing import ResponseParser, parse_response

from ..diagnostics import line_col
from ..regex_bounds import RegexTimeout
from ..trace import Trace
from ..text import short, visible
from .context import CheckContext, Sample
from .overlap import overlapping_literals
from .results import CheckResult

NAME = "streaming"
FIXED_SIZES = (2, 3, 4, 5, 7, 8, 16, 64)
# How many cuts a random split makes: mostly few (a streaming bug needs one or two cuts in the right
# place, and half the cuts are aimed at delimiters), sometimes many.
RANDOM_CUT_COUNTS = (1, 2, 3, 4, 6, 8, 12, 16, 32, 64)
# Traces the shrinking may run: enough to reach a minimal chunking from 1-character chunks of a
# 10 KB output (binary splitting), bounded so a report never takes long.
SHRINK_BUDGET = 400


@dataclass
class Outcome:
    """What parsing gave: the message, the events in comparable form, and whether it failed."""

    message: dict | None
    events: list[tuple]
    error: str | None

    def same_as(self, other: Outcome) -> bool:
        if (self.error is None) != (other.error is None):
            return False
        if self.error is not None:
            return True  # both failed: what the message was when parsing stopped is not comparable
        return self.message == other.message and self.events == other.events


def normalise_events(events: list[dict]) -> list[tuple]:
    """Events in a form that does not depend on chunking. Streaming legitimately splits a region's
    text into different `region_chunk` events depending on where chunks end, so the chunks of one
    region are joined; the open/close sequence and close values must match exactly."""
    out: list[tuple] = []
    for event in events:
        kind, name = event.get("type"), event.get("field")
        if kind == "region_chunk":
            if out and out[-1][0] == "text" and out[-1][1] == name:
                out[-1] = ("text", name, out[-1][2] + event["text"])
            else:
                out.append(("text", name, event["text"]))
        elif kind == "region_close":
            out.append(("close", name, json.dumps(event.get("value"), sort_keys=True, default=str)))
        else:
            out.append((kind, name))
    return out


def one_shot(ctx: CheckContext, sample: Sample, prompt: str) -> Outcome:
    """transformers parsing the output in one piece: `parse_response` for the message, and a parser
    fed the whole output once for the events (parse_response does not return them)."""
    tools = sample.case.tools
    try:
        message = parse_response(sample.output, ctx.template, prefix=prompt, tools=tools)
        parser = ResponseParser(ctx.template, prefix=prompt, tools=tools)
        events = [*parser.initial_events, *parser.feed(sample.output)]
        events += parser.finalize()[1]
    except RegexTimeout:
        raise  # the check stops and says so (not a parse error to compare)
    except Exception as e:  # noqa: BLE001
        return Outcome(None, [], f"{type(e).__name__}: {e}")
    return Outcome(message, normalise_events(events), None)


def streamed(ctx: CheckContext, sample: Sample, prompt: str, cuts: list[int]) -> Outcome:
    """The playground's trace fed the output cut at `cuts`."""
    trace = Trace(ctx.template, prompt=prompt, tools=sample.case.tools)
    for chunk in split(sample.output, cuts):
        trace.feed(chunk)
    trace.finalize()
    if trace.regex_timeout is not None:
        raise trace.regex_timeout
    errors = [d.message for d in trace.diagnostics if d.severity == "error"]
    return Outcome(trace.message, normalise_events([*trace.initial_events, *trace.events]), errors[0] if errors else None)


def split(text: str, cuts: list[int]) -> list[str]:
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:]) if b > a]


def chunkings(ctx: CheckContext, output: str, hot: list[int]) -> Iterator[tuple[str, list[int]]]:
    """(label, cut positions) for every chunking to try, cheapest to describe first."""
    n = len(output)
    if n < 2:
        return
    yield "1-character chunks", list(range(1, n))
    tokens = token_cuts(ctx.tokenizer, output) if ctx.tokenizer is not None else []
    if tokens:
        yield "token chunks", tokens
    for size in FIXED_SIZES:
        if size < n:
            yield f"{size}-character chunks", list(range(size, n, size))
    rng = random.Random(ctx.seed)
    for i in range(ctx.random_splits):
        count = min(n - 1, rng.choice(RANDOM_CUT_COUNTS))
        cuts = {rng.randrange(1, n) for _ in range(count - count // 2)}
        if hot:
            cuts |= {rng.choice(hot) for _ in range(count // 2)}
        yield f"random split {i + 1} of {ctx.random_splits} (seed {ctx.seed})", sorted(cuts)


def token_cuts(tokenizer: Any, text: str) -> list[int]:
    """Where the tokenizer's tokens end (a `tokenizers.Tokenizer` or a transformers tokenizer)."""
    try:
        from tokenizers import Tokenizer

        if isinstance(tokenizer, Tokenizer):
            offsets = tokenizer.encode(text, add_special_tokens=False).offsets
        else:
            offsets = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    except Exception:  # noqa: BLE001 - a tokenizer without offsets: fall back to no token chunking
        return []
    return sorted({end for _, end in offsets if 0 < end < len(text)})


def delimiter_positions(ctx: CheckContext, sample: Sample, prompt: str) -> list[int]:
    """Cut positions in and around every delimiter of the one-shot trace."""
    trace = Trace(ctx.template, prompt=prompt, tools=sample.case.tools)
    trace.feed(sample.output)
    trace.finalize()
    n = len(sample.output)
    hot = set()
    for segment in trace.segments():
        if segment.kind in ("open", "close"):
            hot.update(range(max(1, segment.start - 1), min(n - 1, segment.end + 1) + 1))
    return sorted(hot)


def shrink(differs: Any, cuts: list[int], budget: int = SHRINK_BUDGET) -> list[int]:
    """The fewest cuts (a subset of `cuts`) for which `differs(cuts)` still holds: delta debugging,
    removing big groups of cuts first, then smaller ones, until no single cut can go."""
    cuts = list(cuts)
    groups = 2
    while len(cuts) >= 1 and budget > 0:
        size = max(1, len(cuts) // groups)
        reduced = False
        for start in range(0, len(cuts), size):
            candidate = cuts[:start] + cuts[start + size :]
            budget -= 1
            if differs(candidate):
                cuts, groups, reduced = candidate, max(groups - 1, 2), True
                break
            if budget <= 0:
                break
        if not reduced:
            if size == 1:
                break
            groups = min(groups * 2, len(cuts))
    return cuts


def check_streaming(ctx: CheckContext, sample: Sample) -> CheckResult:
    """Stream one sample in every chunking; pass, or fail with the smallest chunking that differs."""
    prompt_result = ctx.prompt_for(sample)
    if not prompt_result.ok:
        d = prompt_result.diagnostics[0]
        return CheckResult(NAME, "fail", f"The case does not render: {d.message}", None, sample.subject)
    prompt = prompt_result.prompt or ""
    reference = one_shot(ctx, sample, prompt)
    hot = delimiter_positions(ctx, sample, prompt) if reference.error is None else []
    tried = 0
    for label, cuts in chunkings(ctx, sample.output, hot):
        tried += 1
        outcome = streamed(ctx, sample, prompt, cuts)
        if outcome.same_as(reference):
            continue
        smallest = shrink(lambda c: not streamed(ctx, sample, prompt, c).same_as(reference), cuts)
        return _failure(ctx, sample, prompt, reference, smallest, label, len(cuts))
    note = f" (the output does not parse: {reference.error}; streaming fails the same way)" if reference.error else ""
    if not tried:
        return CheckResult(NAME, "pass", f"The output is shorter than 2 characters: nothing to split{note}.", None, sample.subject)
    sizes = ", ".join(str(size) for size in FIXED_SIZES if size < len(sample.output))
    kinds = ["1-character chunks"] + (["token chunks"] if ctx.tokenizer is not None and token_cuts(ctx.tokenizer, sample.output) else [])
    kinds += [f"chunks of {sizes} characters"] if sizes else []
    kinds.append(f"{ctx.random_splits} random splits (seed {ctx.seed})")
    return CheckResult(
        NAME, "pass",
        f"{tried} chunkings give the same message and events as one-shot parsing{note}: {', '.join(kinds)}.",
        None, sample.subject,
    )  # fmt: skip


def _failure(ctx: CheckContext, sample: Sample, prompt: str, reference: Outcome, cuts: list[int], label: str, original: int) -> CheckResult:
    outcome = streamed(ctx, sample, prompt, cuts)
    chunks = split(sample.output, cuts)
    lines = [
        f"Streaming differs from one-shot parsing when the output is fed in {len(chunks)} chunk(s) "
        f"(found with {label}, shrunk from {original} cuts to {len(cuts)}):",
    ]
    if len(chunks) <= 4:
        lines.append("  chunks: " + " | ".join(repr(short(c, 60)) for c in chunks))
    for cut in cuts[:5]:
        line, column = line_col(sample.output, cut)
        around = f"{visible(sample.output[max(0, cut - 20):cut])}▕{visible(sample.output[cut:cut + 20])}"
        lines.append(f"  cut at output line {line}, column {column}: …{around}…")
    if len(cuts) > 5:
        lines.append(f"  … and {len(cuts) - 5} more cuts")
    difference, field = describe(reference, outcome)
    lines.append(f"  {difference}")
    for overlap in overlapping_literals(ctx.template):  # the known upstream cause: say so
        lines.append(f"  Why: {overlap.explain()}")
        field = field or overlap.field
    return CheckResult(NAME, "fail", "\n".join(lines), ctx.field_location(field), sample.subject)


def describe(reference: Outcome, outcome: Outcome) -> tuple[str, str | None]:
    """The first difference between the one-shot and the streamed outcome, and the field it is in."""
    if (reference.error is None) != (outcome.error is None):
        if outcome.error is not None:
            return f"streaming fails ({outcome.error}) where one-shot parsing succeeds", None
        return f"streaming succeeds where one-shot parsing fails ({reference.error})", None
    a, b = reference.message or {}, outcome.message or {}
    for key in sorted(set(a) | set(b)):
        if a.get(key) != b.get(key):
            return f"message field `{key}`: one-shot {_json(a.get(key))}, streamed {_json(b.get(key))}", key
    for i, (x, y) in enumerate(zip(reference.events, outcome.events)):
        if x != y:
            return f"event {i}: one-shot {_event(x)}, streamed {_event(y)}", x[1]
    longer = "one-shot" if len(reference.events) > len(outcome.events) else "streaming"
    return f"{longer} has more events ({len(reference.events)} vs {len(outcome.events)})", None


def _event(event: tuple) -> str:
    if event[0] == "text":
        return f"text of `{event[1]}` {short(event[2], 60)!r}"
    if event[0] == "close":
        return f"close `{event[1]}` with {short(event[2], 60)}"
    return f"{event[0]} `{event[1]}`"


def _json(value: Any) -> str:
    return "(missing)" if value is None else short(json.dumps(value, ensure_ascii=False), 120)
