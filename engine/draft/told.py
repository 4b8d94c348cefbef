"""What the chat template tells the model besides the history: the tool instructions the prompt
gains when tools are offered (many templates describe the call format there, in words and with an
example: "return a json object … within <tool_call></tool_call> XML tags"), and the generation
prompts. The draft looks for the library's formats in this text, and parses the instruction's
example with each candidate."""

from __future__ import annotations

from dataclasses import dataclass

import regex
from transformers.utils.chat_parsing import parse_response

from ..text import short
from .probes import Context, Failure, Turn
from .text import escape

# An instruction's example is a few lines; a "call" longer than this is prose between two mentions.
_EXAMPLE_CHARS = 800
# A JSON value an instruction writes as a placeholder: `"name": <function-name>`, `"arguments":
# <args-json-object>`, `"name": function name` (Llama 3.1), `"arguments": {arg-key: …}`.
_PLACEHOLDER = regex.compile(
    r'(?P<head>"(?P<key>[^"\\\n]{1,40})"\s*:\s*)'
    r'(?P<value><[^<>\n]{1,80}>|\{[^{}"\n]{1,80}\}|\[[^\[\]"\n]{1,80}\]|[A-Za-z_$][^,{}\[\]"\n]{0,80}?)(?=\s*[,}])'
)
_NAME_KEYS = {"name", "tool_name", "function", "id"}


@dataclass(frozen=True)
class Told:
    """The tool instructions (the prompt with tools offered, up to the user's message: the system
    part, where templates describe the call format, whether or not it depends on the tools) and the
    generation prompts of the probe contexts."""

    instructions: str
    generation_prompts: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        """Everything the model is told besides the history, to look for a format's texts in."""
        return "\n".join((self.instructions, *self.generation_prompts))


@dataclass(frozen=True)
class Example:
    """The call example an instruction writes for a candidate's tool-call field, and what the
    candidate parses it to: `calls` (names; empty when it does not parse), whether placeholders had to
    be filled first (`pattern`), and why not when it does not parse."""

    text: str
    calls: tuple[str, ...] = ()
    pattern: bool = False
    why: str = ""

    @property
    def parses(self) -> bool:
        return bool(self.calls)


def what_is_told(turns: list[Turn], failures: list[Failure] = ()) -> Told:  # type: ignore[assignment]
    """The tool instructions and generation prompts of the rendered probe contexts."""
    contexts: dict[str, Context] = {}
    for probe in [t.probe for t in turns] + [f.probe for f in failures]:
        contexts.setdefault(probe.context.name, probe.context)
    offered = contexts.get("tools offered")
    instructions = ""
    if offered is not None and offered.prompt:
        instructions = offered.prompt[: max(0, offered.prompt.rfind(offered.last_sentinel))]
    headers = tuple(dict.fromkeys(c.header for c in contexts.values() if c.header))
    return Told(instructions, headers)


def call_example(instructions: str, calls: dict, spec: dict) -> Example | None:
    """The example the instructions write for the tool-call field `calls` (the text from its open to
    its close, the longest such stretch that is not prose), parsed with the response template `spec`;
    None when the instructions show no such stretch."""
    opened = _pattern(calls, "open")
    if opened is None or not instructions:
        return None
    closed = _pattern(calls, "close")
    best: tuple[int, int] | None = None
    for match in opened.finditer(instructions):
        end = None
        if closed is not None:
            after = closed.search(instructions, match.end(), match.end() + _EXAMPLE_CHARS)
            end = after.end() if after is not None and after.start() > match.end() else None
        else:
            line = instructions.find("\n\n", match.end())
            end = len(instructions) if line < 0 else line
        if end is None or not instructions[match.end() : end].strip() or end - match.start() > _EXAMPLE_CHARS:
            continue
        if best is None or end - match.start() > best[1] - best[0]:
            best = (match.start(), end)
    if best is None:
        return None
    text = instructions[best[0] : best[1]].strip()
    names, why = _parsed(text, spec)
    if names:
        return Example(text, names)
    filled = _PLACEHOLDER.sub(_fill, text)
    if filled != text:
        filled_names, _ = _parsed(filled, spec)
        if filled_names:
            return Example(text, filled_names, pattern=True)
    return Example(text, why=why)


def _parsed(text: str, spec: dict) -> tuple[tuple[str, ...], str]:
    """The names of the calls `spec` reads in `text`, or why none."""
    try:
        message = parse_response(text, spec, prefix="")
    except Exception as e:  # noqa: BLE001 - the parser's message is the reason
        return (), f"{type(e).__name__}: {short(str(e), 120)}"
    calls = message.get("tool_calls") or []
    names = tuple(str(c.get("function", {}).get("name", "")) for c in calls if isinstance(c, dict) and isinstance(c.get("function"), dict))
    return (names, "") if names and all(names) else ((), "no call with a name comes back")


def _fill(match: regex.Match) -> str:
    """A placeholder as a JSON value: a string where a name goes, an empty object elsewhere."""
    value = match.group("value").strip()
    if value in ("true", "false", "null"):
        return match.group(0)
    key = match.group("key")
    return match.group("head") + ('"example_name"' if key in _NAME_KEYS else "{}")


def _pattern(field: dict, key: str) -> regex.Pattern | None:
    """A field's open or close as one regex (literal texts escaped; a list is any of them)."""
    if f"{key}_pattern" in field:
        try:
            return regex.compile(field[f"{key}_pattern"], regex.DOTALL)
        except regex.error:
            return None
    value = field.get(key)
    if not value:
        return None
    texts = value if isinstance(value, list) else [value]
    return regex.compile("|".join(escape(t) for t in texts if t)) if any(texts) else None
