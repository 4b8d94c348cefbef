"""Robustness: does the response template parse what models really write, not just the examples?

Outputs are generated the way models vary them (`robustness_outputs`): from an author's pair, the
chat template's own history rendering of adversarial but valid calls; from a library format, its
examples with values substituted. Then the text around the calls is varied. Each variation is tried
in every variant (a few dozen, each rendered once, every parse one-shot), within a time budget;
a variation that breaks is reported with its smallest failing output (values shrunk character by
character), what the message should have been and what came back, on the response template's line.

Which variations are demanded comes from claims (`Claims`): a library format's `format.json` says
what its models write (`"variations"`); a pair that is a library format's response template takes
that format's claims; any other pair is held to what its own chat template writes (values, call
counts, reasoning) and only *notes* what it cannot know its model writes (text around calls,
whitespace, a stripped end token). A variation nobody claims is never a failure.

Why not hypothesis here: its `find` costs 0.1-0.4 s even for a trivial property (measured), a fifth
of the checks' whole budget; the variants here are few and ordered smallest first, and values are
shrunk greedily. The tests search combinations with hypothesis (tests/test_robustness.py)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from transformers.utils.chat_parsing import parse_response

from ..cases import normalise_message
from ..regex_bounds import RegexTimeout
from ..text import short, shorten
from .results import CheckResult, Location

NAME = "robustness"
# Seconds of CPU the whole robustness check may take in a run of the checks (its share of their budget).
# CPU time, not the clock: on a busy machine the same pair is tried on the same variants, so its verdict
# does not depend on the load (the checks' own wall-clock limit still bounds the whole run).
BUDGET_SECONDS = 0.5

# Every variation, in words (the order results are reported in).
VARIATIONS: dict[str, str] = {
    "values.strings": "string arguments holding quotes, brackets, backslashes, newlines and unicode",
    "values.typed": "numbers, booleans, null, arrays, nested and empty objects as arguments",
    "values.delimiters": "string arguments holding the format's own delimiters",
    "calls.count": "0, 1, 2 and 5 calls",
    "reasoning": "reasoning on and off",
    "text.before": "text before the calls",
    "text.between": "text between calls",
    "text.after": "text after the calls",
    "whitespace": "newlines and blank lines at the delimiters",
    "end_token": "the end token left out (servers strip stop tokens)",
    "optional": "a text the model may leave out (an id, a closing tag)",
    "wrappers": "the calls in another wrapper or spelling the model family writes",
}
# What an author's pair is held to when no library format claims more: what the chat template writes
# itself. Text around calls, whitespace and a stripped end token are only noted.
PAIR_CLAIMS: dict[str, bool | str] = {"values.strings": True, "values.typed": True, "values.delimiters": False,
                                      "calls.count": True, "reasoning": True}  # fmt: skip


@dataclass(frozen=True)
class Claims:
    """Which variations a format's models write: True (written; the check demands it), False (not
    written: a failure is only noted), or a limit id (written, and the spec cannot read it: the
    limit is reported). `optional` lists texts a model may leave out (`{id}`: the call's id)."""

    writes: Mapping[str, bool | str] = field(default_factory=dict)
    optional: tuple[str, ...] = ()
    source: str = "the chat template's own history"  # who claims: shown with every result
    wrappers: tuple[tuple[str, str], ...] = ()  # (open, close) a model writes around its calls instead
    # Other spellings of texts around the calls, each a set of (text, written as) applied together:
    # DeepSeek R1's `<｜tool▁calls｜>` for `<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>`.
    respellings: tuple[tuple[tuple[str, str], ...], ...] = ()

    @classmethod
    def from_json(cls, data: Mapping | None, source: str) -> Claims:
        """From a format.json's `variations`: {variation: true | false | limit id, "optional": [texts]
        or {"texts": [texts], "limit": limit id}, "wrappers": [[open, close] | {"as": [[text, written
        as], …]}] or {"pairs": […], "limit": id}}."""
        data = dict(data or {})
        optional = data.pop("optional", None) or ()
        wrappers = data.pop("wrappers", None) or ()
        writes = {k: v for k, v in data.items() if k in VARIATIONS}
        if isinstance(wrappers, Mapping):
            writes["wrappers"] = wrappers.get("limit") or True
            wrappers = wrappers.get("pairs") or ()
        elif wrappers:
            writes["wrappers"] = True
        if isinstance(optional, Mapping):
            writes["optional"] = optional.get("limit") or True
            optional = optional.get("texts") or ()
        elif optional:
            writes["optional"] = True
        pairs = tuple((str(w[0]), str(w[1])) for w in wrappers if not isinstance(w, Mapping))
        respellings = tuple(tuple((str(a), str(b)) for a, b in w.get("as") or ()) for w in wrappers if isinstance(w, Mapping))
        return cls(writes, tuple(optional), source, pairs, respellings)

    def demanded(self, variation: str) -> bool | str:
        return self.writes.get(variation, False)

    def described(self) -> list[str]:
        """Each variation in words with what is claimed: "text after the calls: written, and the
        spec cannot read it (json-without-delimiters)" — what the format page shows."""
        out = []
        for variation, words in VARIATIONS.items():
            claim = self.writes.get(variation)
            if variation == "optional" and self.optional:
                words = f"{words}: {', '.join(repr(t) for t in self.optional)}"
            if variation == "wrappers" and (self.wrappers or self.respellings):
                spelled = [" and ".join(f"{a!r} as {b!r}" for a, b in r) for r in self.respellings]
                words = f"{words}: {', '.join([*(repr(o + '…' + c) for o, c in self.wrappers), *spelled])}"
            if claim is True:
                out.append(f"{words}: written (demanded)")
            elif isinstance(claim, str) and claim:
                out.append(f"{words}: written, and the spec cannot read it ({claim})")
            elif variation in self.writes:
                out.append(f"{words}: not written (only noted)")
        return out

    def to_dict(self) -> dict:
        data: dict = {k: v for k, v in self.writes.items() if k != "optional"}
        if self.optional:
            limit = self.writes.get("optional")
            data["optional"] = {"texts": list(self.optional), "limit": limit} if isinstance(limit, str) else list(self.optional)
        data.pop("wrappers", None)
        if self.wrappers or self.respellings:
            limit = self.writes.get("wrappers")
            pairs = [list(p) for p in self.wrappers] + [{"as": [list(p) for p in r]} for r in self.respellings]
            data["wrappers"] = {"pairs": pairs, "limit": limit} if isinstance(limit, str) else pairs
        return data


@dataclass
class Finding:
    """What one variant gave: None when it parsed to its message, else why not."""

    variant: Any  # robustness_outputs.Variant
    problem: str
    field: str | None


def judge(template: Any, variants: Iterable[Any], claims: Claims, deadline: float,
          compared: Callable[[str], bool] = lambda name: True,
          shrinkers: Mapping[str, Callable[[Any], Any]] | None = None,
          locate: Callable[[str | None], Location] | None = None) -> list[CheckResult]:  # fmt: skip
    """Parse every variant (until `deadline`), one result per variation that had variants: pass, or
    its smallest failing output and how it fails; `compared` says which fields count."""
    by_variation: dict[str, list[Any]] = {}
    for variant in variants:
        by_variation.setdefault(variant.variation, []).append(variant)
    results = []
    for variation in VARIATIONS:
        tried = sorted(by_variation.get(variation, []), key=lambda v: v.size)
        if not tried:
            continue
        failures, checked = [], 0
        for variant in tried:
            if time.process_time() > deadline:
                break
            checked += 1
            finding = outcome(template, variant, compared)
            if finding is not None:
                failures.append(finding)
        if checked == 0:
            results.append(CheckResult(f"{NAME}.{variation}", "info", f"Not tried: the robustness check's time budget ran out ({VARIATIONS[variation]})."))
            continue
        smallest = min(failures, key=lambda f: f.variant.size) if failures else None
        if smallest is not None and shrinkers and variation in shrinkers and time.process_time() < deadline:
            smallest = shrink(template, smallest, shrinkers[variation], compared, deadline)
        results.append(_result(variation, checked, len(tried), failures, smallest, claims, locate))
    return results


def outcome(template: Any, variant: Any, compared: Callable[[str], bool]) -> Finding | None:
    """Whether `variant` parses to its message (content and reasoning compared without whitespace,
    calls by name and arguments); the problem otherwise."""
    try:
        parsed = parse_response(variant.output, template, prefix=variant.prompt, tools=variant.tools)
    except RegexTimeout:
        raise  # a catastrophic pattern stops the check (run_checks says so), not one variant
    except Exception as e:  # noqa: BLE001 - the parser's message is the finding
        message = f"{type(e).__name__}: {e}"
        named = next((n for n in ("tool_calls", "reasoning_content", "content") if f"'{n}'" in message), None)
        return Finding(variant, f"parse_response fails: {shorten(message, 300)}", named or "tool_calls")
    expected, got = normalise_message(variant.expected), normalise_message(parsed)
    for name in ("tool_calls", "reasoning_content", "content"):
        if not compared(name) or variant.fields is not None and name not in variant.fields:
            continue
        want, have = expected.get(name), got.get(name)
        if name != "tool_calls":
            want, have = _squeezed(want), _squeezed(have)
        if want != have:
            return Finding(variant, f"`{name}` expected {_show(expected.get(name))}\n  parsed   {_show(got.get(name))}", name)
    return None


def shrink(template: Any, finding: Finding, make: Callable[[Any], Any], compared: Callable[[str], bool], deadline: float) -> Finding:
    """The failing value made smaller while it still fails: chunks, then single characters, removed
    greedily (bounded by `deadline` and 80 tries)."""
    value = getattr(finding.variant, "value", None)
    if not isinstance(value, str):
        return finding
    tries = 0
    size = max(1, len(value) // 2)
    while size >= 1 and tries < 80 and time.process_time() < deadline:
        progressed = False
        at = 0
        while at < len(value) and tries < 80 and time.process_time() < deadline:
            smaller = value[:at] + value[at + size :]
            tries += 1
            variant = make(smaller) if smaller else None
            found = outcome(template, variant, compared) if variant is not None else None
            if found is not None:
                value, finding, progressed = smaller, found, True
            else:
                at += size
        if not progressed:
            size //= 2
    return finding


def _result(variation: str, checked: int, total: int, failures: list[Finding], smallest: Finding | None,
            claims: Claims, locate: Callable[[str | None], Location] | None) -> CheckResult:  # fmt: skip
    name = f"{NAME}.{variation}"
    words = VARIATIONS[variation]
    of = f"{checked} variant{'s' if checked != 1 else ''}" + (f" (of {total}; the time budget ran out)" if checked < total else "")
    if smallest is None:
        return CheckResult(name, "pass", f"{words}: all {of} parse to their message.")
    claim = claims.demanded(variation)
    variant = smallest.variant
    details = (f"{words}: {len(failures)} of {of} do not parse to their message. The smallest output that breaks "
               f"({variant.what}):\n  {short(variant.output, 400)}\n  {smallest.problem}")  # fmt: skip
    hint = hint_for(variation, smallest)
    if hint:
        details += f"\nHint: {hint}"
    location = locate(smallest.field) if locate else None
    if claim is True:
        return CheckResult(name, "fail", details + f"\n(claimed by {claims.source})", location)
    if isinstance(claim, str) and claim:
        return CheckResult(name, "info", details + f"\n(a limit of the spec: {claim}, see docs/spec-limits.md#{claim})", location)
    return CheckResult(name, "info", details + f"\n(noted only: {claims.source} does not claim that models write {words})", location)


def hint_for(variation: str, finding: Finding) -> str:
    """What to change, when the response-template spec can say the fix; the spec limit otherwise."""
    problem = finding.problem
    if "transform placeholder" in problem and "is not defined" in problem:
        return ("the transform names a placeholder this output does not have (an optional id?): a placeholder that is not "
                "defined fails the whole parse; the spec has no fallback (docs/spec-limits.md#transform-fallback): keep one "
                "template per spelling, or leave the key out of the transform.")  # fmt: skip
    if variation == "values.typed" and "expected" in problem:
        return ("values written as numbers or objects come back as strings: pass the tools to parse_response (their JSON "
                "Schemas type each argument), and for `xml-inline` add a value parser that reads JSON values "
                '({"name": "json", "args": {"allow_non_json": true}}) so numbers and objects survive without tools.')  # fmt: skip
    if variation == "text.after" and finding.field == "tool_calls":
        return ("the call's region runs to the end of the turn, so text after it is read as part of the call: close the "
                "call on its own end (its closing tag, or where its JSON ends and what follows cannot continue JSON: "
                "`(?<=\\}\\])(?=\\s*[^\\s,\\]}\"\\\\])` after a list, not portable), see "
                "docs/spec-limits.md#json-without-delimiters.")  # fmt: skip
    if variation == "values.strings" and "\\'" in finding.variant.output:
        return "single-quoted strings with escaped quotes: see docs/spec-limits.md#python-literals."
    if variation == "wrappers":
        return ("list the other wrapper's texts beside the field's own (\"open\": [\"<tool_call>\", \"```json\\n\"], and the "
                "same for the close) where the calls inside are written alike, and another spelling of a text around the "
                "calls beside it (an alternative in the pattern, or a close of the implicit field that drops it); a call "
                "list in one wrapper and single calls in another is docs/spec-limits.md#mixed-call-syntax.")  # fmt: skip
    if variation == "whitespace":
        return "allow whitespace at the delimiter: a leading `\\s*` in an open_pattern, or a close_pattern with `\\s*`."
    return ""


def _squeezed(value: Any) -> Any:
    return "".join(value.split()) or None if isinstance(value, str) else value


def _show(value: Any) -> str:
    if value is None:
        return "(missing)"
    return shorten(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False), 300)
