"""Cases (test conversations) and recordings (raw model outputs), as stored in presets and case files."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from .render import RenderResult, render


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


def render_case(
    chat_template: str | dict[str, str],
    case: Case,
    special_tokens: dict | None = None,
    template_kwargs: dict | None = None,
    timeout: float | None = None,
) -> RenderResult:
    """Render a case. The case's own special tokens and kwargs win over the preset's defaults.
    `timeout` renders in the killable worker (see `engine.render.render`)."""
    return render(
        chat_template,
        case.messages,
        case.tools,
        case.documents,
        add_generation_prompt=case.add_generation_prompt,
        continue_final_message=case.continue_final_message,
        template_kwargs={**(template_kwargs or {}), **case.template_kwargs},
        special_tokens={**(special_tokens or {}), **case.special_tokens},
        timeout=timeout,
    )


def generation_start(
    chat_template: str | dict[str, str],
    case: Case,
    prompt: str,
    special_tokens: dict | None = None,
    template_kwargs: dict | None = None,
    timeout: float | None = None,
) -> int | None:
    """Where the generation prompt begins in `prompt` (the case rendered with it): the case rendered
    without it must be a strict prefix of `prompt`. None when the case has no generation prompt, or
    the template renders the earlier turns differently without it (no clean boundary to show)."""
    if not case.add_generation_prompt:
        return None
    without = render_case(chat_template, replace(case, add_generation_prompt=False), special_tokens, template_kwargs,
                          timeout=timeout)
    if without.prompt is not None and len(without.prompt) < len(prompt) and prompt.startswith(without.prompt):
        return len(without.prompt)
    return None
