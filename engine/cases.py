"""Cases (test conversations) and recordings (raw model outputs), as stored in presets and case files."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from .render import RenderResult, generation_start_in, render
from .transformers_compat import REASONING_FIELDS

# What a message holds, as a conversation is edited (the page's conversation editor shows these;
# any other key a message has is kept as it is). Roles: the ones chat templates branch on.
ROLES = ("system", "developer", "user", "assistant", "tool")
# Content parts (`content` as a list): each type and the keys that may hold it, in the order
# transformers' processors look for them (`ProcessorMixin.apply_chat_template`).
CONTENT_PARTS = {
    "text": ("text",),
    "image": ("url", "path", "base64", "image"),
    "audio": ("url", "path", "audio"),
    "video": ("url", "path", "video"),
}


def message_shape() -> dict[str, Any]:
    """The shape of a message, as data for an editor: roles, the reasoning field names transformers
    reads as one (the first is the one to write), content part types and their keys."""
    return {"roles": list(ROLES), "reasoning": list(REASONING_FIELDS), "parts": {k: list(v) for k, v in CONTENT_PARTS.items()}}


@dataclass
class Case:
    """A named test conversation: the messages, tools and settings a prompt is rendered from.
    The same shape as a case file for `python -m engine render --case FILE`."""

    name: str
    messages: list[dict]
    tools: list[dict] | None = None
    documents: list[dict] | None = None
    add_generation_prompt: bool = True
    continue_final_message: bool | str = False
    template_kwargs: dict = field(default_factory=dict)
    special_tokens: dict = field(default_factory=dict)
    description: str = ""

    @classmethod
    def from_dict(cls, data: dict, name: str | None = None) -> Case:
        known = {f for f in cls.__dataclass_fields__}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"Unknown keys in case {data.get('name', name)!r}: {unknown}. Known: {sorted(known)}")
        values = {**data}
        values.setdefault("name", name or "case")
        if "messages" not in values:
            raise ValueError(f"Case {values['name']!r} has no 'messages'.")
        for key, types, shape in _SHAPES:
            if key in values and not isinstance(values[key], types):
                raise ValueError(f"Case {values['name']!r}: {key!r} must be {shape}, got {type(values[key]).__name__}.")
        return cls(**values)

    def to_dict(self) -> dict:
        data: dict[str, Any] = {"name": self.name, "messages": self.messages}
        for key in ("tools", "documents"):
            if getattr(self, key) is not None:
                data[key] = getattr(self, key)
        data["add_generation_prompt"] = self.add_generation_prompt
        if self.continue_final_message:
            data["continue_final_message"] = self.continue_final_message
        for key in ("template_kwargs", "special_tokens"):
            if getattr(self, key):
                data[key] = getattr(self, key)
        if self.description:
            data["description"] = self.description
        return data


# What each key of a case file holds (checked on load, so a wrong type is a message, not a crash).
_SHAPES = (
    ("name", str, "text"),
    ("messages", list, "a list of messages"),
    ("tools", (list, type(None)), "a list of tools (or null)"),
    ("documents", (list, type(None)), "a list of documents (or null)"),
    ("add_generation_prompt", bool, "true or false"),
    ("continue_final_message", (bool, str), "true, false or a string"),
    ("template_kwargs", dict, "an object"),
    ("special_tokens", dict, "an object"),
    ("description", str, "text"),
)


@dataclass
class Recording:
    """A raw model output tied to a case, and the message it must parse to."""

    name: str
    case: str
    output: str
    expected: dict | None = None
    description: str = ""

    @classmethod
    def from_dict(cls, data: dict) -> Recording:
        return cls(**data)

    def differences(self, message: dict) -> list[str]:
        """The fields where `message` differs from the expected message (none when it has none)."""
        if self.expected is None:
            return []
        return sorted(k for k in set(message) | set(self.expected) if message.get(k) != self.expected.get(k))


def normalise_message(message: dict) -> dict[str, Any]:
    """A message in the form both sides are compared in. Each rule removes a difference that is not
    a difference to the model: None values (transformers drops them before rendering), reasoning under
    an older name (transformers aliases it), text as a list of text blocks, surrounding whitespace
    (the text parser strips by default, and templates trim), tool-call arguments as a JSON string vs
    an object, and tool-call `type`/`id` (rendered by few templates). `role` is not compared."""
    out: dict[str, Any] = {}
    for key, value in message.items():
        if key == "role" or is_missing(value):
            continue
        if key in REASONING_FIELDS:
            key = "reasoning_content"
            if key in out:
                continue
        if key == "content" and isinstance(value, list) and all(isinstance(b, dict) and b.get("type") == "text" for b in value):
            value = "".join(str(b.get("text", "")) for b in value)
        if key == "tool_calls" and isinstance(value, list):
            value = [_tool_call(call) for call in value]
        if isinstance(value, str):
            value = value.strip()
            if not value:
                continue
        out[key] = value
    return out


def _tool_call(call: Any) -> Any:
    if not isinstance(call, dict):
        return call
    function = call.get("function", call)
    if not isinstance(function, dict):
        return call
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            pass
    return {"name": function.get("name"), "arguments": arguments}


def compare_messages(original: dict, parsed: dict) -> list[tuple[str, Any, Any]]:
    """(field, original value, parsed value) for each field that differs; None stands for missing."""
    a, b = normalise_message(original), normalise_message(parsed)
    return [(k, a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


def is_missing(value: Any) -> bool:
    """None, or an empty text, list or object: a field a message does not have."""
    return value is None or (isinstance(value, (str, list, dict)) and not value)


def passed_kwargs(kwarg_specs: dict[str, dict]) -> dict[str, Any]:
    """The declared template kwargs at their defaults, as they are passed to the template: a None
    default means "not passed" (a template may test `is defined`). The one place this is decided,
    for the app, the checks and the command line alike."""
    return {name: spec.get("default") for name, spec in kwarg_specs.items() if spec.get("default") is not None}


def render_case(
    chat_template: str | dict[str, str],
    case: Case,
    special_tokens: dict | None = None,
    template_kwargs: dict | None = None,
    timeout: float | None = None,
    owner: Any = None,
    with_generation_start: bool = False,
    explain: bool | str = False,
) -> RenderResult:
    """Render a case. The case's own special tokens and kwargs win over the preset's defaults.
    `timeout` renders in the killable worker, `owner` is whose render it is; `with_generation_start`
    also finds where the generation prompt begins, and `explain` where each character came from, in
    the same call (see `engine.render.render`)."""
    return render(
        chat_template,
        case.messages,
        case.tools,
        case.documents,
        add_generation_prompt=case.add_generation_prompt,
        continue_final_message=case.continue_final_message,
        template_kwargs=_merged(template_kwargs, case.template_kwargs),
        special_tokens=_merged(special_tokens, case.special_tokens),
        timeout=timeout,
        owner=owner,
        with_generation_start=with_generation_start,
        explain=explain,
    )


def generation_start(
    chat_template: str | dict[str, str],
    case: Case,
    prompt: str,
    special_tokens: dict | None = None,
    template_kwargs: dict | None = None,
    timeout: float | None = None,
    owner: Any = None,
) -> int | None:
    """Where the generation prompt begins in `prompt` (the case rendered with it): the case rendered
    without it must be a strict prefix of `prompt`. None when the case has no generation prompt, or
    the template renders the earlier turns differently without it (no clean boundary to show)."""
    if not case.add_generation_prompt:
        return None
    without = render_case(chat_template, replace(case, add_generation_prompt=False), special_tokens, template_kwargs,
                          timeout=timeout, owner=owner)
    return generation_start_in(prompt, without.prompt)


def _merged(defaults: dict | None, own: Any) -> Any:
    """The case's own values over the defaults; a value of the wrong type is passed on as it is,
    for `render` to report."""
    return {**(defaults or {}), **own} if isinstance(own, dict) else own
