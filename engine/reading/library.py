"""Candidates from the format library (engine.formats): a format whose call texts appear in what the
template renders (the tool instructions, the generation prompts, the history) lends the draft its
tool-call field, and its reasoning field when the history shows none but the prompt writes that
format's tags. The draft keeps what it read off the history for the rest (where the turn starts and
ends: that is the template's, not the format's).

Candidates are verified, never trusted: each is parsed on the history probes, the instruction's
example and the format's own examples (real model outputs, each with the message it must parse to),
and only one that parses them is offered."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cache

import regex
from transformers.utils.chat_parsing import parse_response
from transformers.utils.chat_parsing.response_templates import ResponseTemplate, load_response_template

from ..cases import normalise_message
from ..formats import Format, FormatExample, load_format, load_formats
from .probes import CALL_NAMES, FIELDS, Turn
from .text import MARKUP, literal_runs
from .told import Example, Told, call_example, call_open
from .outcomes import Outcome, expected_message

# Literal pieces shorter than this say nothing about a format (`{`, `">`).
_MIN_PIECE = 3


@dataclass
class Candidate:
    """The draft with a format's fields in it, and what it parses: `probes` (history probes that show
    calls: parsed back, shown; `named`: those whose calls at least come back with their names),
    `examples` (the format's examples that apply here: parsed, applying), the instruction's
    `example`, and where the format's texts were seen."""

    format: Format
    spec: dict
    taken: tuple[str, ...]
    seen: tuple[str, ...]
    signature: int
    example: Example | None = None
    probes: tuple[int, int] = (0, 0)
    examples: tuple[int, int] = (0, 0)
    failures: list[str] = field(default_factory=list)
    named: int = 0  # history probes whose calls come back with the right names (the call's shape is read)
    whole: int = 0  # history probes with calls that parse back whole, every field (none excused)
    # Variations the format claims its models write that break with this graft (the robustness
    # check, run by the draft above the checks; negated, so fewer breaks rank higher).
    unsound: int = 0

    @property
    def told(self) -> bool:
        """The tool instructions show this format's call (their example parses with it)."""
        return self.example is not None and self.example.parses

    @property
    def verifies(self) -> bool:
        """Every format example that applies here parses to its message (at least one applies), and the
        instruction's example, when there is one, parses (or only names the delimiter in words); or,
        when none of its examples applies here, the instruction's example parses."""
        parsed, applying = self.examples
        if applying == 0:
            # None of its examples applies here (each writes a field this template has not, Nemotron's
            # <think>): the instructions' own example, read whole, is the evidence.
            return self.example is not None and self.example.parses and not self.example.prose
        return parsed == applying and (self.example is None or self.example.parses or self.example.prose)

    @property
    def history_agrees(self) -> bool:
        parsed, shown = self.probes
        return shown > 0 and parsed == shown

    def rank(self) -> tuple:
        """Best first: verified; the instructions' example read (the more of it, the better: `functools`
        before a JSON list is the format's); the history read; the fewer claimed variations that break
        (robustness); the more of the history's turns whole, every field; then its examples and signature."""
        told = len(self.example.text) if self.example is not None and self.example.parses else 0
        return (self.verifies, told, self.history_agrees, -self.unsound, self.whole, self.probes[0], self.examples[0],
                self.signature)  # fmt: skip

    def examples_here(self) -> list[FormatExample]:
        """The format's examples that apply to this graft, each with a prompt that ends where this
        template's turn starts (what the robustness check varies)."""
        anchor = _anchor(self.spec)
        return [replace(example, prefix=anchor + prefill) for example, prefill in applicable(self.format, set(self.spec["fields"]))]


def candidates(spec: dict | None, implicit: str | None, turns: list[Turn], told: Told,
               outcomes: list[Outcome]) -> list[Candidate]:  # fmt: skip
    """Every library format whose call texts appear in what the template renders, grafted into the
    draft `spec` and verified, best first. `outcomes` are the turns parsed with the draft itself:
    a candidate is not blamed for what the draft also gets wrong."""
    if spec is None:
        return []
    history = "\n".join(t.output for t in turns if t.probe.message.get("tool_calls"))
    known = {id(o.turn): set(o.failed) | set(o.spilled) for o in outcomes}
    out = []
    for fmt in load_formats():
        calls = fmt.response_template.get("fields", {}).get("tool_calls")
        if calls is None:
            continue
        # In what the model is told, only a format's markup or marked words say which format it is
        # (`"name":` and `parameters` are in every tool's JSON schema); in the history's calls, any
        # of its texts does.
        # Not the texts other fields close on (the turn's end: `<|eot_id|>` is in every Llama history), nor
        # the brackets of a lookaround close (`}\n]`): they say nothing about which format it is.
        ends = {c for name, f in fmt.response_template.get("fields", {}).items() if name != "tool_calls"
                for c in ([f["close"]] if isinstance(f.get("close"), str) else f.get("close") or ())}  # fmt: skip
        pieces = [p for p in _pieces(calls) if p not in ends and regex.search(r"[^\s{}\[\]]", p)]
        marks = _pieces(calls, ("open",), distinct=True)  # a close is often just the end of the turn
        # A format whose open is a pattern with no literal text of its own (a Python call list's
        # `(?=\[name\()`) is seen where that pattern matches; in the instructions, only where it
        # reads a call (checked below: `[{` starts every JSON list of tools). One with no punctuation
        # of its own (functionary v3.2's `NAME\n`) matches any prose: nothing rendered can show it.
        pattern = None if marks else call_open(calls)
        if pattern is not None and not any(regex.search(r"[^\w\s]", run) for run in literal_runs(pattern.pattern)):
            continue
        seen = tuple(where for where, text, among in (("the tool instructions", told.instructions, marks),
                                                      ("the generation prompt", "\n".join(told.generation_prompts), marks),
                                                      ("the history", history, pieces))
                     if any(p in text for p in among) or (pattern is not None and pattern.search(text)))  # fmt: skip
        if not seen:
            continue
        signature = sum(1 for s in fmt.signature if s and s in told.text + history)
        best: Candidate | None = None
        # Variants, each tried when the one before fails the format's examples: the format's own
        # reasoning field in place of the history's (gpt-oss's commentary preamble), and the texts
        # the format's implicit field drops (Granite 3.3's <response> tags).
        for own_reasoning, drops in ((False, False), (False, True), (True, False), (True, True)):
            grafted = graft(spec, implicit, fmt, told, own_reasoning, drops)
            if grafted is None or (best is not None and grafted[0] == best.spec):
                continue
            candidate = Candidate(fmt, grafted[0], grafted[1], seen, signature)
            verify_candidate(candidate, turns, told, known)
            if best is None or candidate.rank() > best.rank():
                best = candidate
            # A verified variant that still leaves text of the history's turns in no field (Gemma 4's
            # <|tool_response> after its calls) gives the next variant its chance to read them whole.
            if best.verifies and best.whole == best.probes[1]:
                break
        if best is not None and (pattern is None or best.told or seen != ("the tool instructions",)):
            out.append(best)
    out.sort(key=Candidate.rank, reverse=True)
    return out


def graft(spec: dict, implicit: str | None, fmt: Format, told: Told, own_reasoning: bool = False,
          drops: bool = False) -> tuple[dict, tuple[str, ...]] | None:  # fmt: skip
    """The draft with the format's tool-call field, and its reasoning field when the draft has none and
    the prompt writes the format's reasoning tags (or, with `own_reasoning`, in place of the draft's);
    with `drops`, the draft's implicit field also closes at the format's implicit closes. None when
    the two cannot be combined."""
    theirs = fmt.spec()["fields"]
    calls = theirs["tool_calls"]
    if "open" not in calls and "open_pattern" not in calls:
        return None
    fields = copy.deepcopy(spec["fields"])
    ends = _ends(theirs)
    closes = calls.get("close")
    if ends and closes and set(closes if isinstance(closes, (list, tuple)) else [closes]) <= set(ends) and implicit in fields:
        # The calls run to the end of the turn (`functools[...]<|eot_id|>`): this template's end, not the format's model's.
        ours = fields[implicit].get("close")
        calls = {**calls, "close": ours} if ours else {k: v for k, v in calls.items() if k != "close"}
    fields["tool_calls"] = calls
    taken = ["tool_calls"]
    reasoning = theirs.get("reasoning_content")
    if reasoning is not None and (own_reasoning and "reasoning_content" in fields or
                                  "reasoning_content" not in fields and any(p in told.text for p in _pieces(reasoning))):  # fmt: skip
        fields["reasoning_content"] = reasoning
        taken.append("reasoning_content")
    elif own_reasoning:
        return None
    out = {k: v for k, v in spec.items() if k != "fields"}
    if implicit is None:
        implicit = _unprefill(out, fields, taken, told)
    for name in taken:
        # A field the history seemed to open where the taken one opens (content "opening" at a <think>
        # the generation prompt prefills) has no opening text of its own.
        for other, field_spec in fields.items():
            if other not in taken and field_spec.get("open") is not None and field_spec.get("open") == fields[name].get("open"):
                if implicit is None:
                    field_spec.pop("open")
                    implicit = other
                else:
                    return None
    if implicit is not None and implicit in fields:
        # Text around the calls comes in several stretches: join them (see engine.reading.build).
        fields[implicit].update({"repeats": True, "join": ""})
        close = fields[implicit].get("close")
        ours = [close] if isinstance(close, str) else list(close or [])
        extra = [e for e in ends if e not in ours]
        # The other spellings the format's models write of a text this template drops (DeepSeek R1's
        # <｜tool▁calls｜> for <｜tool▁calls▁begin｜>) are dropped too: its claims say they are written.
        spelled = [e for e in extra if e in _respelled(fmt)]
        if drops and extra and "close_pattern" not in fields[implicit]:
            fields[implicit]["close"] = ours + extra
        elif drops:
            return None
        elif spelled and "close_pattern" not in fields[implicit]:
            fields[implicit]["close"] = ours + spelled
    if "reasoning_content" in taken and "start_anchor" in out:
        out["start_anchor"] = _before(out["start_anchor"], _pieces(reasoning, ("open",)))
    if "start_anchor" in out:
        out["start_anchor"] = _resumes(out["start_anchor"], fmt, told)
    out["fields"] = {name: fields[name] for name in FIELDS if name in fields}
    return out, tuple(taken)


def _respelled(fmt: Format) -> set[str]:
    """The texts a format claims its models write in place of others (`variations.wrappers` entries
    {"as": [[text, written as], …]})."""
    wrappers = (fmt.variations or {}).get("wrappers") or ()
    wrappers = wrappers.get("pairs") or () if isinstance(wrappers, Mapping) else wrappers
    return {str(pair[1]) for w in wrappers if isinstance(w, Mapping) for pair in w.get("as") or () if pair[1]}


def _resumes(anchor: str | list[str], fmt: Format, told: Told) -> str | list[str]:
    """The draft's start anchor(s) with the format's own anchors where this template's turn resumes
    after one with no new header: a probe prompt in which the format's anchor comes after the last of
    the draft's (Gemma 4 writes tool results into the model's turn and the model goes on after
    <tool_response|>; DeepSeek V3.2 goes on after </function_results>)."""
    ours = [anchor] if isinstance(anchor, str) else list(anchor)
    theirs = fmt.response_template.get("start_anchor")
    extra = [a for a in ([theirs] if isinstance(theirs, str) else list(theirs or [])) if a not in ours
             and any(p.rfind(a) > max((p.rfind(o) for o in ours), default=-1) for p in told.prompts)]  # fmt: skip
    return anchor if not extra else ours + extra


def _unprefill(out: dict, fields: dict, taken: list[str], told: Told) -> str | None:
    """A field every generation prompt opens (Granite 3.3's content "opening" at the prompt's last
    <|end_of_role|>) holds the whole turn, so the calls could not open inside it: it becomes the
    implicit field, and its open part of the start anchor. Its name, or None."""
    anchors = out.get("start_anchor")
    if not told.prompts or not isinstance(anchors, (str, list)):
        return None
    for name, field_spec in fields.items():
        opened = field_spec.get("open")
        # Every prompt, not only those that prefill it: Command R7B's opens <|START_RESPONSE|> only without tools.
        # (Whitespace after it too: Llama 3's header ends with "<|end_header_id|>\n\n".)
        if name in taken or not isinstance(opened, str) or not all(p.rstrip().endswith(opened.rstrip()) for p in told.prompts):
            continue
        longer = [p[p.rfind(a) :] for a in ([anchors] if isinstance(anchors, str) else anchors)
                  for p in told.prompts if a and a in p]  # fmt: skip
        if not longer:
            return None
        field_spec.pop("open")
        longer = list(dict.fromkeys(longer))
        out["start_anchor"] = longer[0] if len(longer) == 1 else longer
        return name
    return None


def _before(anchor: str | list[str], opens: list[str]) -> str | list[str]:
    """The start anchor(s) cut before a field's open: a generation prompt that prefills an empty
    reasoning block starts the turn where the block opens (engine.reading.delimiters.start_anchor)."""
    anchors = [anchor] if isinstance(anchor, str) else list(anchor)
    cut = []
    for text in anchors:
        at = min((i for o in opens if (i := text.find(o)) > 0), default=len(text))
        cut.append(text[:at])
    cut = list(dict.fromkeys(cut))
    return cut[0] if len(cut) == 1 else cut


def verify_candidate(candidate: Candidate, turns: list[Turn], told: Told, known: dict[int, set[str]]) -> None:
    """Parse the history probes that show calls (each field as the draft reads it, only the calls
    where some field is `known` to fail with the draft itself; the calls the history wrote), the
    format's examples and the instruction's example."""
    drafted = set(candidate.spec["fields"])
    try:
        spec = load_response_template(candidate.spec)  # compiled once for every parse below
    except Exception as e:  # noqa: BLE001 - a graft transformers rejects verifies nothing
        candidate.failures.append(f"transformers rejects the combination: {e}")
        return
    parsed = shown = named = whole = 0
    every = tuple(sorted(drafted | {"tool_calls"}))
    for turn in turns:
        if not turn.probe.message.get("tool_calls") or CALL_NAMES[0] not in turn.output:
            continue
        shown += 1
        expected = expected_message(turn, drafted - {"tool_calls"})
        # The calls the history wrote (gpt-oss's template writes only a message's first call).
        expected["tool_calls"] = [c for i, c in enumerate(turn.message["tool_calls"]) if CALL_NAMES[i] in turn.output]
        # Where the draft itself gets a field wrong, its text may land in another: the calls alone.
        fields = ("tool_calls",) if known.get(id(turn)) else every
        read = _parses(turn.output, spec, turn.prompt, turn.probe.context.tools, expected, fields) is None
        parsed += read
        whole += (read if fields == every else _parses(turn.output, spec, turn.prompt, turn.probe.context.tools,
                                                       expected, every) is None)  # fmt: skip
        named += read or _parses(turn.output, spec, turn.prompt, turn.probe.context.tools, expected, names=True) is None
    candidate.probes, candidate.named, candidate.whole = (parsed, shown), named, whole
    # The examples where this template's turn starts, after what the format's own prompt prefills.
    anchor = _anchor(candidate.spec)
    passed = applying = 0
    for example, prefill in applicable(candidate.format, drafted):
        applying += 1
        why = _parses(example.output, spec, anchor + prefill, example.tool_list(), example.expected())
        passed += why is None
        if why is not None and len(candidate.failures) < 3:
            candidate.failures.append(f"{example.name}: {why}")
    candidate.examples = (passed, applying)
    candidate.example = call_example(told.instructions, candidate.spec["fields"]["tool_calls"], spec)


def applicable(fmt: Format, fields: set[str]) -> list[tuple[FormatExample, str]]:
    """The format's examples a draft with `fields` can be judged on (those that need no field it
    lacks), each without the end-of-turn text it ends with (the draft has its own), with what the
    format's prompt prefills after its start anchor (MiniMax's "<think>\n")."""
    # A prefill that writes a field the draft lacks (Nemotron's empty <think></think> with thinking off,
    # for a template whose prompt has no reasoning) would land in another field: not judged here.
    lacking = [p for name, spec in fmt.response_template.get("fields", {}).items() if name not in fields for p in _pieces(spec)]
    return [(e, prefill) for e, prefill in _standalone(fmt.name)
            if set(e.message) - {"role"} <= fields and not any(p in prefill for p in lacking)]  # fmt: skip


@cache
def _standalone(name: str) -> tuple[tuple[FormatExample, str], ...]:
    """The format's examples with what their prompt prefills, those that parse to their message
    from the format's start anchor and that prefill (cached: the library is immutable)."""
    fmt = load_format(name)
    data = fmt.spec()
    anchor, ends, spec = _anchor(data), _ends(data["fields"]), load_response_template(data)
    out = []
    for example in fmt.examples:
        prefix = example.prefix or ""
        # After the last of the format's anchors, as the parser cuts it: a turn may resume after a
        # tool result with no new header (Gemma 4's <tool_response|>, DeepSeek V3.2's </function_results>).
        prefill = spec.truncate_past_last_anchor(prefix) if spec.start_anchor_re.search(prefix) else ""
        if _parses(example.output, spec, anchor + prefill, example.tool_list(), example.expected()) is not None:
            continue
        output = example.output.rstrip()
        for end in ends:
            if end and output.endswith(end):
                output = output[: -len(end)]
                break
        out.append((replace(example, output=output, prefix=None), prefill))
    return tuple(out)


def _ends(fields: dict) -> list[str]:
    """The literal closes of a spec's implicit field: where its model's turn ends (and text it drops)."""
    return [c for f in fields.values() if "open" not in f and "open_pattern" not in f
            for c in ([f["close"]] if isinstance(f.get("close"), str) else f.get("close") or [])]  # fmt: skip


def _parses(output: str, spec: dict | ResponseTemplate, prefix: str, tools: list | None, expected: dict,
            only: tuple[str, ...] | None = None, names: bool = False) -> str | None:  # fmt: skip
    """None when `output` parses to `expected` (in the fields `only`, or all; with `names`, only the
    calls' names); else why not, in a few words."""
    try:
        message = parse_response(output, spec, prefix=prefix, tools=tools)
    except Exception as e:  # noqa: BLE001 - the parser's message is the reason
        return f"does not parse ({type(e).__name__})"
    got, want = normalise_message(message), normalise_message(expected)
    if names:
        called = [[c.get("name") if isinstance(c, dict) else c for c in m.get("tool_calls", [])] for m in (got, want)]
        return None if called[0] == called[1] else "the calls' names differ"
    differing = sorted(k for k in set(got) | set(want) if got.get(k) != want.get(k) and (only is None or k in only))
    return None if not differing else f"{', '.join(differing)} differ"


def _anchor(spec: dict) -> str:
    """A prompt that ends where the model's turn starts (the first start anchor)."""
    anchor = spec.get("start_anchor", "")
    return anchor[0] if isinstance(anchor, list) and anchor else anchor if isinstance(anchor, str) else ""


def _pieces(field_spec: dict, keys: tuple[str, ...] = ("open", "close"), distinct: bool = False) -> list[str]:
    """The literal texts of a field's open and close (a pattern's runs of literal characters). With
    `distinct`, only those that say which format it is: markup (`<tool_call>`, `[TOOL_CALLS]`), a
    literal word (`functools`), or a word marked with punctuation in a pattern (`to=functions.`)."""
    out: list[str] = []
    for key in keys:
        value = field_spec.get(key)
        for text in value if isinstance(value, (list, tuple)) else [value]:  # tuples: a library format's frozen lists
            if isinstance(text, str) and len(text.strip()) >= _MIN_PIECE:
                if not distinct or MARKUP.search(text) or regex.search(r"[A-Za-z]{4,}", text):
                    out.append(text)
        pattern = field_spec.get(f"{key}_pattern")
        if isinstance(pattern, str):
            for run in literal_runs(pattern):
                bare = regex.sub(r'"[^"]*"', "", run)  # a quoted key is JSON, not the format's
                if len(run.strip()) >= _MIN_PIECE and (not distinct or MARKUP.search(run) or
                                                       (regex.search(r"[A-Za-z]{4,}", bare) and regex.search(r"[<>\[\]|=]", bare))):  # fmt: skip
                    out.append(run)
    return out
