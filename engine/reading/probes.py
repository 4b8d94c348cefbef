"""Probes: conversations whose last assistant message carries a unique sentinel in each field, rendered
with the chat template. What follows the prompt in each rendering is what the model would have
written for that message; the sentinels say where each field went.

Contexts: no tools, tools offered, right after a tool result; with thinking on and off when the
template reads a thinking switch. Primary probes (one field shape each) are what delimiters are read
from; secondary probes (content next to calls) are only verified."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..content_parts import as_parts
from ..diagnostics import Diagnostic
from ..render import render
from ..transformers_compat import template_variables
from ..turns import reply_after, up_to_stop

# Sentinels: plain words (nothing a template escapes or trims), unlikely in any template.
USER = "Zqu user question"
CONTENT = "Zqa answer text"
REASONING = "Zqr reasoning text"
RESULT = "Zqt tool result"
CALL_NAMES = ("zq_lookup", "zq_second")
# Arguments of several JSON types, so the draft sees how each is written (and the parser types them back).
ARGUMENTS = (
    {"zq_text": "Zq text arg", "zq_int": 17, "zq_num": 2.5, "zq_flag": True, "zq_list": ["zq item", 3],
     "zq_obj": {"zq_key": "zq value"}},
    {"zq_text": "Zq second arg"},
)  # fmt: skip
# Nine letters and digits: the id shape Mistral's templates insist on.
CALL_IDS = ("zqcall001", "zqcall002")
SENTINELS = {"content": CONTENT, "reasoning_content": REASONING}
# Text that shows a field went somewhere it should not (a left-out field's text in content).
MARKS = {**SENTINELS, "tool_calls": ARGUMENTS[0]["zq_text"]}
FIELDS = ("reasoning_content", "tool_calls", "content")

# The kwargs templates take to switch thinking on and off.
THINKING_KWARGS = ("enable_thinking", "thinking")

_SCHEMAS = {
    "zq_text": {"type": "string"}, "zq_int": {"type": "integer"}, "zq_num": {"type": "number"},
    "zq_flag": {"type": "boolean"}, "zq_list": {"type": "array", "items": {"type": ["string", "integer"]}},
    "zq_obj": {"type": "object", "additionalProperties": {"type": "string"}},
}  # fmt: skip


def tool_schema(index: int) -> dict:
    # Every property described: some templates print each description unguarded.
    properties = {key: {**_SCHEMAS[key], "description": f"A probe argument ({key[3:]})."} for key in ARGUMENTS[index]}
    return {
        "type": "function",
        "function": {
            "name": CALL_NAMES[index],
            "description": "A probe tool.",
            "parameters": {"type": "object", "properties": properties, "required": ["zq_text"]},
        },
    }


TOOLS = [tool_schema(0), tool_schema(1)]


def call(index: int) -> dict:
    return {"id": CALL_IDS[index], "type": "function",
            "function": {"name": CALL_NAMES[index], "arguments": copy.deepcopy(ARGUMENTS[index])}}  # fmt: skip


@dataclass
class Context:
    """The conversation a probe reply follows: its messages, tools and template kwargs."""

    name: str
    messages: list[dict]
    tools: list[dict] | None
    kwargs: dict
    thinking: bool = True
    last_sentinel: str = USER  # the text of the last message, after which the prompt's tail starts
    parts: bool = False  # messages' text given as content parts (a template that reads only parts)
    prompt: str = ""  # the conversation rendered with the generation prompt (once rendered)
    header: str = ""  # ... its generation prompt ("" when the template adds none)


@dataclass
class Probe:
    """One assistant message to render after a context."""

    name: str
    context: Context
    message: dict
    primary: bool = True

    @property
    def label(self) -> str:
        return f"{self.name} ({self.context.name})"

    @property
    def phrase(self) -> str:
        """The probe as a sentence names it: “content and a call” (tools offered)."""
        return f"“{self.name}” ({self.context.name})"


@dataclass
class Turn:
    """A rendered probe: the prompt (with its generation prompt), the text the model would write
    after it, and `text`: the prompt's tail after the last message's sentinel, then that output.
    Positions in the draft are positions in `text`; the output starts at `offset`."""

    probe: Probe
    prompt: str
    header: str  # the generation prompt ("" when the template adds none, or ignores the flag)
    tail: str
    output: str
    note: Diagnostic | None = None
    # The conversation as rendered: the context, then the probe message (adapted, see ADAPTATIONS).
    messages: list[dict] = field(default_factory=list)
    adapted: str | None = None
    # What the generation prompt prefills that the history leaves out (the turn is read without it).
    prefilled: str = ""
    spans: list = field(default_factory=list)  # located fields (engine.reading.locate.Span)

    @property
    def message(self) -> dict:
        """The assistant message as rendered."""
        return self.messages[-1]

    @property
    def text(self) -> str:
        return self.tail + self.output

    @property
    def offset(self) -> int:
        return len(self.tail)

    @property
    def header_start(self) -> int:
        """Where the generation prompt starts in `text` (0 when there is none)."""
        return max(0, len(self.tail) - len(self.header)) if self.header else 0


@dataclass
class Failure:
    """A probe the chat template could not render, and why."""

    probe: Probe
    message: str


def thinking_kwarg(chat_template: str | dict) -> str | None:
    """The thinking switch the template reads, if any."""
    sources = chat_template.values() if isinstance(chat_template, dict) else [chat_template]
    names: set[str] = set()
    for source in sources:
        try:
            names |= template_variables(source)
        except Exception:  # noqa: BLE001 - a syntax error shows up when rendering
            pass
    return next((name for name in THINKING_KWARGS if name in names), None)


def contexts(switch: str | None, kwargs: dict) -> list[Context]:
    """Every context to probe: no tools, tools offered, after a tool result; each again with thinking
    off when the template has a switch."""
    user = {"role": "user", "content": USER}
    result = [
        user,
        {"role": "assistant", "tool_calls": [call(0)]},
        {"role": "tool", "tool_call_id": CALL_IDS[0], "name": CALL_NAMES[0], "content": RESULT},
    ]
    out = []
    for thinking in (True, False) if switch else (True,):
        settings = {**kwargs, **({switch: thinking} if switch else {})}
        suffix = "" if thinking else ", thinking off"
        out += [
            Context("no tools" + suffix, [user], None, settings, thinking),
            Context("tools offered" + suffix, [user], TOOLS, settings, thinking),
            Context("after a tool result" + suffix, result, TOOLS, settings, thinking, RESULT),
        ]
    return out


def probes_for(context: Context) -> list[Probe]:
    """The assistant messages to probe after `context`: reasoning only with thinking on, calls only
    with tools offered; content next to calls is verified, never read for delimiters."""
    reasoning = {"reasoning_content": REASONING} if context.thinking else {}
    out = [Probe("content", context, {"role": "assistant", "content": CONTENT})]
    if reasoning:
        out.append(Probe("reasoning and content", context, {"role": "assistant", **reasoning, "content": CONTENT}))
    if context.tools is not None:
        out.append(Probe("a call", context, {"role": "assistant", "tool_calls": [call(0)]}))
        if reasoning:
            out.append(Probe("reasoning and a call", context, {"role": "assistant", **reasoning, "tool_calls": [call(0)]}))
        if context.last_sentinel == USER:
            out.append(Probe("two calls", context, {"role": "assistant", "tool_calls": [call(0), call(1)]}))
            out.append(Probe("content and a call", context,
                             {"role": "assistant", "content": CONTENT, "tool_calls": [call(0)]}, primary=False))  # fmt: skip
    return out


def render_turns(
    chat_template: str | dict, special_tokens: dict, kwargs: dict, stop_tokens: list[str],
    select: Callable[[Probe], bool] | None = None,
) -> tuple[list[Turn], list[Failure]]:
    """Render every probe (or those `select` keeps; a context none of whose probes it keeps is not
    rendered). A probe the template refuses (raise_exception, an error) is a failure with the
    template's message, not an error of the draft."""
    turns: list[Turn] = []
    failures: list[Failure] = []
    for context in contexts(thinking_kwarg(chat_template), kwargs):
        probes = [p for p in probes_for(context) if select is None or select(p)]
        if not probes:
            continue

        def draw(messages: list[dict], generation: bool) -> tuple[Any, str | None]:
            return _render_adapted(chat_template, messages, context, generation, special_tokens)

        prompt, adapted = draw(context.messages, True)
        if prompt.ok and context.last_sentinel not in prompt.prompt:
            # A template that reads content only as parts (SmolVLM's) drops text given as a string:
            # the conversation and every probe as text parts.
            parted, _ = draw([as_parts(m) for m in context.messages], True)
            if parted.ok and context.last_sentinel in parted.prompt:
                context.messages, context.parts, prompt = [as_parts(m) for m in context.messages], True, parted
        if not prompt.ok:
            failures += [Failure(p, _first(prompt.diagnostics)) for p in probes]
            continue
        if adapted:
            context.messages = [ADAPTATIONS[adapted](m) for m in context.messages]
        without, _ = draw(context.messages, False)
        # The generation prompt: what the prompt adds to the conversation rendered without it.
        header = prompt.prompt[len(without.prompt) :] if without.ok and prompt.prompt.startswith(without.prompt) else ""
        context.prompt, context.header = prompt.prompt, header
        at = prompt.prompt.rfind(context.last_sentinel)
        if at < 0:
            failures += [Failure(p, "the prompt does not contain the last message's text, so the turn cannot be found")
                         for p in probes]  # fmt: skip
            continue
        tail = prompt.prompt[at + len(context.last_sentinel) :]
        for probe in probes:
            messages = [*context.messages, as_parts(probe.message) if context.parts else probe.message]
            history, adapted = draw(messages, False)
            if not history.ok:
                failures.append(Failure(probe, _first(history.diagnostics)))
                continue
            if adapted:
                messages = [ADAPTATIONS[adapted](m) for m in messages]
            turn = Turn(probe, prompt.prompt, header, tail, "", messages=messages, adapted=adapted)
            reply = reply_after(prompt.prompt, history.prompt, header or None)
            if reply.diagnostic is not None and reply.diagnostic.severity == "warning":
                # The history leaves out what the generation prompt prefills (a "<think>\n" that
                # history drops): read the turn as the history writes it, from where the two part.
                start = len(history.prompt) - len(reply.text)
                cut = len(prompt.prompt) - start
                if cut > len(tail):
                    failures.append(Failure(probe, "the history renders the earlier conversation differently from the prompt"))
                    continue
                turn.prompt, turn.tail, turn.prefilled = prompt.prompt[:start], tail[: len(tail) - cut], prompt.prompt[start:]
                turn.header = header[: max(0, len(header) - cut)]
            turn.output = up_to_stop(reply.text, stop_tokens)
            turn.note = reply.diagnostic
            turns.append(turn)
    return turns, failures


def _with_content(message: dict) -> dict:
    """The same message with an empty content, for templates that read message.content unguarded."""
    return {**message, "content": ""} if message.get("role") == "assistant" and "content" not in message else message


def _with_string_arguments(message: dict) -> dict:
    """The same message with its calls' arguments as JSON strings, for templates that concatenate them
    (the OpenAI wire format)."""
    if not message.get("tool_calls"):
        return message
    calls = [{**c, "function": {**c["function"], "arguments": _json_text(c["function"]["arguments"])}} for c in message["tool_calls"]]
    return {**message, "tool_calls": calls}


# What a probe message may need before a template takes it, each tried in turn when rendering fails.
ADAPTATIONS = {
    "an empty content": _with_content,
    "arguments as a JSON string": _with_string_arguments,
    "an empty content and arguments as a JSON string": lambda m: _with_string_arguments(_with_content(m)),
}


def _render_adapted(chat_template: str | dict, messages: list[dict], context: Context, generation: bool,
                    special_tokens: dict) -> tuple[Any, str | None]:  # fmt: skip
    """Render `messages`; when the template fails, again with each adaptation of them (the result,
    and the adaptation that made it render)."""

    def draw(candidate: list[dict]) -> Any:
        return render(chat_template, copy.deepcopy(candidate), context.tools, add_generation_prompt=generation,
                      template_kwargs=context.kwargs, special_tokens=special_tokens)  # fmt: skip

    result = draw(messages)
    if result.ok or not any(m.get("role") == "assistant" for m in messages):
        return result, None
    for name, adapt in ADAPTATIONS.items():
        adapted = [adapt(m) for m in messages]
        if adapted == messages:
            continue
        again = draw(adapted)
        if again.ok:
            return again, name
    return result, None


def _first(diagnostics: list[Diagnostic]) -> str:
    return diagnostics[0].message if diagnostics else "the template renders nothing"


def _json_text(arguments: Any) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments)
