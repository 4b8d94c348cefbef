"""What the chat template tells the model besides the history: the tool instructions the prompt
gains when tools are offered (many templates describe the call format there, in words and with an
example: "return a json object … within <tool_call></tool_call> XML tags"), and the generation
prompts. The draft looks for the library's formats in this text, and parses the instruction's
example with each candidate."""

from __future__ import annotations

from dataclasses import dataclass

import regex
from transformers.utils.chat_parsing import parse_response
from transformers.utils.chat_parsing.response_templates import ResponseTemplate

from ..text import short
from .probes import Context, Failure, Turn
from .text import MARKUP, escape

# An instruction's example is a few lines; a "call" longer than this is prose between two mentions.
_EXAMPLE_CHARS = 800
# Mentions of a format's open looked at (instructions that repeat it more are not an example's).
_MAX_MENTIONS = 50
# A JSON value an instruction writes as a placeholder: `"name": <function-name>`, `"arguments":
# <args-json-object>`, `"name": function name` (Llama 3.1), `"arguments": {arg-key: …}`.
_PLACEHOLDER = regex.compile(
    r'(?P<head>"(?P<key>[^"\\\n]{1,40})"\s*:\s*)'
    r'(?P<value><[^<>\n]{1,80}>|\{[^{}"\n]{1,80}\}|\[[^\[\]"\n]{1,80}\]|[A-Za-z_$][^,{}\[\]"\n]{0,80}?)(?=\s*[,}])'
)
_NAME_KEYS = {"name", "tool_name", "function", "id"}
_ELLIPSIS = regex.compile(r",?[ \t]*(?:\.\.\.|…)")
_NAMED_VALUE = regex.compile(r"(\b[A-Za-z_]\w*\s*=\s*)(?![0-9\"'\[{(]|True\b|False\b|None\b)[A-Za-z_]\w*")
_BARE_ARGUMENT = regex.compile(r"\(\s*[A-Za-z_]\w*\s*\)")


@dataclass(frozen=True)
class Told:
    """The tool instructions (the prompt with tools offered, up to the user's message: the system
    part, where templates describe the call format, whether or not it depends on the tools) and the
    generation prompts of the probe contexts."""

    instructions: str
    generation_prompts: tuple[str, ...] = ()
    prompt: str = ""  # the whole prompt with tools offered
    prompts: tuple[str, ...] = ()  # every probe context's prompt (generation prompt included)

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

    @property
    def prose(self) -> bool:
        """The delimiter is named in words ("respond with <|tool_call|> followed by a JSON list"), with
        no call written after it: nothing to parse, so nothing against the format."""
        return not self.parses and not regex.search(r"[{\[<=]", MARKUP.sub("", self.text))


def what_is_told(turns: list[Turn], failures: list[Failure] = ()) -> Told:  # type: ignore[assignment]
    """The tool instructions and generation prompts of the rendered probe contexts."""
    contexts: dict[str, Context] = {}
    for probe in [t.probe for t in turns] + [f.probe for f in failures]:
        contexts.setdefault(probe.context.name, probe.context)
    offered = contexts.get("tools offered")
    instructions = prompt = ""
    if offered is not None and offered.prompt:
        prompt = offered.prompt
        instructions = prompt[: max(0, prompt.rfind(offered.last_sentinel))]
    headers = tuple(dict.fromkeys(c.header for c in contexts.values() if c.header))
    return Told(instructions, headers, prompt, tuple(c.prompt for c in contexts.values() if c.prompt))


def call_open(calls: dict) -> regex.Pattern | None:
    """A tool-call field's open as one regex."""
    return _pattern(calls, "open")


def call_example(instructions: str, calls: dict, spec: dict | ResponseTemplate) -> Example | None:
    """The example the instructions write for the tool-call field `calls` (the text from its open to
    its close, or to the end of the line; the shortest such stretch that writes something), parsed
    with the response template `spec`; None when the instructions show no such stretch."""
    opened = _pattern(calls, "open")
    if opened is None or not instructions:
        return None
    closed = _pattern(calls, "close")
    best: tuple[int, int, tuple] | None = None
    for count, match in enumerate(opened.finditer(instructions)):
        if count >= _MAX_MENTIONS:
            break
        # To the close when it follows within the same paragraph, else to the end of the line.
        reach = match.end() + _EXAMPLE_CHARS  # every search below stays within an example's length
        line = instructions.find("\n", match.end(), reach)
        end = body_end = min(len(instructions), reach) if line < 0 else line
        if closed is not None:
            after = closed.search(instructions, match.end(), reach)
            paragraph = instructions.find("\n\n", match.end(), reach)
            if after is not None and (paragraph < 0 or after.end() <= paragraph):
                end, body_end = after.end(), after.start()
        # A bracketed value right after the open ends where its brackets close (`functools[{…}]`,
        # then prose and the end of the turn on the same line).
        value_end = _balanced_end(instructions, match.end(), body_end)
        if value_end < body_end:
            end = body_end = value_end
        body = instructions[match.end() : body_end]
        if not body.strip() or end - match.start() > _EXAMPLE_CHARS:
            continue
        # The shortest stretch that writes something (a call), else the shortest.
        key = (not regex.search(r"[{\[<=]", body), end - match.start())
        if best is None or key < best[2]:
            best = (match.start(), end, key)
    if best is None:
        return None
    text = instructions[best[0] : best[1]].strip()
    names, why = _parsed(text, spec)
    if names:
        return Example(text, names)
    # Placeholders filled, an ellipsis for "and so on" (`[{…}, ...]`) left out, and braces doubled
    # as a format string escapes them (`[{{"name": …}}]`, written by a template that meant one).
    # A Python call list's placeholders (`[func_name1(params_name1=params_value1, ...), func_name2(params)]`)
    # become literals.
    unbraced = text.replace("{{", "{").replace("}}", "}")
    pythonic = _BARE_ARGUMENT.sub("()", _NAMED_VALUE.sub(r"\g<1>0", _ELLIPSIS.sub("", text)))
    for filled in dict.fromkeys([*(_ELLIPSIS.sub("", _PLACEHOLDER.sub(_fill, t)) for t in (text, unbraced)), pythonic]):
        if filled != text and (filled_names := _parsed(filled, spec)[0]):
            return Example(text, filled_names, pattern=True)
    return Example(text, why=why)


def _balanced_end(text: str, start: int, limit: int) -> int:
    """Where the bracketed value starting at `start` (after spaces) ends, quotes respected; `limit`
    when there is none or it does not close before it (a value, not the prose after it)."""
    at = start
    while at < limit and text[at] in " \t":
        at += 1
    if at >= limit or text[at] not in "[{(":
        return limit
    depth, quote = 0, ""
    for i in range(at, limit):
        char = text[i]
        if quote:
            if char == "\\":
                continue
            if char == quote and text[i - 1] != "\\":
                quote = ""
        elif char in "\"'":
            quote = char
        elif char in "[{(":
            depth += 1
        elif char in "]})":
            depth -= 1
            if depth == 0:
                return i + 1
    return limit


def _parsed(text: str, spec: dict | ResponseTemplate) -> tuple[tuple[str, ...], str]:
    """The names of the calls `spec` reads in `text`, or why none. An example is a call: text the
    field leaves to another one (`functools` before a bare JSON list) means it is not this format's."""
    try:
        message = parse_response(text, spec, prefix="")
    except Exception as e:  # noqa: BLE001 - the parser's message is the reason
        return (), f"{type(e).__name__}: {short(str(e), 120)}"
    calls = message.get("tool_calls") or []
    names = tuple(str(c.get("function", {}).get("name", "")) for c in calls if isinstance(c, dict) and isinstance(c.get("function"), dict))
    left = [k for k, v in message.items() if k not in ("role", "tool_calls") and isinstance(v, str) and v.strip()]
    if left:
        return (), f"text is left over in {', '.join(left)}"
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
    texts = list(value) if isinstance(value, (list, tuple)) else [value]  # a library format's lists are frozen tuples
    return regex.compile("|".join(escape(t) for t in texts if t)) if any(texts) else None
