"""Built-in conversations that fit the template. Real templates insist on things a generic
conversation does not have: Mistral wants tool-call ids of 9 alphanumerics, Gemma refuses a system
message, Hermes and Command R+ need tools, Functionary wants arguments as a JSON string, QwQ reads
`content` on a tool-call message, SmolVLM reads content only as a list of parts. A template that
reads content parts also gets a conversation with a picture and a question as parts. A built-in case the template refuses is adapted (the common
variants are tried, fewest changes first) and what the template requires is reported as `info`.
Only a conversation the author gave that does not render is a failure."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from itertools import combinations, cycle

from ..cases import Case
from ..content_parts import as_parts, drops_string_text
from ..diagnostics import Diagnostic
from ..error_place import undefined_name
from ..render import REFUSAL, special_token_advice
from .context import CheckContext, parts_case
from .results import CheckResult, Location

NAME = "template.requires"
# Tool-call ids as Mistral's templates demand them (9 alphanumerics); any template takes them.
CALL_IDS = ("Ab3dE6gH9", "Jk2mN5pQ8", "Rs4tU7vW1", "Xy6zA9bC2")


@dataclass(frozen=True)
class Variant:
    """One way to adapt a conversation, and what needing it says about the template."""

    name: str
    requirement: str
    apply: Callable[[Case, list[dict] | None], Case]


def _calls(case: Case) -> list[dict]:
    return [call for m in case.messages if m.get("role") == "assistant" for call in (m.get("tool_calls") or []) if isinstance(call, dict)]


def _with_ids(case: Case, tools: list[dict] | None) -> Case:
    messages = copy.deepcopy(case.messages)
    ids = cycle(CALL_IDS)  # a parsed output may hold any number of calls
    pending: list[str] = []
    for message in messages:
        if message.get("role") == "assistant":
            for call in message.get("tool_calls") or []:
                if not isinstance(call, dict):  # a response template may parse calls as strings
                    continue
                call["id"] = next(ids)
                pending.append(call["id"])
        elif message.get("role") == "tool" and pending:
            message["tool_call_id"] = pending.pop(0)
    return replace(case, messages=messages)


def _string_arguments(case: Case, tools: list[dict] | None) -> Case:
    messages = copy.deepcopy(case.messages)
    for message in messages:
        for call in message.get("tool_calls") or []:
            function = call.get("function", {})
            if not isinstance(function.get("arguments"), str):
                function["arguments"] = json.dumps(function.get("arguments", {}), ensure_ascii=False)
    return replace(case, messages=messages)


def _content_everywhere(case: Case, tools: list[dict] | None) -> Case:
    messages = [m if "content" in m else {**m, "content": ""} for m in copy.deepcopy(case.messages)]
    return replace(case, messages=messages)


def _no_system(case: Case, tools: list[dict] | None) -> Case:
    messages = copy.deepcopy(case.messages)
    system = [m for m in messages if m.get("role") == "system"]
    rest = [m for m in messages if m.get("role") != "system"]
    if system and rest and rest[0].get("role") == "user":
        rest[0]["content"] = "\n\n".join([*(str(m.get("content", "")) for m in system), str(rest[0].get("content", ""))])
    return replace(case, messages=rest)


def _with_tools(case: Case, tools: list[dict] | None) -> Case:
    return case if case.tools or not tools else replace(case, tools=copy.deepcopy(tools))


def _as_parts(case: Case, tools: list[dict] | None) -> Case:
    return replace(case, messages=[as_parts(m) for m in copy.deepcopy(case.messages)])


VARIANTS = (
    Variant("tools", "needs tools to be offered (the built-in conversation without tools was refused)", _with_tools),
    Variant("no_system", "refuses a system message (the built-in case's system prompt was moved into the first user message)", _no_system),
    Variant("ids", f"requires tool-call ids of 9 alphanumerics (such as {CALL_IDS[0]!r}, as Mistral's templates demand)", _with_ids),
    Variant("string_arguments", "requires tool-call arguments as a JSON string, not an object", _string_arguments),
    Variant("content", "reads `content` on every message (a tool-call message needs one, even empty)", _content_everywhere),
    Variant("parts", "reads `content` only as a list of parts (text given as a string does not reach the prompt)", _as_parts),
)


def variant(name: str) -> Variant:
    return next(v for v in VARIANTS if v.name == name)


def _applicable(case: Case, tools: list[dict] | None, reads_parts: bool) -> list[Variant]:
    out = []
    for variant in VARIANTS:
        if variant.name == "parts" and not (reads_parts and any(isinstance(m.get("content"), str) for m in case.messages)):
            continue
        if variant.name == "tools" and (case.tools or not tools):
            continue
        if variant.name == "no_system" and not any(m.get("role") == "system" for m in case.messages):
            continue
        if variant.name in ("ids", "string_arguments") and not _calls(case):
            continue
        if variant.name == "content" and all("content" in m for m in case.messages):
            continue
        out.append(variant)
    return out


def render_problem(ctx: CheckContext, case: Case) -> Diagnostic | None:
    """The first render the checks need that fails for this case (None: the case fits): the whole
    conversation, and every assistant turn with and without what precedes it."""
    attempts = [(case.messages, case.add_generation_prompt)]
    for index, message in enumerate(case.messages):
        if message.get("role") == "assistant":
            attempts.append((case.messages[: index + 1], False))
            if index:
                attempts.append((case.messages[:index], True))
    for messages, generation_prompt in attempts:
        result = ctx.render(case, messages, add_generation_prompt=generation_prompt, continue_final_message=False)
        if not result.ok:
            return result.diagnostics[0] if result.diagnostics else Diagnostic("error", "unknown error", "chat_template")
    return None


def fit_problem(ctx: CheckContext, case: Case) -> Diagnostic | None:
    """Why the case does not fit (None: it fits): a render it needs fails, or the template reads
    content only as parts and none of the text the case gives as strings reaches the prompt."""
    problem = render_problem(ctx, case)
    if problem is None and ctx.reads_parts and drops_string_text(case.messages, ctx.render(case).prompt):
        return Diagnostic("info", "the text given as strings does not reach the prompt", "chat_template")
    return problem


def fit_cases(ctx: CheckContext, cases: list[Case]) -> tuple[list[Case], list[CheckResult]]:
    """The built-in cases, each adapted until the template renders it, and `info` results saying
    what the template requires; with a template that reads content parts, the built-in conversation
    with parts too. A case no variant fits is left out, with why."""
    tools = next((c.tools for c in cases if c.tools), None)
    fitted: list[Case] = []
    results: list[CheckResult] = []
    left_out: list[Diagnostic] = []
    if ctx.reads_parts:
        cases = [*cases, parts_case()]
    for case in cases:
        problem = fit_problem(ctx, case)
        if problem is None:
            fitted.append(case)
            continue
        found = _search(ctx, case, tools)
        if found is not None:
            adapted, used = found
            fitted.append(adapted)
            for variant in used:
                results.append(CheckResult(
                    NAME, "info",
                    f"The chat template {variant.requirement}. Built-in case {case.name!r} was adapted; it first "
                    f"failed with: {problem.message}",
                    subject=f"case {case.name!r}",
                ))  # fmt: skip
            continue
        # Not a judgement on the template: a generic conversation may simply not be one it is for.
        results.append(CheckResult(
            NAME, "info",
            f"Built-in case {case.name!r} does not fit this chat template, even adapted ({problem.message}); it is "
            "left out. Give cases of your own (--cases) to check with conversations the template accepts.",
            subject=f"case {case.name!r}",
        ))  # fmt: skip
        left_out.append(problem)
    if cases and not fitted:
        results.append(_nothing_fits(left_out))
    return fitted, results


def _search(ctx: CheckContext, case: Case, tools: list[dict] | None) -> tuple[Case, tuple[Variant, ...]] | None:
    """The smallest combination of variants under which the case renders."""
    variants = _applicable(case, tools, ctx.reads_parts)
    for size in range(1, len(variants) + 1):
        for combo in combinations(variants, size):
            adapted = case
            for variant in combo:
                adapted = variant.apply(adapted, tools)
            if fit_problem(ctx, adapted) is None:
                return adapted, combo
    return None


def _nothing_fits(problems: list[Diagnostic]) -> CheckResult:
    """No built-in conversation renders, so nothing else is checked. A template that refuses them all
    with raise_exception may be made for other conversations, and one that reads a variable nobody
    passed may need a template kwarg (FireFunction's `functions`): warnings that say what to give. One
    that fails on them with another error of its own code (a filter transformers does not have, a
    type error) fails with apply_chat_template too, on the plainest exchange: a failure, at its place."""
    bug = next((p for p in problems if p.severity == "error" and not p.message.startswith(REFUSAL)), None)
    unpassed = undefined_name(bug.message) if bug is not None else None
    if bug is not None and unpassed is None:
        where = Location("chat_template", bug.line, bug.column) if bug.source == "chat_template" and bug.line else None
        return CheckResult("template.renders", "fail", f"No built-in conversation renders, not even a plain exchange: "
                           f"{bug.message}", where)  # fmt: skip
    if unpassed is not None:
        name = unpassed
        give = special_token_advice(name) or (f"If it is a template kwarg, give it (--template-kwargs "
                                              f"'{{\"{name}\": …}}'); if it is a typo, fix it.")
        return CheckResult(NAME, "warn", f"No built-in conversation renders: the chat template reads `{name}`, which "
                           f"is not passed, so the other checks had nothing to check. {give}",
                           Location("chat_template", bug.line, bug.column) if bug.line else None)  # fmt: skip
    return CheckResult(NAME, "warn", "No built-in conversation fits this chat template (it refuses each of them, "
                       "even adapted), so the other checks had nothing to check. Give cases of your own (--cases).")

