"""Render the same conversations with two versions of a chat template and say what changes for the
model: per conversation, whether the prompt changed, each place it changed (the smallest character
difference), the template line on each side that wrote the changed text, and the token counts.

Rendering is transformers' own (`engine.render.render`), and the template lines come from the very
render the prompt came from (`render(..., explain=True)`, engine.provenance: an instrumented copy of
the template, kept only when it gives back transformers' prompt byte for byte); nothing here works
out a line another way. `compare` does the work; `compare_bounded` runs it in the killable worker
(what the app and the command line call: templates are untrusted code)."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field, replace
from itertools import combinations
from typing import Any

from .. import limits
from ..cases import Case, Recording
from ..checks.fitting import VARIANTS
from ..diagnostics import Diagnostic
from ..render import RenderResult, render
from ..sandbox import bounded_or_why
from ..tokens.load import TokenizerFiles, cached_tokenizer
from .outputs import compare_outputs
from .result import BehaviourDiff, Change, ConversationDiff, Site, Version
from .suite import standard_conversations
from .text_diff import hunks

# Characters of context shown on each side of a change (the same in both prompts).
CONTEXT = 40
# Template lines named for one change, on each side.
MAX_SITES = 5
# Ways of adapting a standard conversation tried, fewest changes first, when neither version renders it.
MAX_ADAPTATIONS = 12


@dataclass
class Suite:
    """What both versions are tried on: the standard conversations (unless `standard` is off), then
    the author's own cases, the recordings of those cases (outputs to parse with both response
    templates), the template kwargs every case starts from, the tokenizer that counts tokens, and
    the named chat template to use (None: transformers' choice)."""

    cases: list[Case] = field(default_factory=list)
    recordings: list[Recording] = field(default_factory=list)
    template_kwargs: dict[str, Any] = field(default_factory=dict)
    tokenizer: TokenizerFiles | None = None
    template_name: str | None = None
    standard: bool = True
    formats: bool = True  # also parse the examples of the library formats the templates are

    def conversations(self) -> list[tuple[Case, bool]]:
        """Every conversation to render, each with whether it is one of the author's own (named "… (your
        case)" when a standard conversation has its name, so every name in a report is one conversation)."""
        standard = [(c, False) for c in standard_conversations()] if self.standard else []
        taken = {c.name for c, _ in standard}
        return standard + [(replace(c, name=f"{c.name} (your case)") if c.name in taken else c, True) for c in self.cases]


def compare(base: Version, new: Version, suite: Suite | None = None, max_chars: int | None = None) -> BehaviourDiff:
    """What changes for the model from `base` to `new`. Never raises: a template that does not render
    a conversation is that conversation's error (a change when only one side fails). `max_chars`
    bounds the answer (`BehaviourDiff.bounded`)."""
    suite = suite or Suite()
    diff = BehaviourDiff(base.label, new.label, tokenizer=suite.tokenizer.source if suite.tokenizer else None)
    for side in (base, new):
        if side.chat_template is None:
            diff.diagnostics.append(Diagnostic("error", f"{side.label} has no chat template.", "chat_template"))
    if not diff.diagnostics:
        conversations = suite.conversations()
        for case, own in conversations:
            diff.conversations.append(_conversation(base, new, case, own, suite))
        # The author's cases' prompts, by the case's own name: its recordings continue them.
        own = [c for c, (_, mine) in zip(diff.conversations, conversations) if mine]
        prompts = {(side, case.name): getattr(c, side) for case, c in zip(suite.cases, own) for side in ("before", "after")}

        def prompt(version: Version, case: Case) -> str | None:
            key = ("before" if version is base else "after", case.name)
            return prompts[key] if key in prompts else _render(version, case, suite).prompt

        diff.messages, problems = compare_outputs(base, new, suite.recordings, {c.name: c for c in suite.cases},
                                                  suite.formats, prompt)
        diff.diagnostics += problems
        if suite.tokenizer is not None:
            _count_tokens(diff, suite.tokenizer)
    return diff if max_chars is None else diff.bounded(max_chars)


def compare_bounded(base: Version, new: Version, suite: Suite | None = None, *, timeout: float, owner: Any = None,
                    max_chars: int | None = limits.MAX_BEHAVIOUR_DIFF_CHARS) -> tuple[BehaviourDiff | None, Diagnostic | None]:
    """`compare` in the killable, memory-capped worker, its answer bounded to `max_chars` there:
    `(diff, None)`, or `(None, why)` when it ran out of time or memory or found no worker."""
    return bounded_or_why(compare, {"base": base, "new": new, "suite": suite, "max_chars": max_chars}, timeout, owner,
                          doing="Comparing the two versions", it="the renders",
                          hint="Look for loops over large ranges in either chat template.", long=True)


def _render(version: Version, case: Case, suite: Suite, explain: bool = False) -> RenderResult:
    """The conversation rendered by this version. An error keeps its line, not its columns (a diff
    reports which line no longer renders; the columns would cost another, instrumented render)."""
    return render(version.chat_template or "", case.messages, case.tools, case.documents,
                  add_generation_prompt=case.add_generation_prompt, continue_final_message=case.continue_final_message,
                  template_kwargs={**suite.template_kwargs, **case.template_kwargs},
                  special_tokens={**version.special_tokens, **case.special_tokens}, template_name=suite.template_name,
                  explain=explain, locate=False)  # fmt: skip


def _error(result: RenderResult) -> tuple[str | None, int | None]:
    """Why a conversation did not render (None: it did), and the template line when it is there."""
    if result.ok:
        return None, None
    d = result.diagnostics[0] if result.diagnostics else None
    if d is None:
        return "unknown error", None
    line = d.line if d.source == "chat_template" else None
    return (f"line {d.line}: " if line else "") + d.message, line


def _conversation(base: Version, new: Version, case: Case, own: bool, suite: Suite) -> ConversationDiff:
    before, after = _render(base, case, suite), _render(new, case, suite)
    notes = []
    if not before.ok and not after.ok and not own:
        adapted = _adapted(base, new, case, suite)
        if adapted is not None:
            case, used = adapted
            before, after = _render(base, case, suite), _render(new, case, suite)
            notes.append(f"Adapted to the template ({', '.join(used)}): as written, neither version renders it.")
    (before_error, before_line), (after_error, after_line) = _error(before), _error(after)
    out = ConversationDiff(case.name, case.description, False, before.prompt, after.prompt, before_error, after_error,
                           before_line, after_line, before_template=before.template_name,
                           after_template=after.template_name, add_generation_prompt=case.add_generation_prompt,
                           own=own, notes=notes)  # fmt: skip
    if before.ok and after.ok:
        out.changed = before.prompt != after.prompt
    else:
        out.changed = before.ok != after.ok or out.before_error != out.after_error
    if out.changed and before.ok and after.ok:
        explained = [_render(base, case, suite, explain=True), _render(new, case, suite, explain=True)]
        for side, result in zip(("before", "after"), explained):
            if result.explanation is not None and result.explanation.note and result.explanation.pieces is None:
                out.notes.append(f"No template lines {side}: {result.explanation.note}")
        out.changes = _changes(before.prompt or "", after.prompt or "", explained, base, new)
    return out


def _adapted(base: Version, new: Version, case: Case, suite: Suite) -> tuple[Case, list[str]] | None:
    """The conversation changed the fewest ways (engine.checks.fitting's variants: tools offered, no
    system message, Mistral-style call ids, arguments as a string, content on every message) under
    which either version renders it; None when none does."""
    tools = next((c.tools for c in standard_conversations() if c.tools), None)
    variants = [v for v in VARIANTS if v.name != "parts" and v.apply(case, tools) != case]
    combos = [combo for size in range(1, len(variants) + 1) for combo in combinations(variants, size)]
    for combo in combos[:MAX_ADAPTATIONS]:
        adapted = case
        for variant in combo:
            adapted = variant.apply(adapted, tools)
        if _render(new, adapted, suite).ok or _render(base, adapted, suite).ok:
            return replace(adapted, name=case.name), [v.requirement.split(" (")[0] for v in combo]
    return None


def _changes(before: str, after: str, explained: list[RenderResult], base: Version, new: Version) -> list[Change]:
    sides = [_Sites(explained[0], base), _Sites(explained[1], new)]
    out = []
    for hunk in hunks(before, after):
        lead_start = max(0, hunk.a0 - CONTEXT)
        out.append(Change(
            hunk.a0, hunk.a1, hunk.b0, hunk.b1, before[hunk.a0 : hunk.a1], after[hunk.b0 : hunk.b1],
            lead=before[lead_start : hunk.a0], trail=before[hunk.a1 : hunk.a1 + CONTEXT],
            before_sites=sides[0].of(hunk.a0, hunk.a1), after_sites=sides[1].of(hunk.b0, hunk.b1),
        ))  # fmt: skip
    return out


class _Sites:
    """The template lines that wrote each part of one rendered prompt, from the render's own
    explanation (its pieces tile the prompt in order)."""

    def __init__(self, result: RenderResult, version: Version):
        self.pieces = (result.explanation.pieces if result.explanation is not None else None) or []
        self.starts = [p.start for p in self.pieces]
        self.version = version
        self.lines: dict[str | None, list[str]] = {}

    def of(self, start: int, end: int) -> list[Site]:
        """The lines that wrote `prompt[start:end]`; for an empty range, the line that wrote the text
        it falls in, or the text after it and before it."""
        if not self.pieces:
            return []
        first = max(0, bisect_right(self.starts, start) - 1)
        if start < end:
            last = bisect_left(self.starts, end)
            chosen = [(p, True) for p in self.pieces[first:last] if p.end > start]
        else:
            near = self.pieces[max(0, first - 1) : first + 2]
            # (what follows the point first: for a deletion, the text written in its place)
            chosen = [(p, False) for p in near if p.start < start < p.end] or \
                [(p, False) for p in near if p.start == start] + [(p, False) for p in near if p.end == start]
        sites: dict[tuple, Site] = {}
        for piece, wrote in chosen:
            if piece.line is None or (piece.template, piece.line) in sites:
                continue
            if len(sites) >= MAX_SITES:
                break
            text = self._line(piece.template, piece.line)
            sites[(piece.template, piece.line)] = Site(piece.line, piece.column, text.strip()[:200], piece.template,
                                                       piece.macro, wrote)
        return list(sites.values())

    def _line(self, template: str | None, line: int) -> str:
        if template not in self.lines:
            self.lines[template] = (self.version.template_text(template) or "").splitlines()
        lines = self.lines[template]
        return lines[line - 1] if 0 < line <= len(lines) else ""


def _count_tokens(diff: BehaviourDiff, files: TokenizerFiles) -> None:
    """The token counts of the changed conversations' prompts (as `apply_chat_template` encodes them:
    no special tokens added)."""
    try:
        tokenizer = cached_tokenizer(files)
    except ValueError as e:
        diff.diagnostics.append(Diagnostic("warning", f"No token counts: {e}", "tokenizer"))
        diff.tokenizer = None
        return
    for conversation in diff.changed:
        if conversation.before is not None and conversation.after is not None:
            conversation.before_tokens = len(tokenizer(conversation.before, add_special_tokens=False)["input_ids"])
            conversation.after_tokens = len(tokenizer(conversation.after, add_special_tokens=False)["input_ids"])
