"""The simulated runner: what the chat template itself would produce, with no model.

It builds a plausible assistant message for the case (reasoning when the response template has a
reasoning field, a call to an offered tool with arguments typed from its JSON schema, an answer),
renders the conversation with that message appended as history, and streams the text that follows
the prompt: the assistant turn exactly as the template writes it. Parsing that back should give the
message it was built from; where it does not, the pair of templates disagree (or the format drops
something from history on purpose, which the preset documents).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import threading
from collections.abc import Iterator
from typing import Any

import regex
from transformers.utils.chat_parsing import parse_response

from ..cases import Case, generation_start, render_case
from ..content_parts import as_parts, text_of, writes_parts
from ..diagnostics import Diagnostic
from ..render import RenderResult
from ..response_spec import compile_spec, load_response_spec
from ..text import SPECIAL_TOKEN, short
from ..turns import reply_after, up_to_stop
from .base import Activity, Chunk, RunnerError, paced
from .recorded import token_pieces

# What a simulated run is, for the people watching one (the app shows it next to the runner).
EXPLANATION = (
    "Simulated: no model ran. The playground built a plausible reply for this case, rendered it into "
    "history with your chat template and shows the text after the prompt: this is what the template "
    "itself would produce, so parsing it back tests that the two templates agree."
)

# Field names a response template uses for reasoning, the standard one first.
REASONING_FIELDS = ("reasoning_content", "reasoning", "thinking")


def simulate_message(case: Case, response_spec: dict, *, prompt: str | None = None,
                     template_kwargs: dict | None = None) -> dict:
    """A plausible assistant message for `case`, using only the fields the response template has:
    reasoning (unless thinking is off: the prompt already closed the reasoning region, or
    `enable_thinking` is false in the case or the kwargs every case starts from), then either one call to the first offered tool (when the case
    has tools and the conversation does not end with a tool result) or an answer. With
    `continue_final_message`, the case's last assistant message, continued."""
    fields = response_spec.get("fields", {}) if isinstance(response_spec, dict) else {}
    defaults = response_spec.get("defaults", {}) if isinstance(response_spec, dict) else {}
    if case.continue_final_message and case.messages and case.messages[-1].get("role") == "assistant":
        message = copy.deepcopy(case.messages[-1])
        if isinstance(message.get("content"), str):
            message["content"] += " and that is how the reply continues."
        return message

    message: dict[str, Any] = {"role": "assistant", **copy.deepcopy(defaults)}
    topic = _topic(case.messages, _delimiters(fields))
    tool = _first_tool(case.tools)
    after_result = bool(case.messages) and case.messages[-1].get("role") == "tool"
    call = tool is not None and "tool_calls" in fields and not after_result

    reasoning = next((name for name in REASONING_FIELDS if name in fields), None)
    if reasoning is not None and _thinking_on({**(template_kwargs or {}), **case.template_kwargs}, response_spec, prompt):
        plan = f"I should call {tool['name']} to find out." if call else "I can answer directly."
        message[reasoning] = f"The user asks: {topic}. {plan}"
    if call:
        arguments = {name: example_value(schema, name) for name, schema in _arguments(tool).items()}
        message["tool_calls"] = [{"type": "function", "function": {"name": tool["name"], "arguments": arguments}}]
    elif "content" in fields:
        source = f"According to {_last_tool_name(case.messages)}, here" if after_result else "Here"
        message["content"] = f"{source} is a simulated answer to {topic}."
    return message


def example_value(schema: Any, name: str = "") -> Any:
    """A value of the type `schema` asks for: its default or first enum value when it has one."""
    if not isinstance(schema, dict):
        return "example"
    if "default" in schema:
        return copy.deepcopy(schema["default"])
    if schema.get("enum"):
        return copy.deepcopy(schema["enum"][0])
    if "const" in schema:
        return copy.deepcopy(schema["const"])
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind is None:
        for union in ("anyOf", "oneOf"):
            choices = [c for c in schema.get(union) or [] if isinstance(c, dict) and c.get("type") != "null"]
            if choices:
                return example_value(choices[0], name)
    if kind == "integer":
        return 3
    if kind == "number":
        return 2.5
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    if kind == "array":
        return [example_value(schema.get("items", {"type": "string"}), name)]
    if kind == "object":
        properties = schema.get("properties") or {}
        return {key: example_value(value, key) for key, value in properties.items()}
    return _EXAMPLE_STRINGS.get(name.lower(), f"example {name}".strip())


_EXAMPLE_STRINGS = {"city": "Paris", "location": "Paris, France", "query": "weather in Paris", "country": "France",
                    "date": "2026-01-15", "language": "French", "timezone": "Europe/Paris", "url": "https://example.com"}


def _arguments(tool: dict) -> dict[str, Any]:
    """The parameters a call fills: the required ones, or all of them when none is required."""
    parameters = tool.get("parameters") if isinstance(tool.get("parameters"), dict) else {}
    properties = parameters.get("properties") if isinstance(parameters.get("properties"), dict) else {}
    required = [name for name in parameters.get("required") or [] if name in properties]
    return {name: properties[name] for name in (required or properties)}


def _first_tool(tools: list | None) -> dict | None:
    for tool in tools or []:
        function = tool.get("function", tool) if isinstance(tool, dict) else None
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            return function
    return None


def _last_tool_name(messages: list[dict]) -> str:
    for message in reversed(messages):
        for call in message.get("tool_calls") or []:
            name = (call.get("function") or call).get("name") if isinstance(call, dict) else None
            if isinstance(name, str):
                return name
    return "the tool"


def _delimiters(fields: dict) -> list[str]:
    """The response template's literal delimiters (text a simulated reply must not contain)."""
    found = []
    for spec in fields.values():
        for key in ("open", "close"):
            value = spec.get(key) if isinstance(spec, dict) else None
            found += [v for v in (value if isinstance(value, list) else [value]) if isinstance(v, str) and v.strip()]
    return found


def _topic(messages: list[dict], delimiters: list[str]) -> str:
    """The last user message's first line, quoted as written (cut at a word near 60 characters).
    When it holds text that could be read as a delimiter (one of the response template's, or
    special-token-like text), only its words are kept: the simulated reply must parse as the
    message it was built from, whatever the user typed."""
    for message in reversed(messages):
        if message.get("role") != "user":
            continue
        text = text_of(message.get("content")).strip().split("\n")[0].strip()
        if not text:
            continue
        if len(text) > 60:
            text = text[:60].rsplit(" ", 1)[0] + "…"
        if regex.search(SPECIAL_TOKEN, text) or any(d.strip() in text for d in delimiters) or "<" in text:
            words = regex.findall(r"[\p{L}\p{N}]+", text)
            text = " ".join(words[:8]) if words else ""
        if text:
            return f"“{text}”"
    return "this"


def _thinking_on(kwargs: dict, response_spec: dict, prompt: str | None) -> bool:
    """Thinking is off when the kwargs turn it off, or when the prompt already closed the reasoning
    region (templates prefill an empty `<think></think>` to disable it)."""
    if kwargs.get("enable_thinking") is False:
        return False
    if prompt:
        from transformers.utils.chat_parsing import ResponseParser

        try:
            events = ResponseParser(response_spec, prefix=prompt).initial_events
        except Exception:  # noqa: BLE001 - a broken prefill is the trace's to report, not ours
            return True
        if any(e["type"] == "region_close" and e["field"] in REASONING_FIELDS for e in events):
            return False
    return True


class SimulatedRunner:
    """Streams what `chat_template` writes for a simulated assistant reply to `case`."""

    activity: Activity | None = None  # nothing to show before the first chunk

    def __init__(
        self,
        chat_template: str | dict[str, str],
        case: Case,
        response_template: str | dict = "",
        special_tokens: dict | None = None,
        template_kwargs: dict | None = None,
        stop_tokens: list[str] | None = None,
        tokens_per_second: float = 0,
        tokenizer: Any = None,
        timeout: float | None = None,
    ):
        self.chat_template = chat_template
        self.case = case
        self.response_template = response_template
        self.special_tokens = special_tokens or {}
        self.template_kwargs = template_kwargs or {}
        eos = {**self.special_tokens, **case.special_tokens}.get("eos_token")
        self.stop_tokens = list(stop_tokens) if stop_tokens else ([eos] if isinstance(eos, str) and eos else [])
        self.tokens_per_second = tokens_per_second
        self.tokenizer = tokenizer
        self.timeout = timeout  # seconds: render in engine.render's killable worker (templates are untrusted)
        self.diagnostics: list[Diagnostic] = []
        self.message: dict | None = None  # the message simulated by the last run
        self.output: str | None = None  # the text it rendered to after the prompt

    def simulate(self, prompt: str) -> str:
        """Build the message, render it into history, return the text after `prompt`. Raises RunnerError."""
        self.diagnostics = []
        if not self.case.add_generation_prompt and not self.case.continue_final_message:
            raise RunnerError(
                "This case has no generation prompt, so there is no reply to simulate: the prompt ends with a "
                "complete turn, and a model would start a new one of its own.",
                hint="Turn add_generation_prompt (or continue_final_message) on to simulate the assistant's reply.",
            )
        spec = self._spec()
        message = simulate_message(self.case, spec, prompt=prompt, template_kwargs=self.template_kwargs)
        history = self._render_history(message)
        output = self._reply(prompt, history)
        output = up_to_stop(output, self.stop_tokens)
        if not output:
            self.diagnostics.append(Diagnostic("warning", "The chat template renders nothing for the simulated reply.",
                                               "runner", hint="Check how the template renders assistant messages."))
        else:
            self._report_dropped(message, prompt, output, spec)
        self.message, self.output = message, output
        return output

    def _report_dropped(self, message: dict, prompt: str, output: str, spec: dict) -> None:
        """Say which fields of the simulated message the chat template does not write back (so the
        simulation cannot show them), e.g. SmolLM3 renders only the content of an assistant turn."""
        try:
            parsed = parse_response(output, spec, prefix=prompt, tools=self.case.tools)
        except Exception:  # noqa: BLE001 - a reply that does not parse is the trace's to report
            return
        dropped = [name for name, value in message.items() if name != "role" and value and not parsed.get(name)]
        if not dropped:
            return
        names = ", ".join(f"`{name}`" for name in dropped)
        self.diagnostics.append(Diagnostic(
            "warning",
            f"The chat template does not write {names} of an assistant message into the conversation, so the "
            f"simulation cannot show {'it' if len(dropped) == 1 else 'them'}: for a reply with "
            f"{', '.join(name for name in message if name != 'role')} it wrote only {short(output, 80)!r}.",
            "runner",
            hint="A real model still writes these fields: replay a recording or run a model to see them "
            "(the model card usually says which tags it writes).",
        ))  # fmt: skip

    def stream(
        self, prompt: str, *, tools: list | None = None, stop: threading.Event | None = None
    ) -> Iterator[Chunk]:
        """The simulated output for `prompt` (the case's rendered prompt), paced like a recording."""
        output = self.simulate(prompt)
        yield from paced(*token_pieces(output, self.tokenizer), self.tokens_per_second, stop)

    def _reply(self, prompt: str, history: str) -> str:
        """The reply's text in `history`: what follows the prompt (see `engine.turns.reply_after`)."""
        reply = reply_after(prompt, history, self._generation_prompt(prompt))
        if reply.diagnostic is not None:
            self.diagnostics.append(reply.diagnostic)
        return reply.text

    def _generation_prompt(self, prompt: str) -> str | None:
        """The text `add_generation_prompt` adds at the end of the prompt (None when it cannot tell)."""
        start = generation_start(self.chat_template, self.case, prompt, self.special_tokens, self.template_kwargs,
                                 self.timeout)
        return None if start is None else prompt[start:]

    def _render(self, case: Case) -> RenderResult:
        return render_case(self.chat_template, case, self.special_tokens, self.template_kwargs, timeout=self.timeout)

    def _spec(self) -> dict:
        template = self.response_template
        loaded = load_response_spec(template) if isinstance(template, str) else compile_spec(template)
        if not loaded.ok:
            first = loaded.diagnostics[0] if loaded.diagnostics else None
            raise RunnerError(
                "The response template has errors, so there is no message shape to simulate"
                + (f": {first.message}" if first else "."),
                hint="Fix the response template first (its editor shows where).",
            )
        return loaded.spec  # type: ignore[return-value]

    def _render_history(self, message: dict) -> str:
        case = self.case
        earlier = case.messages[:-1] if case.continue_final_message else case.messages
        if writes_parts(earlier):  # the reply goes into history as the conversation writes its assistant turns
            message = as_parts(message)
        attempts = [message]
        if "content" not in message:  # some templates read message.content unguarded
            attempts.append({**message, "content": ""})
        for attempt in attempts:
            result = self._render(dataclasses.replace(case, messages=[*earlier, attempt], add_generation_prompt=False,
                                                      continue_final_message=False))
            if result.ok:
                return result.prompt  # type: ignore[return-value]
        problem = result.diagnostics[0] if result.diagnostics else None
        raise RunnerError(
            f"The chat template cannot render the simulated reply into history: {problem or 'unknown error'}",
            hint="The simulation appends this assistant message and renders the conversation: "
            + json.dumps(message, ensure_ascii=False)[:300],
        )
