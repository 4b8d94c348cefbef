"""Shared helpers for the callback-level app tests (no tests here): a session on a small ChatML
workspace, and the case form's values as the page would send them."""

from __future__ import annotations

import json
from typing import Any

from app.case_panel import form_updates
from app.state import RunSettings, Session, Workspace
from engine.cases import Case, Recording
from tests.trace_cases import SMOL

CHATML = (
    "{%- for message in messages -%}\n"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' -}}\n"
    "{%- endfor -%}\n"
    "{%- if add_generation_prompt -%}\n"
    "{{- '<|im_start|>assistant\\n' -}}\n"
    "{%- if enable_thinking is defined and enable_thinking -%}{{- '<think>\\n' -}}{%- endif -%}\n"
    "{%- endif -%}\n"
)

# The SmolLM-style response template the trace tests use (tests/trace_cases.py).
RESPONSE = json.dumps(SMOL, indent=2)

OUTPUT = "<think>\nThe user greets me.\n</think>\nHello there! How can I help?<|im_end|>"
EXPECTED = {"role": "assistant", "reasoning_content": "The user greets me.", "content": "Hello there! How can I help?"}


def workspace(**changes: Any) -> Workspace:
    cases = [
        Case("greeting", [{"role": "user", "content": "Hi!"}], description="A greeting."),
        Case("thinking", [{"role": "user", "content": "Think first."}], template_kwargs={"enable_thinking": True}),
    ]
    recordings = [Recording("think then answer", "greeting", OUTPUT, EXPECTED)]
    data = dict(
        preset="",
        chat_template=CHATML,
        response_template=RESPONSE,
        special_tokens={"eos_token": "<|im_end|>"},
        stop_tokens=["<|im_end|>"],
        kwarg_specs={"enable_thinking": {"default": False, "type": "bool", "help": "Think first."}},
        cases=cases,
        case_name="greeting",
        recordings=recordings,
        run=RunSettings(recording="think then answer", tokens_per_second=0),
    )
    data.update(changes)
    return Workspace(**data)


def session(**changes: Any) -> Session:
    return Session(workspace(**changes))


def plain(update: Any) -> Any:
    """The value a component would hold after a `gr.update` (or a plain value)."""
    return update.get("value") if isinstance(update, dict) else update


def form_values(sess: Session) -> list:
    """The case form's values as the page sends them for the current case."""
    return [plain(u) for u in form_updates(sess.workspace, sess.workspace.case)]


def with_form(sess: Session, **edits: Any) -> list:
    """Form values with some fields replaced (messages, tools, documents, add_generation_prompt,
    continue_final_message, extra_kwargs, or bool0 / choice0 / text0 slot values)."""
    values = form_values(sess)
    order = ["messages", "tools", "documents", "add_generation_prompt", "continue_final_message", "extra_kwargs"]
    from app.case_panel import BOOL_SLOTS, CHOICE_SLOTS

    for key, value in edits.items():
        if key in order:
            values[order.index(key)] = value
        elif key.startswith("bool"):
            values[6 + int(key[4:])] = value
        elif key.startswith("choice"):
            values[6 + BOOL_SLOTS + int(key[6:])] = value
        elif key.startswith("text"):
            values[6 + BOOL_SLOTS + CHOICE_SLOTS + int(key[4:])] = value
        else:
            raise KeyError(key)
    return values


def refresh_with(sess: Session, chat: str | None = None, response: str | None = None, show_ws: bool = False, **edits: Any) -> tuple:
    from app.workbench import refresh

    ws = sess.workspace
    return refresh(sess, ws.chat_template if chat is None else chat, ws.response_template if response is None else response,
                   ws.case_name, show_ws, *with_form(sess, **edits))  # fmt: skip
