"""Round trip, message side: does the response template parse back what the chat template wrote?

For each assistant message of each case, the chat template renders the conversation up to and
including that message; the assistant turn it wrote (what the model would have generated there) is
parsed with the response template and compared with the original message field by field. Fields the
chat template drops on purpose (a preset's documented differences, or fields it never reads) are
reported as such, not as parser bugs."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from transformers.utils.chat_parsing import parse_response

from ..cases import Case, compare_messages, is_missing, normalise_message
from ..transformers_compat import REASONING_FIELDS
from ..text import indent_error, short
from .context import CheckContext, Sample
from .results import CheckResult, Location

NAME = "round_trip.message"


@dataclass
class Turn:
    """An assistant turn as the chat template writes it: the prompt before it, the text the model
    would have generated (up to its stop token), and the message it was rendered from."""

    case: Case
    index: int
    message: dict
    prompt: str
    output: str
    note: str = ""

    def sample(self) -> Sample:
        """The turn as an output: its case is the conversation before it, with a generation prompt."""
        history = replace(self.case, messages=self.case.messages[: self.index], add_generation_prompt=True, continue_final_message=False)
        return Sample(f"{self.case.name} #{self.index + 1}", history, self.output, origin="rendered turn", prompt=self.prompt)


def assistant_turns(ctx: CheckContext) -> tuple[list[Turn], list[CheckResult]]:
    """Every assistant turn of every case, and a failure for each turn that cannot be rendered."""
    turns: list[Turn] = []
    problems: list[CheckResult] = []
    for case in ctx.cases:
        for index, message in enumerate(case.messages):
            if isinstance(message, dict) and message.get("role") == "assistant":
                turn = render_turn(ctx, case, index)
                (turns if isinstance(turn, Turn) else problems).append(turn)  # type: ignore[arg-type]
    return turns, problems


def render_turn(ctx: CheckContext, case: Case, index: int) -> Turn | CheckResult:
    """The assistant turn at `index` of `case` as the chat template writes it (after its prompt, up to the
    stop token), or a failure saying why it cannot be found."""
    subject = f"case {case.name!r}"
    full = ctx.render(case, case.messages[: index + 1], add_generation_prompt=False, continue_final_message=False)
    if not full.ok:
        return _render_failure(full.diagnostics, subject, f"rendering up to message {index + 1} failed")
    text = full.prompt or ""
    prompt = ctx.render(case, case.messages[:index], add_generation_prompt=True, continue_final_message=False) if index else None
    start = None
    rewritten = ""
    if prompt is not None and prompt.ok:
        generation_prompt = prompt.prompt or ""
        if text.startswith(generation_prompt):
            # The usual case: the model writes exactly what follows its prompt.
            start = len(generation_prompt)
        elif (overlap := _longest_suffix_in(generation_prompt, text)) >= _anchor_tail(ctx, generation_prompt):
            # The template rewrites earlier turns once this message follows (drops their reasoning,
            # say): the turn starts after the end of the prompt as it still appears in the text.
            start = text.rfind(generation_prompt[-overlap:]) + overlap
            rewritten = " (the chat template renders earlier turns differently once this message follows)"
    if start is None:
        # No generation prompt to go by: take the text after the last start anchor, as the parser would.
        anchors = list(ctx.template.start_anchor_re.finditer(text))
        if not anchors:
            return CheckResult(
                NAME, "fail",
                f"The start anchor never occurs in the conversation rendered up to message {index + 1}, so the "
                "assistant turn cannot be found.",
                ctx.key_location("start_anchor_pattern" if "start_anchor_pattern" in ctx.spec else "start_anchor"),
                subject,
            )  # fmt: skip
        start = anchors[-1].end()
    output, note = cut_at_stop(text[start:], ctx.turn_end_tokens())
    return Turn(case, index, case.messages[index], text[:start], output, (note + rewritten).strip())


def _anchor_tail(ctx: CheckContext, prompt: str) -> int:
    """How much of the end of a prompt must be found again to place a turn: at least its last start
    anchor and what follows it (a shorter overlap, like one newline, proves nothing)."""
    anchors = list(ctx.template.start_anchor_re.finditer(prompt))
    return max(1, len(prompt) - anchors[-1].start()) if anchors else 1


def _longest_suffix_in(prompt: str, text: str) -> int:
    """Length of the longest suffix of `prompt` that occurs in `text` (binary search: a suffix
    occurs whenever a longer one does)."""
    low, high = 0, len(prompt)
    while low < high:
        mid = (low + high + 1) // 2
        if prompt[-mid:] in text:
            low = mid
        else:
            high = mid - 1
    return low


def cut_at_stop(output: str, stop_tokens: list[str]) -> tuple[str, str]:
    """The part of a rendered turn the model writes: up to and including its first stop token (the
    template may add text after it, like a newline, that the model never generates). Without stop
    tokens, trailing whitespace is dropped for the same reason."""
    found = [(output.find(t), t) for t in stop_tokens if t and t in output]
    if found:
        position, token = min(found)
        end = position + len(token)
        rest = output[end:]
        return output[:end], f"(the template's {short(rest)!r} after the stop token {token!r} is not model output)" if rest else ""
    trimmed = output.rstrip()
    return trimmed, ""


def check_message_round_trip(ctx: CheckContext, turns: list[Turn]) -> list[CheckResult]:
    """One result per case: every assistant message parses back to itself, or why not."""
    by_case: dict[str, list[Turn]] = {}
    for turn in turns:
        by_case.setdefault(turn.case.name, []).append(turn)
    results = []
    for case_name, case_turns in by_case.items():
        lines: list[str] = []
        unexplained: list[str] = []
        undocumented: list[str] = []
        for turn in case_turns:
            turn_lines, bad, dropped = _compare_turn(ctx, turn)
            lines += turn_lines
            unexplained += bad
            undocumented += dropped
        subject = f"case {case_name!r}"
        if unexplained:
            first = next((n for n in unexplained if n), None)
            results.append(CheckResult(NAME, "fail", "\n".join(lines), ctx.field_location(first), subject))
        elif undocumented:
            results.append(CheckResult(NAME, "warn", "\n".join(lines), Location("chat_template"), subject))
        else:
            results.append(CheckResult(NAME, "pass", "\n".join(lines), None, subject))
    return results


def _compare_turn(ctx: CheckContext, turn: Turn) -> tuple[list[str], list[str], list[str]]:
    """Lines describing one assistant message's round trip, the fields that fail it, and the fields
    lost for a reason that is not documented."""
    head = f"message {turn.index + 1}"  # counted from 1, as the conversation editor's cards are
    rendered = f"  rendered turn: {short(turn.output, 200)} {turn.note}".rstrip()
    parsed, error = parse_turn(ctx, turn)
    if error is not None:
        return [f"{head}: the rendered turn does not parse: {indent_error(error)}{ctx.anchor_hint(turn.prompt)}", rendered], [ctx.field_named_in(error) or ""], []
    differences = compare_messages(turn.message, parsed)
    if not differences:
        return [f"{head}: round-trips ({', '.join(sorted(normalise_message(turn.message))) or 'empty'})."], [], []
    dropped = ctx.dropped_fields()
    renamed = _renames(differences)
    lines: list[str] = []
    bad: list[str] = []
    undocumented: list[str] = []
    for name, original, got in differences:
        if name in renamed.values():
            continue  # reported with the field it was renamed from
        documented = next((ctx.documented[n] for n in (name, renamed.get(name)) if n in ctx.documented), None)
        why = f"documented: {documented}" if documented is not None else dropped.get(name) if is_missing(got) and name not in renamed else None
        if why is None and is_missing(got) and name not in renamed and _not_rendered_here(ctx, turn, name):
            why = f"the chat template does not render `{name}` in this turn: the prompt is the same without it"
        if name in renamed:
            lines.append(f"{head}: `{name}` comes back as `{renamed[name]}`" + (f" ({why})." if why else "."))
        elif why is None:
            lines += [f"{head}: `{name}` differs:", f"  original: {_show(original)}", f"  parsed:   {_show(got)}"]
        else:
            lines.append(f"{head}: `{name}` is not rendered back as written ({why}).")
        if why is None:
            bad.append(renamed.get(name, name))
        elif not why.startswith("documented"):
            undocumented.append(name)
    if bad and set(bad) <= set(renamed.values()) and _renders_same(ctx, turn, parsed):
        # Only names differ, and the chat template renders the parsed message exactly as the original
        # (it reads both names): nothing is lost for the model.
        lines.append("  (the chat template renders the parsed message exactly as the original: it reads both names)")
        bad = []
    elif bad:
        lines.append(rendered)
    return lines, bad, undocumented


def _not_rendered_here(ctx: CheckContext, turn: Turn, name: str) -> bool:
    """Whether the template writes the same text for this turn without field `name` (then no parser
    can give it back: the template drops it here by design, e.g. reasoning kept only for later turns)."""
    names = REASONING_FIELDS if name in REASONING_FIELDS else (name,)
    without = {k: v for k, v in turn.message.items() if k not in names}
    return _renders_same(ctx, turn, without)


def _renders_same(ctx: CheckContext, turn: Turn, parsed: dict) -> bool:
    history = turn.case.messages[: turn.index]
    original = ctx.render(turn.case, [*history, turn.message], add_generation_prompt=False, continue_final_message=False)
    again = ctx.render(turn.case, [*history, parsed], add_generation_prompt=False, continue_final_message=False)
    return original.ok and again.ok and original.prompt == again.prompt


def parse_turn(ctx: CheckContext, turn: Turn) -> tuple[dict, str | None]:
    """Parse a rendered turn the way a server would (prompt as prefix, the case's tools for typing)."""
    try:
        return parse_response(turn.output, ctx.template, prefix=turn.prompt, tools=turn.case.tools), None
    except Exception as e:  # noqa: BLE001 - the parser's message is the finding
        return {}, f"{type(e).__name__}: {e}"


# ----- comparing messages -----------------------------------------------------------------------


def _renames(differences: list[tuple[str, Any, Any]]) -> dict[str, str]:
    """Fields whose value comes back under another name: {original field: parsed field}."""
    lost = {name: original for name, original, got in differences if original is not None and got is None}
    gained = {name: got for name, original, got in differences if original is None and got is not None}
    out = {}
    for name, value in lost.items():
        match = next((other for other, got in gained.items() if got == value and other not in out.values()), None)
        if match is not None:
            out[name] = match
    return out


def _show(value: Any) -> str:
    if value is None:
        return "(missing)"
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return short(text, 200)


def _render_failure(diagnostics: list, subject: str, what: str) -> CheckResult:
    first = diagnostics[0] if diagnostics else None
    message = first.message if first else "unknown error"
    location = Location(first.source, first.line, first.column) if first else None
    return CheckResult(NAME, "fail", f"{what}: {message}", location, subject)
