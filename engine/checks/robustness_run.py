"""The robustness check run on an author's pair (`check_pair_robustness`, one family of `run_checks`)
and on a library format (`check_format_robustness`, `python -m engine formats --check`): the
variants each source gives, judged by `robustness.judge` against the claims."""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from ..cases import Case
from ..response_spec import load_response_spec
from .context import CheckContext
from . import robustness
from .results import CheckResult, Location
from .robustness import NAME, PAIR_CLAIMS, Claims, judge, outcome
from .robustness_outputs import (
    KITCHEN_SINK,
    STRING_ATOMS,
    TYPED_VALUES,
    Variant,
    around_calls,
    call,
    find_slot,
    probe_tool,
    regions,
    repeated_call,
    repeated_calls,
    repeated_in_list,
    respelled,
    rewrapped,
    substituted,
    without_text,
)
from .round_trip import render_turn

if TYPE_CHECKING:
    from ..formats import FormatExample

CALL = {"city": "Paris"}


def literal_delimiters(spec: Mapping) -> list[str]:
    """The literal opens and closes of a response template (what `values.delimiters` writes into values)."""
    out: list[str] = []
    for spec_field in (spec.get("fields") or {}).values():
        for key in ("open", "close"):
            value = spec_field.get(key)
            for text in value if isinstance(value, list) else [value]:
                if isinstance(text, str) and text.strip() and text not in out:
                    out.append(text)
    return out


# ----- the turns the chat template writes -----------------------------------------


class RenderedTurns:
    """Assistant turns as the chat template writes them into history, each rendered once (cached):
    `turn(message)` is (prompt, output) or None when the template refuses it."""

    def __init__(self, render_turn: Callable[[Case, int], Any]):
        self._render_turn = render_turn
        self._cache: dict[str, tuple[str, str] | None] = {}

    def turn(self, message: dict, tools: list | None) -> tuple[str, str] | None:
        key = json.dumps([message, tools], sort_keys=True, ensure_ascii=False)
        if key not in self._cache:
            self._cache[key] = None
            # As the built-in conversations are fitted: a template that reads `content` on every message
            # gets an empty one; one that concatenates arguments gets them as a JSON string.
            for written in _adapted(message):
                case = Case("robustness", [{"role": "user", "content": "What is the weather in Paris?"}, written],
                            tools=copy.deepcopy(tools))  # fmt: skip
                turn = self._render_turn(case, 1)
                if hasattr(turn, "output"):
                    self._cache[key] = (turn.prompt, turn.output)
                    break
        return self._cache[key]

    def variant(self, variation: str, what: str, message: dict) -> Variant | None:
        arguments = [c["function"]["arguments"] for c in message.get("tool_calls") or []]
        tools = [probe_tool({k: v for a in arguments for k, v in a.items()})]
        written = self.turn(message, tools)
        if written is None:
            return None
        return Variant(variation, what, written[0], written[1], message, tools)


def _adapted(message: dict) -> list[dict]:
    """The message, then with an empty content, then with arguments as JSON strings too."""
    out = [copy.deepcopy(message)]
    if "content" not in message:
        out.append({**copy.deepcopy(message), "content": ""})
    if message.get("tool_calls"):
        stringed = copy.deepcopy(out[-1])
        for tool_call in stringed["tool_calls"]:
            tool_call["function"]["arguments"] = json.dumps(tool_call["function"]["arguments"], ensure_ascii=False)
        out.append(stringed)
    return out


def values_message(arguments: dict, calls: int = 1, content: str | None = None, reasoning: str | None = None,
                   with_ids: bool = True) -> dict:  # fmt: skip
    """An assistant message with `calls` calls of `arguments` (and content, reasoning when given)."""
    message: dict = {"role": "assistant"}
    if reasoning:
        message["reasoning_content"] = reasoning
    if content is not None:
        message["content"] = content
    if calls:
        message["tool_calls"] = [call(copy.deepcopy(arguments), i, with_ids) for i in range(calls)]
    return message


# ----- an author's pair ------------------------------------------------------------------------------


def check_pair_robustness(ctx: CheckContext, claims: Claims | None = None, budget: float | None = None) -> list[CheckResult]:
    """Variants of what the chat template writes, parsed with the response template. Claims: the
    library format whose response template this is, else what the chat template itself writes.
    `budget`: seconds (default `robustness.BUDGET_SECONDS`, read when called)."""
    deadline = time.process_time() + (budget if budget is not None else robustness.BUDGET_SECONDS)
    claims = claims or pair_claims(ctx.spec)
    turns = RenderedTurns(lambda case, index: render_turn(ctx, case, index))
    fields = ctx.fields
    template = ctx.template
    variants: list[Variant] = []
    compared: set[str] = set()
    call_fields: frozenset | None = None
    content = turns.variant("base", "an answer", {"role": "assistant", "content": "It is sunny in Paris."})
    if content is not None and outcome(template, content, lambda n: n == "content") is None:
        compared.add("content")
    calls = fields is not None and fields.reads("tool_calls")
    base = turns.variant("base", "one call", values_message(CALL)) if calls else None
    plain = outcome(template, base, lambda n: n == "tool_calls") if base is not None else None
    if base is not None and plain is None:
        compared.add("tool_calls")
        # The fields a turn with calls is held to: the calls, and the rest where the plain call's turn
        # parses back whole (Command R+'s turn with calls runs into the instruction turn the template
        # appends, which no model writes: only its calls are compared).
        whole = outcome(template, base, lambda n: True) is None
        with_calls = _pair_values(turns, ctx.spec, ctx.turn_end_tokens()) + _pair_counts(turns, base)
        two = turns.variant("base", "two calls", values_message(CALL, 2))
        around = around_calls(template, base, two, ctx.turn_end_tokens(), _turn_ends(ctx.spec), _content_wrap(ctx.spec))
        with_calls += [v for v in around if whole or not v.variation.startswith("text.")]
        with_calls += [v for text in claims.optional if (v := without_text(base, text)) is not None]
        with_calls += [v for pair in claims.wrappers if (v := rewrapped(template, base, pair)) is not None]
        with_calls += [v for spelling in claims.respellings if (v := respelled(base, spelling)) is not None]
        call_fields = None if whole else frozenset({"tool_calls"})
        for variant in with_calls:
            if variant.expected.get("tool_calls"):
                variant.fields = call_fields
        variants += with_calls
    if (base is None or plain is not None) and content is not None and "content" in compared:
        variants += around_calls(template, content, None, ctx.turn_end_tokens(), _turn_ends(ctx.spec))
    # Reasoning is varied where the response template reads it (a field left out is the round trip's to say).
    if fields is not None and fields.reads("reasoning_content") and "reasoning_content" in (ctx.spec.get("fields") or {}):
        variants += _pair_reasoning(turns, template, calls and "tool_calls" in compared)
    if plain is not None:  # the plain call does not parse: every variant of it would fail alike
        variants = [v for v in variants if "tool_calls" not in v.expected]
        note = CheckResult(NAME, "info", f"Calls not varied: a plain call the chat template writes does not parse back "
                           f"(the round trip shows it):\n  {plain.problem}", ctx.field_location(plain.field))  # fmt: skip
    if not variants:
        if plain is not None:
            return [note]
        if compared:
            return []  # a plain answer that ends with no end token: nothing to vary
        return [CheckResult(NAME, "info", "Not run: the chat template renders no assistant message this check can vary (a "
                            "plain answer or call that does not parse back is a round_trip.message failure).")]  # fmt: skip
    # Reasoning is compared where a plain answer parses back (then it must stay absent, or be what was written).
    compared_fields = compared | ({"reasoning_content"} if "content" in compared else set())
    results = judge(template, variants, claims, deadline, compared=lambda name: name in compared_fields,
                    shrinkers={"values.strings": lambda value: _pair_value(turns, value, call_fields)},
                    locate=lambda name: ctx.field_location(name))  # fmt: skip
    return ([note] if plain is not None else []) + [template_fault(r) for r in results]


# How a chat template writes a value no parser reads back: a Python literal (None, True, {'key': …})
# where models write JSON, or a quote inside a string quoted with it, left unescaped.
_PYTHON_LITERALS = (":·None", "=None", ":None", "{'", "['", ":·True", ":True", "=True", ":·False", ":False")
_UNESCAPED = ("'" * 3, '"' * 3)


def template_fault(result: CheckResult) -> CheckResult:
    """A value variation that breaks because the chat template writes the value in a form no parser
    reads is the chat template's to fix: a warning there, not a failure of the response template
    (chat_lint.print_without_tojson often says the same)."""
    if result.status != "fail" or not result.name.startswith("robustness.values"):
        return result
    shown = result.details.split("The smallest output that breaks", 1)[-1].split("\n")
    output = shown[1] if len(shown) > 1 else ""
    why = None
    if any(literal in output for literal in _PYTHON_LITERALS):
        why = "writes the value as a Python literal (None, True, {'key': …}), which a JSON reader does not read"
    elif any(quotes in output for quotes in _UNESCAPED):
        why = "writes a quote inside a string quoted with it, unescaped"
    if why is None:
        return result
    return CheckResult(result.name, "warn", f"The chat template {why}: a model trained on this history may write it so, "
                       f"and no parser reads it back.\n{result.details}", Location("chat_template"), result.subject)  # fmt: skip


def pair_claims(spec: Mapping) -> Claims:
    """The claims a pair is held to: a library format's, when the response template is one, else
    what the chat template writes (`PAIR_CLAIMS`)."""
    from ..formats import claims_for_template  # the library sits below the checks; imported when asked

    found = claims_for_template(spec)
    if found is not None:
        name, data = found
        return Claims.from_json(data, f"the library format `{name}`")
    return Claims(PAIR_CLAIMS)


def _pair_value(turns: RenderedTurns, value: Any, fields: frozenset | None = None) -> Variant | None:
    variant = turns.variant("values.strings", f"the string argument {value!r}", values_message({"city": value}))
    if variant is not None:
        variant.value, variant.fields = value, fields
    return variant


def _pair_counts(turns: RenderedTurns, base: Variant) -> list[Variant]:
    """No call, 2 and 5 calls, where the template writes them all (gpt-oss writes one call a message)."""
    out = []
    for count in (0, 2, 5):
        message = values_message(CALL, count, content="It is sunny in Paris." if not count else None)
        variant = turns.variant("calls.count", f"{count} calls", message)
        if variant is not None and (count == 0 or len(variant.output) > len(base.output) * (count - 0.5)):
            out.append(variant)
    return out


def _pair_values(turns: RenderedTurns, spec: Mapping, end_tokens: list[str]) -> list[Variant]:
    out = []
    for atom in (*STRING_ATOMS, KITCHEN_SINK):
        value = f"a{atom}b" if atom != KITCHEN_SINK else atom
        if (v := _pair_value(turns, value)) is not None:
            v.what = f"a string argument holding {atom!r}"
            out.append(v)
    for delimiter in [d for d in literal_delimiters(spec) if d not in end_tokens]:  # a model stops at its end token
        v = turns.variant("values.delimiters", f"a string argument holding {delimiter!r}", values_message({"city": f"a{delimiter}b"}))
        out += [v] if v is not None else []
    for what, key, value in TYPED_VALUES:
        v = turns.variant("values.typed", f"{what} as an argument", values_message({key: value}))
        out += [v] if v is not None else []
    v = turns.variant("values.typed", "a call without arguments", values_message({}))
    return out + ([v] if v is not None else [])


def _pair_reasoning(turns: RenderedTurns, template: Any, with_calls: bool) -> list[Variant]:
    """Reasoning on (before an answer, before a call) where the template writes it in this turn."""
    out = []
    plain = {"role": "assistant", "content": "It is sunny in Paris."}
    messages = [("reasoning before an answer", {**plain, "reasoning_content": "The user asks about Paris."})]
    if with_calls:
        messages.append(("reasoning before a call", values_message(CALL, reasoning="I should call get_weather.")))
    for what, message in messages:
        variant = turns.variant("reasoning", what, message)
        without = turns.turn({k: v for k, v in message.items() if k != "reasoning_content"}, variant.tools) if variant else None
        if variant is not None and without is not None and without[1] != variant.output:  # the template writes it here
            out.append(variant)
    return out


# ----- a library format ------------------------------------------------------------------------------


def format_claims(fmt: Any) -> Claims:
    """What a library format claims its models write (its `format.json` `variations`)."""
    return Claims.from_json(fmt.variations, f"the library format `{fmt.name}`")


def check_library_format(fmt: Any, budget: float | None = None) -> list[CheckResult]:
    """The robustness check of one library format against its own claims."""
    return check_format_robustness(fmt.response_template_text, fmt.examples, format_claims(fmt), budget)


def check_format_robustness(response_template: str | Mapping, examples: Iterable[FormatExample], claims: Claims,
                            budget: float | None = None) -> list[CheckResult]:  # fmt: skip
    """Variants of a format's examples (values substituted, a call repeated, the text around the
    calls varied), parsed with its response template and judged against its claims."""
    text = response_template if isinstance(response_template, str) else json.dumps(dict(response_template), indent=2)
    loaded = load_response_spec(text)
    if not loaded.ok:
        return [CheckResult(NAME, "fail", f"Not run: the response template does not load: {loaded.diagnostics[0].message}")]
    deadline = time.process_time() + (budget if budget is not None else robustness.BUDGET_SECONDS)
    ctx = CheckContext(chat_template="", response_text=text, spec=loaded.spec or {}, template=loaded.template,  # type: ignore[arg-type]
                       cases=[], samples=[])  # fmt: skip
    examples = list(examples)
    variants = format_variants(ctx, examples, claims)
    if not variants:
        return [CheckResult(NAME, "info", "Not run: no example has a call with a string argument to vary.")]
    slot_example = next(e for e in _by_calls(examples) if find_slot(e))
    slot = find_slot(slot_example)
    return judge(ctx.template, variants, claims, deadline,
                 shrinkers={"values.strings": lambda value: _with_value(substituted(slot, value, "values.strings", f"the string argument {value!r}"), value)},
                 locate=lambda name: ctx.field_location(name))  # fmt: skip


def format_variants(ctx: CheckContext, examples: list[FormatExample], claims: Claims) -> list[Variant]:
    """Every variant of a format's examples."""
    with_slot = [e for e in _by_calls(examples) if find_slot(e) is not None]
    if not with_slot:
        return []
    example = with_slot[0]
    slot = find_slot(example)
    assert slot is not None
    out: list[Variant] = []
    for atom in (*STRING_ATOMS, KITCHEN_SINK):
        value = f"a{atom}b" if atom != KITCHEN_SINK else atom
        out.append(_with_value(substituted(slot, value, "values.strings", f"a string argument holding {atom!r}"), value))
    for delimiter in literal_delimiters(ctx.spec):
        out.append(substituted(slot, f"a{delimiter}b", "values.delimiters", f"a string argument holding {delimiter!r}"))
    for what, _, value in TYPED_VALUES:
        out.append(substituted(slot, value, "values.typed", f"{what} as an argument"))
    base = _variant(example)
    # An example with two call regions (exactly two first: what a repeat of its first call extends).
    counted = [(len(regions(ctx.template, _variant(e)).calls), e) for e in _by_size(examples)]
    two = next((_variant(e) for n, e in sorted(counted, key=lambda c: c[0] != 2) if n >= 2), None)
    tool_field = (ctx.spec.get("fields") or {}).get("tool_calls") or {}
    if tool_field.get("repeats") and two is not None:
        out += [v for count in (3, 5) if (v := repeated_calls(ctx.template, two, count)) is not None]
    elif tool_field.get("repeats"):
        out += [v for count in (2, 5) if (v := repeated_call(ctx.template, base, count, "\n")) is not None]
    else:  # every call in one list: the list's one item written again
        out += [v for count in (2, 5) if (v := repeated_in_list(ctx.template, base, count)) is not None]
    out += around_calls(ctx.template, base, two, [], turn_ends=_turn_ends(ctx.spec), wrap=_content_wrap(ctx.spec))
    for text in claims.optional:
        out += [v for e in examples if (v := without_text(_variant(e), text)) is not None][:2]
    out += [v for pair in claims.wrappers if (v := rewrapped(ctx.template, base, pair)) is not None]
    # Another spelling is tried on the first example (calls first) that writes every text it respells.
    for spelling in claims.respellings:
        out += [v for e in _by_calls(examples) if (v := respelled(_variant(e), spelling)) is not None][:1]
    return out


def _content_wrap(spec: Mapping) -> tuple[str, str]:
    """The content field's own literal open and close, when it has them (text is written inside)."""
    content = (spec.get("fields") or {}).get("content") or {}
    opens, closes = content.get("open"), content.get("close")
    first = [v[0] if isinstance(v, list) and v else v for v in (opens, closes)]
    return (first[0], first[1]) if all(isinstance(v, str) and v for v in first) else ("", "")


def _turn_ends(spec: Mapping) -> list[str]:
    """The texts that end a turn: the closes of the implicit field (the one with no open)."""
    for spec_field in (spec.get("fields") or {}).values():
        if "open" not in spec_field and "open_pattern" not in spec_field:
            close = spec_field.get("close")
            return [c for c in (close if isinstance(close, list) else [close]) if isinstance(c, str)]
    return []


def _variant(example: FormatExample) -> Variant:
    return Variant("base", example.name, example.prefix or "", example.output, example.expected(), example.tool_list())


def _with_value(variant: Variant, value: Any) -> Variant:
    variant.value = value
    return variant


def _one_call(example: FormatExample) -> bool:
    return len(example.expected().get("tool_calls") or []) == 1


def _by_calls(examples: Iterable[FormatExample]) -> list[FormatExample]:
    """Examples with calls, those with one call first, each kind shortest first."""
    with_calls = [e for e in examples if e.expected().get("tool_calls")]
    return sorted(with_calls, key=lambda e: (not _one_call(e), len(e.output)))


def _by_size(examples: Iterable[FormatExample]) -> list[FormatExample]:
    return sorted(examples, key=lambda e: len(e.output))
