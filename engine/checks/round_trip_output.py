"""Round trip, output side: parse an output, append the parsed message to the conversation, render
again, and compare with prompt + output. When they agree, a model that sees its own turn rendered
back in the next request sees exactly what it wrote (and a KV cache stays valid).

The texts are compared hunk by hunk (a token-level diff), and each differing hunk is explained if it
can be: text after the model's turn ended (the template closes the turn its own way, or opens the
next one; a cut-off output gets its regions closed), whitespace only (a warning), or a region of a
field the chat template does not render back (a preset's documented difference, a field it never
reads, or reasoning it drops from earlier turns). Anything else fails, shown with context and visible
whitespace."""

from __future__ import annotations

import copy
import difflib
import json
import re
from dataclasses import dataclass

from transformers.utils.chat_parsing import parse_response

from ..diagnostics import line_col
from ..render import render
from ..trace import Segment, Trace
from ..cases import Case
from ..content_parts import as_parts, writes_parts
from ..text import first_difference, indent_error, short, show_difference
from .context import CheckContext, Sample
from .fitting import variant as fit_variant
from .round_trip import _longest_suffix_in
from .results import CheckResult, Location

NAME = "round_trip.output"
EXPECTED = "recording.expected"
# Diff tokens: a tag or special token (`<tool_call>`, `<|im_end|>`) is one token, so the diff never
# pairs the "<" of one delimiter with the "<" of another; then spaces, words, single punctuation.
_TOKEN = re.compile(r"<[^<>\s]{1,64}>|\s+|\w+|[^\w\s]")


def check_output_round_trip(ctx: CheckContext, sample: Sample) -> list[CheckResult]:
    """The output-side round trip for one sample, and (for recordings) whether it parses to the
    message the recording expects."""
    subject = sample.subject
    prompt_result = ctx.prompt_for(sample)
    if not prompt_result.ok:
        d = prompt_result.diagnostics[0]
        return [CheckResult(NAME, "fail", f"The case does not render: {d.message}", Location(d.source, d.line, d.column), subject)]
    prompt = prompt_result.prompt or ""
    try:
        message = parse_response(sample.output, ctx.template, prefix=prompt, tools=sample.case.tools)
    except Exception as e:  # noqa: BLE001 - the parser's message is the finding
        return [_does_not_parse(ctx, sample, prompt, e)]
    results = []
    if sample.expected is not None:
        results.append(_expected(ctx, sample, message))
    results.append(_round_trip(ctx, sample, prompt, message))
    return results


def _does_not_parse(ctx: CheckContext, sample: Sample, prompt: str, error: Exception) -> CheckResult:
    """The output does not parse: where it stopped (the character of the output, the field and the
    response template line that parses it) and why, as the run's own trace says it."""
    trace = Trace(ctx.template, prompt=prompt, tools=sample.case.tools, response_text=ctx.response_text)
    trace.feed(sample.output)
    trace.finalize()
    failure = next((d for d in trace.diagnostics if d.severity == "error" and d.source == "output"), None)
    if failure is None:  # the trace parsed it after all: transformers' own words
        message, hint = indent_error(f"{type(error).__name__}: {error}"), None
    else:
        message, hint = failure.message, failure.hint
    name = ctx.field_named_in(message) or ctx.field_named_in(str(error))
    details = f"The output does not parse: {message}" + (f"\n  Hint: {hint}" if hint else "") + ctx.anchor_hint(prompt)
    return CheckResult(NAME, "fail", details, ctx.field_location(name, "content"), sample.subject)


def _expected(ctx: CheckContext, sample: Sample, message: dict) -> CheckResult:
    if message == sample.expected:
        return CheckResult(EXPECTED, "pass", "The output parses to the recorded message.", None, sample.subject)
    lines = ["The output does not parse to the recorded message:"]
    first = None
    for key in sorted(set(message) | set(sample.expected or {})):
        want, got = (sample.expected or {}).get(key), message.get(key)
        if want != got:
            first = first or key
            lines.append(f"  `{key}`: expected {_json(want)}, parsed {_json(got)}")
    return CheckResult(EXPECTED, "fail", "\n".join(lines), ctx.field_location(first), sample.subject)


@dataclass
class Hunk:
    """A stretch where prompt + output ([a0, a1)) and the re-rendered text ([b0, b1)) differ, with
    why (None: unexplained), and whether the explanation is documented."""

    a0: int
    a1: int
    b0: int
    b1: int
    why: str | None = None
    kind: str = "unexplained"  # "end", "whitespace", "documented", "dropped", "unexplained"


def _round_trip(ctx: CheckContext, sample: Sample, prompt: str, message: dict) -> CheckResult:
    subject = sample.subject
    again, problem = _render_back(ctx, sample, message)
    if again is None:
        return CheckResult(NAME, "fail", f"Rendering the conversation with the parsed message appended failed: {problem.message}",
                           Location(problem.source, problem.line, problem.column), subject)  # fmt: skip
    expected = prompt + sample.output
    hunks = classify(ctx, sample, prompt, expected, again)
    note = ""
    if any(h.kind == "unexplained" for h in hunks) and sample.case.tools:
        # Tool-call arguments the parser typed by the tool's schema ("3" -> 3) come back typed: if the
        # round trip holds without typing, that is the only difference.
        try:
            untyped = parse_response(sample.output, ctx.template, prefix=prompt)
        except Exception:  # noqa: BLE001 - typing was not the difference then
            untyped = None
        again_untyped = _render_back(ctx, sample, untyped)[0] if untyped is not None else None
        if again_untyped is not None:
            retry = classify(ctx, sample, prompt, expected, again_untyped)
            if not any(h.kind == "unexplained" for h in retry):
                hunks, again = retry, again_untyped
                note = "\nTool-call arguments typed by the tool's schema (e.g. \"3\" → 3) come back typed; untyped, the round trip holds."
    explained = [f"  {h.why}" for h in hunks if h.kind != "unexplained" and h.why]
    bad = [h for h in hunks if h.kind in ("unexplained", "whitespace")]
    if not bad:
        kinds = {h.kind for h in hunks}
        status = "warn" if "dropped" in kinds else "pass"
        head = "Rendering the parsed message back gives prompt + output" + (":" if explained else ".")
        return CheckResult(NAME, status, "\n".join([head, *dict.fromkeys(explained)]) + note,
                           Location("chat_template") if status == "warn" else None, subject)  # fmt: skip
    first = next((h for h in hunks if h.kind == "unexplained"), bad[0])
    status = "fail" if first.kind == "unexplained" else "warn"
    what = "differs" if status == "fail" else "differs only in whitespace"
    picture = show_difference(expected, again, first.a0, ("prompt + output", "rendered again"))
    lines = [f"Rendering the parsed message back {what} from prompt + output, first at {_where(first.a0, prompt, expected)}:", picture]
    others = len([h for h in hunks if h.kind in ("unexplained", "whitespace")]) - 1
    if others > 0:
        lines.append(f"  ({others} more difference{'s' if others > 1 else ''} after this one)")
    if explained:
        lines += ["Explained differences:", *dict.fromkeys(explained)]
    lines.append(f"Parsed message: {short(json.dumps(message, ensure_ascii=False), 300)}")
    field = _fields_at(_segments(ctx, prompt, sample), first.a0 - len(prompt), first.a1 - len(prompt), sample.output) if first.a0 >= len(prompt) else set()
    location = ctx.field_location(sorted(field)[0]) if field else Location("chat_template")
    dropped = _dropped_by_chat_template(ctx, sample, message, expected, again, first, field)
    if dropped is not None:
        why, location = dropped
        lines.insert(1, why)
    return CheckResult(NAME, status, "\n".join(lines) + note, location, subject)


def _dropped_by_chat_template(ctx: CheckContext, sample: Sample, message: dict, expected: str, again: str, first: Hunk,
                              fields: set[str]) -> tuple[str, Location] | None:
    """When the parser read a field's text right and the chat template does not write it back (a
    template that drops content before a call), the cause is the chat template: which field, and the
    template line that writes the turn where the text went missing. None when the parse is the cause."""
    lost = expected[first.a0 : first.a1].strip()
    if not lost:
        return None
    for name in sorted(fields):
        value = message.get(name)
        if isinstance(value, str) and lost in value and lost not in again[first.b0 :]:
            line, column, written = _writer(ctx, sample, message, first.b0)
            at = f" (chat template line {line}" + (f", which writes {short(written)!r}" if written else "") + ")" if line else ""
            why = (f"  The chat template leaves out `{name}` when it writes this turn back{at}: the parser read "
                   f"{short(lost)!r} into `{name}`, and the conversation rendered with the parsed message does not "
                   f"have it. If the model writes `{name}` here, render it in that branch of the chat template; if "
                   "the template drops it on purpose, mark this result as intended.")  # fmt: skip
            return why, Location("chat_template", line, column)
    return None


def _writer(ctx: CheckContext, sample: Sample, message: dict, index: int) -> tuple[int | None, int | None, str]:
    """The chat template line (and column) that wrote character `index` of the conversation
    rendered with `message` appended (engine.provenance), and the text it wrote there."""
    case = sample.case
    history = case.messages[:-1] if case.continue_final_message else case.messages
    for appended in (message, fit_variant("ids").apply(Case("parsed", [*history, message]), None).messages[-1]):
        result = render(ctx.chat_template, copy.deepcopy([*history, appended]), case.tools, case.documents,
                        add_generation_prompt=False, template_kwargs={**ctx.template_kwargs, **case.template_kwargs},
                        special_tokens={**ctx.special_tokens, **case.special_tokens}, explain=True)
        pieces = result.explanation.pieces if result.ok and result.explanation is not None else None
        if pieces:
            piece = next((p for p in pieces if p.start <= index < p.end), None) or next(
                (p for p in reversed(pieces) if p.start < index), None)
            if piece is not None:
                return piece.line, piece.column, (result.prompt or "")[piece.start : piece.end]
        if result.ok:
            break
    return None, None, ""


def _render_back(ctx: CheckContext, sample: Sample, message: dict):
    case = sample.case
    # With continue_final_message the last message was the prefill; the parsed message replaces it.
    history = case.messages[:-1] if case.continue_final_message else case.messages
    if writes_parts(history):  # the reply goes back as the conversation writes its assistant turns
        message = as_parts(message)
    result = ctx.render(case, [*history, message], add_generation_prompt=False, continue_final_message=False)
    if not result.ok and message.get("tool_calls") and not all(isinstance(c, dict) and c.get("id") for c in message["tool_calls"]):
        # An OpenAI-compatible server gives every parsed tool call an id before the message goes back
        # into a conversation; a template that requires ids (Mistral's) must be tried as it will be used.
        with_ids = fit_variant("ids").apply(Case("parsed", [*history, message]), None).messages[-1]
        again = ctx.render(case, [*history, with_ids], add_generation_prompt=False, continue_final_message=False)
        if again.ok:
            return again.prompt, None
    return (result.prompt, None) if result.ok else (None, result.diagnostics[0])


def classify(ctx: CheckContext, sample: Sample, prompt: str, expected: str, again: str) -> list[Hunk]:
    """The differing hunks between prompt + output and the re-rendered text, each explained if it can
    be. The conversation before the turn is diffed token by token; the turn itself region by region
    (both sides traced with the response template), so a hunk never pairs the delimiter of one region
    with that of another and knows which fields it touches."""
    if expected == again:
        return []
    # Where the re-rendered turn starts: after the prompt, or, when the template rewrote earlier
    # turns, after the end of the prompt as it still appears.
    if again.startswith(prompt):
        turn_start = len(prompt)
    else:
        overlap = _longest_suffix_in(prompt, again)
        turn_start = again.rfind(prompt[-overlap:]) + overlap if overlap else first_difference(prompt, again) or 0
    hunks = [h for h in diff_hunks(prompt, again[:turn_start])]
    if hunks:
        turns = _turn_segments(ctx, prompt, sample.case.tools)
        for hunk in hunks:
            if not prompt[hunk.a0 : hunk.a1].strip() and not again[hunk.b0 : hunk.b1].strip():
                hunk.kind = "whitespace"
            else:
                _explain_earlier(ctx, hunk, _fields_at(turns, hunk.a0, hunk.a1, prompt))
    written = _units(expected, [_shift(s, len(prompt)) for s in _segments(ctx, prompt, sample)])
    rendered = _units(again, [_shift(s, turn_start) for s in _trace_segments(ctx, again[:turn_start], again[turn_start:], sample.case.tools)])
    keys_a = [(s.kind, s.field, expected[s.start : s.end]) for s in written]
    keys_b = [(s.kind, s.field, again[s.start : s.end]) for s in rendered]
    markers = end_markers(ctx)
    dropped = ctx.dropped_fields()
    matcher = difflib.SequenceMatcher(None, keys_a, keys_b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        a0 = written[i1].start if i1 < len(written) else len(expected)
        a1 = written[i2 - 1].end if i2 > i1 else a0
        b0 = rendered[j1].start if j1 < len(rendered) else len(again)
        b1 = rendered[j2 - 1].end if j2 > j1 else b0
        hunk = Hunk(a0, a1, b0, b1)
        old, new = expected[a0:a1], again[b0:b1]
        # The fields the hunk is about: regions with more than whitespace in it, leaving out the end
        # marker the template closes a turn with (a cut-off output has none of its own).
        touched = [(s, expected) for s in written[i1:i2]] + [(s, again) for s in rendered[j1:j2]]
        fields = {s.field for s, text in touched if s.field is not None and s.kind not in ("discarded", "space")
                  and text[s.start : s.end].strip() not in ("", *markers)}
        if a1 == len(expected) and b1 == len(again) and (why := _end_of_turn(expected[:a0], old, new, sample.output, markers)):
            hunk.kind, hunk.why = "end", why
        elif fields and fields <= set(dropped):
            hunk.kind = "documented" if all(dropped[f].startswith("documented") for f in fields) else "dropped"
            hunk.why = "; ".join(f"`{f}` is not rendered back as written ({dropped[f]})" for f in sorted(fields))
        elif not old.strip() and not new.strip():
            hunk.kind = "whitespace"
        if hunk.kind in ("unexplained", "whitespace") and tag == "replace":
            # Point at the first character that differs, not at the start of the region.
            offset = first_difference(old, new) or 0
            hunk.a0, hunk.b0 = a0 + offset, b0 + offset
        hunks.append(hunk)
    return hunks


def _explain_earlier(ctx: CheckContext, hunk: Hunk, fields: set[str]) -> None:
    """A hunk in the conversation before the turn: the template renders an earlier turn differently
    now that another assistant turn follows (gpt-oss drops earlier reasoning, say)."""
    if fields:
        hunk.kind = "documented" if all(f in ctx.documented for f in fields) else "dropped"
        hunk.why = "; ".join(
            f"the chat template renders an earlier turn's `{f}` differently once a later assistant turn "
            f"follows{' (documented: ' + ctx.documented[f] + ')' if f in ctx.documented else ''}"
            for f in sorted(fields)
        )


def _units(text: str, segments: list[Segment]) -> list[Segment]:
    """Segments as diff units, with the whitespace at either end of a region's text split off as
    its own "space" unit: the text parser strips it, and the template writes its own."""
    out = []
    for s in segments:
        body = text[s.start : s.end]
        core = body.strip()
        if s.kind != "body" or not core or core == body:
            out.append(s)
            continue
        lead = s.start + (len(body) - len(body.lstrip()))
        trail = s.start + len(body.rstrip())
        if lead > s.start:
            out.append(Segment(s.start, lead, "space", s.field))  # type: ignore[arg-type]
        out.append(Segment(lead, trail, "body", s.field))
        if trail < s.end:
            out.append(Segment(trail, s.end, "space", s.field))  # type: ignore[arg-type]
    return out


def _shift(segment: Segment, offset: int) -> Segment:
    return Segment(segment.start + offset, segment.end + offset, segment.kind, segment.field)


def diff_hunks(a: str, b: str) -> list[Hunk]:
    """Differing stretches of `a` and `b`, from a diff over words, spaces and punctuation (the
    common prefix and suffix are cut off first, so long equal texts cost little)."""
    if a == b:
        return []
    prefix = 0
    limit = min(len(a), len(b))
    while prefix < limit and a[prefix] == b[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and a[len(a) - 1 - suffix] == b[len(b) - 1 - suffix]:
        suffix += 1
    # Back up to the start of the line (and the suffix to its end), so the diff sees whole
    # delimiters: a shared "<" must not tie "<think>" to "<|im_end|>".
    prefix = a.rfind("\n", 0, prefix) + 1
    line_end = a.find("\n", len(a) - suffix)
    suffix = max(0, len(a) - line_end - 1) if line_end >= 0 else 0
    suffix = min(suffix, len(b) - prefix, len(a) - prefix)
    a_mid, b_mid = a[prefix : len(a) - suffix], b[prefix : len(b) - suffix]
    a_tokens, b_tokens = _TOKEN.findall(a_mid), _TOKEN.findall(b_mid)
    a_starts, b_starts = _starts(a_tokens, prefix), _starts(b_tokens, prefix)
    hunks = []
    matcher = difflib.SequenceMatcher(None, a_tokens, b_tokens, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            hunks.append(Hunk(a_starts[i1], a_starts[i2], b_starts[j1], b_starts[j2]))
    return hunks


def _starts(tokens: list[str], offset: int) -> list[int]:
    starts = [offset]
    for token in tokens:
        starts.append(starts[-1] + len(token))
    return starts


def end_markers(ctx: CheckContext) -> list[str]:
    """Text that ends a turn: the stop tokens, the eos token, and the close delimiter of the implicit
    field (which is, by construction, where the model's message ends)."""
    markers = ctx.turn_end_tokens()
    implicit = ctx.template.implicit
    if implicit is not None:
        markers += ctx.template.fields[implicit].close_literals or []
    return [m for m in dict.fromkeys(markers) if m]


def _end_of_turn(before: str, old: str, new: str, output: str, markers: list[str]) -> str | None:
    """Why a difference at the very end is not one (None if it is). The model stops at its stop token,
    which may be decoded or not; the template ends the turn its own way and may open the next one."""
    if before.rstrip().endswith(tuple(markers)) and not old.strip():
        return f"after the turn's end the chat template writes {short(new)!r}, which the model does not generate"
    if (not old.strip() or old.strip() in markers) and (not new.strip() or new.strip().startswith(tuple(markers))):
        return f"the turn ends with {short(new)!r} in the template, {short(old)!r} in the output"
    if not old and not any(m in output for m in markers):
        return f"the output stops without a stop token (cut off); the chat template closes it with {short(new)!r}"
    return None


def _segments(ctx: CheckContext, prompt: str, sample: Sample) -> list[Segment]:
    return _trace_segments(ctx, prompt, sample.output, sample.case.tools)


def _trace_segments(ctx: CheckContext, prompt: str, text: str, tools: list | None) -> list[Segment]:
    trace = Trace(ctx.template, prompt=prompt, tools=tools)
    trace.feed(text)
    trace.finalize()
    return trace.segments()


def _turn_segments(ctx: CheckContext, prompt: str, tools: list | None) -> list[Segment]:
    """Segments of every earlier assistant turn in the prompt (the text from each start anchor to the
    next), in prompt coordinates: which field each part of the conversation so far belongs to."""
    anchors = list(ctx.template.start_anchor_re.finditer(prompt))
    out = []
    for k, anchor in enumerate(anchors):
        end = anchors[k + 1].start() if k + 1 < len(anchors) else len(prompt)
        if end > anchor.end():
            for seg in _trace_segments(ctx, prompt[: anchor.end()], prompt[anchor.end() : end], tools):
                out.append(Segment(seg.start + anchor.end(), seg.end + anchor.end(), seg.kind, seg.field))
    return out


def _fields_at(segments: list[Segment], start: int, end: int, text: str) -> set[str]:
    """Fields whose regions overlap [start, end) of `text` with more than whitespace (a hunk that
    also takes the newline after `</think>` is about the reasoning, not the content after it). For
    an insertion, the regions on either side."""
    if end <= start:
        start, end = start - 1, start + 1
    return {
        s.field for s in segments
        if s.field is not None and s.kind != "discarded" and s.start < end and start < s.end
        and text[max(s.start, start) : min(s.end, end)].strip()
    }  # fmt: skip


def _where(index: int, prompt: str, expected: str) -> str:
    if index < len(prompt):
        line, column = line_col(prompt, index)
        return f"prompt line {line}, column {column} (appending the message changed the earlier conversation)"
    line, column = line_col(expected[len(prompt) :], index - len(prompt))
    return f"output line {line}, column {column}"


def _json(value: object) -> str:
    return "(missing)" if value is None else short(json.dumps(value, ensure_ascii=False), 200)
