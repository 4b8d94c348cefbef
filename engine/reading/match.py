"""Which library candidate the draft offers, and what its report says.

The draft follows what the model is told to write: a format the tool instructions show (their
example parses with it) and whose examples parse is taken even when the history writes calls
differently; that difference is a bug in the chat template, reported with both texts
(`Disagreement`, and the `chat_lint.history_calls` check). A format that parses the history's calls
and its own examples is taken too (it was written for real outputs, the history shows one
rendering). Otherwise the draft keeps what it read off the history."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..formats import load_limits
from .library import Candidate, candidates
from .probes import CALL_NAMES, Turn


# What the draft says when it cannot read the history's calls, and the limit of the spec behind it
# (formats/limits.json: the wording and minimal example live there, once).
HISTORY_LIMITS = {
    "written as a Python dict": "python-literals",
    "arguments as a JSON string": "json-string-arguments",
}


def history_limits(texts: list[str]) -> list[str]:
    """The spec's limits behind what the draft says about the history (`texts`: a report's message and notes)."""
    catalogue = load_limits()
    found = [i for phrase, i in HISTORY_LIMITS.items() if any(phrase in t for t in texts) and i in catalogue]
    return [str(catalogue[i]) for i in dict.fromkeys(found)]


@dataclass
class Match:
    """The library format the draft's calls come from, what it parses, and what the spec cannot say
    about it (the library's limits, each with a minimal example)."""

    name: str
    title: str
    how: list[str]
    limits: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"name": self.name, "title": self.title, "how": list(self.how), "limits": list(self.limits)}


@dataclass
class Disagreement:
    """The history writes calls unlike what the instructions tell the model to write: the two texts,
    side by side, and the format the instructions describe."""

    format: str
    told: str  # the instruction's example
    history: str  # how the template writes a call in history
    probe: str  # which probe conversation shows it
    parsed: tuple[int, int] = (0, 0)  # history probes that parse with the instructions' format, of those with calls

    def to_dict(self) -> dict:
        return {"format": self.format, "told": self.told, "history": self.history, "probe": self.probe,
                "history_probes_parsed": list(self.parsed)}  # fmt: skip

    def describe(self) -> str:
        return (f"The tool instructions tell the model to write calls as the `{self.format}` format "
                f"({self.told!r}), but the template writes calls in history as {self.history!r} ({self.probe}): "
                f"{self.parsed[0]} of {self.parsed[1]} history probes with calls parse with what the model is told.")  # fmt: skip


@dataclass
class Choice:
    """The candidate taken (None: the draft keeps what it read off the history), the match, a
    disagreement, and notes on formats seen but not verified (with the limits they meet)."""

    candidate: Candidate | None = None
    match: Match | None = None
    disagreement: Disagreement | None = None
    notes: list[str] = field(default_factory=list)
    limits: list[str] = field(default_factory=list)


def choose(found: list[Candidate], history_calls: bool, turns: list[Turn]) -> Choice:
    """The candidate to offer among `found` (best first); `history_calls`: the draft read a call
    field off the history that parses its probes back."""
    choice = Choice()
    best = next((c for c in found if c.verifies), None)
    # When no format verifies, those the instructions name say why not, and what the spec lacks.
    for candidate in found if best is None else []:
        if "the tool instructions" not in candidate.seen or candidate.history_agrees:
            continue
        why = "; ".join(candidate.failures) or _example_why(candidate) or "no example of it applies here"
        choice.notes.append(f"the `{candidate.format.name}` format's texts appear in the tool instructions, but it "
                            f"does not verify here ({why})")  # fmt: skip
        choice.limits += [f"`{candidate.format.name}`: {limit}" for limit in candidate.format.limits]
        if len(choice.notes) >= 2:
            break
    if best is None:
        return choice
    parsed, shown = best.probes
    # Without calls of its own from the history, the draft takes a format the prompt names, or one
    # that reads some of the history's calls (the rest is what the spec cannot say: Apertus's map of
    # name to arguments with several calls).
    take = best.history_agrees or best.told or (not history_calls and (shown == 0 or parsed > 0))
    if not take:
        return choice
    choice.candidate = best
    choice.match = Match(best.format.name, best.format.title, how(best), list(best.format.limits))
    # The history writes calls in another shape than the model is told (not only argument values
    # in another notation, Seed-OSS's Python lists: the round trip shows those).
    if best.told and shown and best.named < shown:
        turn = next(t for t in turns if t.probe.message.get("tool_calls") and CALL_NAMES[0] in t.output)
        choice.disagreement = Disagreement(best.format.name, best.example.text if best.example else "",
                                           turn.output.strip(), turn.probe.label, best.probes)  # fmt: skip
    return choice


def how(candidate: Candidate) -> list[str]:
    """What a candidate was seen in and parses, in a few phrases."""
    parsed: list[str] = []
    if candidate.example is not None and candidate.example.parses:
        parsed.append("the instruction's example" + (" (its placeholders filled)" if candidate.example.pattern else ""))
    if candidate.examples[1]:
        parsed.append(f"{candidate.examples[0]} of the format's {candidate.examples[1]} examples that apply here")
    if candidate.probes[1]:
        parsed.append(f"{candidate.probes[0]} of the {candidate.probes[1]} history probes with calls")
    listed = ", ".join(parsed[:-1]) + " and " + parsed[-1] if len(parsed) > 1 else parsed[0]
    out = [f"its texts appear in {' and '.join(candidate.seen)}", f"it parses {listed}"]
    if not candidate.examples[1]:
        out.append("none of the format's examples applies here (each writes a field this template does not)")
    return out


def _example_why(candidate: Candidate) -> str:
    example = candidate.example
    if example is None or example.parses:
        return ""
    return f"the instruction's example {example.text[:60]!r} does not parse: {example.why}"


def history_disagreement(chat_template: str | dict, special_tokens: dict, template_kwargs: dict,
                         stop_tokens: list[str]) -> Disagreement | None:  # fmt: skip
    """Whether the history writes calls unlike what the tool instructions tell the model (what the
    check `chat_lint.history_calls` reports): the draft's reading of a few probes with tools offered,
    matched against the library, as `draft_response_template` does."""
    from .build import build
    from .locate import locate
    from .probes import render_turns
    from .told import what_is_told
    from .outcomes import outcomes_of

    turns, failures = render_turns(chat_template, special_tokens, template_kwargs, stop_tokens,
                                   select=lambda p: p.context.name == "tools offered" and p.name in ("content", "a call", "two calls"))  # fmt: skip
    if not any(t.probe.message.get("tool_calls") for t in turns):
        return None
    missing: dict[str, str] = {}
    for turn in turns:
        located = locate(turn)
        turn.spans = located.spans
        for name, why in located.missing.items():
            missing.setdefault(name, why)
    built = build(turns, missing, stop_tokens)
    outcomes = outcomes_of(built.spec, turns, built.left_out)
    found = candidates(built.spec, built.implicit, turns, what_is_told(turns, failures), outcomes)
    return choose(found, False, turns).disagreement
