"""What a behaviour diff finds: for each conversation, whether the prompt the model reads changed, each
place it changed with the template line on each side that wrote it, and the token counts; for each
recorded or example output, whether it parses to another message. Plain data: it travels back from
the worker, and every report (text, JSON, GitHub annotations, markdown, HTML, the page) reads it."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from ..diagnostics import Diagnostic


@dataclass(frozen=True)
class Version:
    """One version of a model's templates: the chat template (one text, or named texts), the response
    template's JSON text (None: it has none), the special tokens it renders with, and what a person
    calls it ("main", "your edit", a folder)."""

    label: str
    chat_template: str | dict[str, str] | None
    response_template: str | None = None
    special_tokens: dict[str, Any] = field(default_factory=dict)

    def template_text(self, name: str | None) -> str | None:
        """The text of the named chat template (None: the only one)."""
        if isinstance(self.chat_template, dict):
            return self.chat_template.get(name or "default")
        return self.chat_template

    def size(self) -> int:
        """About how many characters it holds (what a session is charged for keeping it)."""
        chat = self.chat_template
        texts = chat.values() if isinstance(chat, dict) else [chat or ""]
        return sum(map(len, texts)) + len(self.response_template or "")


@dataclass(frozen=True)
class Site:
    """A template line that wrote (part of) a changed text: its line and column, the line as written,
    the named template it is in (None: the only one), the macro it is written in, and whether it
    wrote the changed characters (`wrote`) or only the text next to where they were inserted or
    deleted."""

    line: int
    column: int | None
    text: str
    template: str | None = None
    macro: str | None = None
    wrote: bool = True

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Change:
    """One place where the prompt differs: `removed` (`before[before_start:before_end]`) became
    `added` (`after[after_start:after_end]`), between `lead` and `trail`, the text around it (the
    same in both). `before_sites` / `after_sites`: the template lines that wrote it, on each side."""

    before_start: int
    before_end: int
    after_start: int
    after_end: int
    removed: str
    added: str
    lead: str = ""
    trail: str = ""
    before_sites: list[Site] = field(default_factory=list)
    after_sites: list[Site] = field(default_factory=list)
    cut: bool = False  # `removed` or `added` shortened (the answer's size bound)

    def to_dict(self) -> dict:
        data = asdict(self)
        data["before_sites"] = [s.to_dict() for s in self.before_sites]
        data["after_sites"] = [s.to_dict() for s in self.after_sites]
        return data


@dataclass
class ConversationDiff:
    """One conversation rendered with both versions: the prompts (`before`, `after`; None when it did
    not render, with the error, or when left out of a bounded answer: `prompts_kept`), the places it
    changed, the token counts (when a tokenizer is at hand) and notes (an explanation that could not
    be made, a conversation adapted to the template)."""

    name: str
    description: str
    changed: bool
    before: str | None
    after: str | None
    before_error: str | None = None
    after_error: str | None = None
    before_error_line: int | None = None  # where in the template the error is, when it is there
    after_error_line: int | None = None
    changes: list[Change] = field(default_factory=list)
    more_changes: int = 0  # changes left out of a bounded answer
    before_tokens: int | None = None
    after_tokens: int | None = None
    before_template: str | None = None  # the named template rendered (None: the only one)
    after_template: str | None = None
    add_generation_prompt: bool = True
    own: bool = False  # one of the author's cases (else a standard conversation)
    notes: list[str] = field(default_factory=list)
    prompts_kept: bool = True

    @property
    def token_change(self) -> int | None:
        if self.before_tokens is None or self.after_tokens is None:
            return None
        return self.after_tokens - self.before_tokens

    def to_dict(self) -> dict:
        data = asdict(self)
        data["changes"] = [c.to_dict() for c in self.changes]
        data["token_change"] = self.token_change
        return data


@dataclass
class MessageDiff:
    """One model output (a recording, or an example of a format of the library) parsed by both
    response templates: the messages (JSON text past the answer's bound), the errors, and which
    fields differ."""

    name: str
    source: str  # "recording" or "example"
    output: str
    changed: bool
    before: dict | str | None
    after: dict | str | None
    before_error: str | None = None
    after_error: str | None = None
    fields: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class BehaviourDiff:
    """Every conversation and output, compared; problems that stopped part of it (`diagnostics`)."""

    base: str
    new: str
    conversations: list[ConversationDiff] = field(default_factory=list)
    messages: list[MessageDiff] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    tokenizer: str | None = None  # where the token counts come from

    @property
    def changed(self) -> list[ConversationDiff]:
        return [c for c in self.conversations if c.changed]

    @property
    def changed_messages(self) -> list[MessageDiff]:
        return [m for m in self.messages if m.changed]

    @property
    def any_change(self) -> bool:
        return bool(self.changed or self.changed_messages)

    def summary(self) -> str:
        """One sentence: how many conversations' prompts change (and outputs' messages)."""
        n, m = len(self.changed), len(self.conversations)
        text = f"The prompt changes in {n} of {m} conversation{'s' if m != 1 else ''}"
        if self.messages:
            k, total = len(self.changed_messages), len(self.messages)
            text += f"; {k} of {total} model output{'s' if total != 1 else ''} parse to another message"
        return text + "."

    def to_dict(self) -> dict:
        return {
            "base": self.base,
            "new": self.new,
            "summary": self.summary(),
            "changed": len(self.changed),
            "conversations": [c.to_dict() for c in self.conversations],
            "messages": [m.to_dict() for m in self.messages],
            "messages_changed": len(self.changed_messages),
            "tokenizer": self.tokenizer,
            "diagnostics": [d.to_dict() for d in self.diagnostics],
        }

    def bounded(self, max_chars: int) -> BehaviourDiff:
        """This diff within about `max_chars` characters (what a worker sends back to a server):
        prompts of unchanged conversations are left out, changed ones kept whole while they fit,
        each change's texts cut, changes past the budget counted (`more_changes`) instead of kept,
        and each message shortened to its share (as JSON text)."""
        budget = max_chars
        for conversation in self.conversations:
            conversation.before_error = _cut(conversation.before_error, 500)
            conversation.after_error = _cut(conversation.after_error, 500)
            if not conversation.changed:
                conversation.before = conversation.after = None
                conversation.prompts_kept = False
                continue
            size = len(conversation.before or "") + len(conversation.after or "")
            if size <= budget // 2:
                budget -= size
            else:
                conversation.before = conversation.after = None
                conversation.prompts_kept = False
            kept = []
            for change in conversation.changes:
                share = max(100, min(2_000, budget // 100))
                if len(change.removed) > share or len(change.added) > share:
                    change.removed, change.added, change.cut = change.removed[:share], change.added[:share], True
                change.before_sites, change.after_sites = change.before_sites[:5], change.after_sites[:5]
                cost = (len(change.removed) + len(change.added) + len(change.lead) + len(change.trail) + 200
                        + sum(len(s.text) + 100 for s in change.before_sites + change.after_sites))
                if cost > budget:
                    break
                kept.append(change)
                budget -= cost
            conversation.more_changes += len(conversation.changes) - len(kept)
            conversation.changes = kept
        share = max(100, min(4_000, budget // max(1, 3 * len(self.messages))))
        for message in self.messages:
            message.output = _cut(message.output, share)
            message.before_error, message.after_error = _cut(message.before_error, 500), _cut(message.after_error, 500)
            for side in ("before", "after"):
                value = getattr(message, side)
                if value is not None and not isinstance(value, str):
                    text = json.dumps(value, ensure_ascii=False)
                    if len(text) > share:
                        setattr(message, side, _cut(text, share))
        return self


def _cut(text: str | None, limit: int) -> str | None:
    return text if text is None or len(text) <= limit else text[: limit - 1] + "…"
