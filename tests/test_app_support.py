"""Shared helpers for the callback-level app tests (no tests here): a session on a small ChatML
workspace, and the case form's values as the page would send them."""

from __future__ import annotations

import json
from typing import Any

from app.case_form import FORM_FIELDS
from app.case_panel import form_updates
from app.state import Session
from engine.workspace import RunSettings, Workspace
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


def form_values(sess: Session, **edits: Any) -> dict[str, Any]:
    """The case form's values, by control name, as the page sends them for the current case, with
    some replaced (messages, tools, documents, add_generation_prompt, continue_final_message,
    extra_kwargs, or a slot such as kw_bool_0)."""
    values = {name: plain(update) for name, update in form_updates(sess.workspace, sess.workspace.case).items()}
    unknown = set(edits) - set(FORM_FIELDS)
    if unknown:
        raise KeyError(sorted(unknown))
    return {**values, **edits}


def edited(sess: Session, chat: str | None = None, response: str | None = None, **edits: Any) -> dict[str, Any]:
    """What a button sends: the editors, the case the form shows and the form."""
    ws = sess.workspace
    return dict(session=sess, chat_template=ws.chat_template if chat is None else chat,
                response_template=ws.response_template if response is None else response,
                form_case=ws.case_name, **form_values(sess, **edits))  # fmt: skip


def refresh_with(sess: Session, chat: str | None = None, response: str | None = None, show_ws: bool = False,
                 **edits: Any) -> dict[str, Any]:
    """The page's refresh after an edit, by output name."""
    from app.workbench import refresh

    return refresh(show_whitespace=show_ws, **edited(sess, chat, response, **edits))


def settings_values(settings: RunSettings) -> dict[str, Any]:
    """The run panel's settings controls, by name, showing `settings`."""
    from app.run_stream import SETTINGS

    return {name: getattr(settings, name) for name in SETTINGS}
