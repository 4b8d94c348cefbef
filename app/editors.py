"""The two editors, one above the other: the chat template (Jinja) and the response template (JSON), each
with its diagnostics underneath (line and column), updated as the author types; under the response
template, drafting it from the chat template (app/draft_panel.py) or starting from a library format
(app/format_panel.py)."""

from __future__ import annotations

from typing import Any

import gradio as gr

from .draft_panel import build_draft_panel
from .format_panel import build_format_panel
from .widgets import exact_code

CHAT_HELP = (
    "Jinja, rendered by transformers' sandboxed environment exactly as apply_chat_template does. "
    "Reads messages, tools, add_generation_prompt, the special tokens and the case's template kwargs."
)
RESPONSE_HELP = (
    "JSON, as in tokenizer_config.json → response_template: a start_anchor (where the assistant's "
    "turn starts in the prompt) and fields (regions with open/close delimiters, parsed by transformers)."
)


def build_editors() -> dict[str, Any]:
    """Both editors, one above the other at a bounded height, each with its diagnostics, by name."""
    with gr.Group(elem_classes=["panel", "editor-panel"], elem_id="chat-group"):
        gr.HTML(f'<div class="panel-title" title="{CHAT_HELP}">Chat template <span class="sub">messages → prompt</span></div>')
        chat = exact_code(language="jinja2", lines=8, max_lines=14, show_label=False, elem_id="chat-editor",
                          wrap_lines=True, buttons=["copy", "download"])  # fmt: skip
        chat_diagnostics = gr.HTML(elem_id="chat-diagnostics", elem_classes=["diag-box"])
    with gr.Group(elem_classes=["panel", "editor-panel"], elem_id="response-group"):
        gr.HTML(f'<div class="panel-title" title="{RESPONSE_HELP}">Response template <span class="sub">model output → message</span></div>')
        response = exact_code(language="json", lines=6, max_lines=11, show_label=False, elem_id="response-editor",
                              wrap_lines=True, buttons=["copy", "download"])  # fmt: skip
        response_diagnostics = gr.HTML(elem_id="response-diagnostics", elem_classes=["diag-box"])
        drafting = build_draft_panel()
        formats = build_format_panel()
    return dict(chat_template=chat, chat_diagnostics=chat_diagnostics, response_template=response,
                response_diagnostics=response_diagnostics, **drafting, **formats)
