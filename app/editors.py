"""The two editors, side by side: the chat template (Jinja) and the response template (JSON), each
with its diagnostics underneath (line and column), updated as the author types; under the response
template, drafting it from the chat template (app/draft_panel.py)."""

from __future__ import annotations

from typing import Any

import gradio as gr

from .draft_panel import build_draft_panel
from .widgets import exact_code

CHAT_HELP = (
    "Jinja, rendered by transformers' sandboxed environment exactly as `apply_chat_template` does. "
    "Reads `messages`, `tools`, `add_generation_prompt`, the special tokens and the case's template kwargs."
)
RESPONSE_HELP = (
    "JSON, as in `tokenizer_config.json` → `response_template`: a `start_anchor` (where the assistant's "
    "turn starts in the prompt) and `fields` (regions with `open`/`close` delimiters, parsed by transformers)."
)


def build_editors() -> dict[str, Any]:
    """Both editors and their diagnostics, by name."""
    with gr.Row(equal_height=False, elem_id="editors"):
        with gr.Column(scale=1, min_width=360):
            with gr.Group(elem_classes=["panel"]):
                gr.HTML('<div class="panel-title">Chat template <span class="sub">messages → prompt</span></div>')
                chat = exact_code(language="jinja2", lines=16, max_lines=26, show_label=False, elem_id="chat-editor",
                                 wrap_lines=True, buttons=["copy", "download"])  # fmt: skip
                gr.Markdown(CHAT_HELP, elem_classes=["help"])
                chat_diagnostics = gr.HTML(elem_id="chat-diagnostics", elem_classes=["diag-box"])
        with gr.Column(scale=1, min_width=360):
            with gr.Group(elem_classes=["panel"]):
                gr.HTML('<div class="panel-title">Response template <span class="sub">model output → message</span></div>')
                response = exact_code(language="json", lines=16, max_lines=26, show_label=False, elem_id="response-editor",
                                     wrap_lines=True, buttons=["copy", "download"])  # fmt: skip
                gr.Markdown(RESPONSE_HELP, elem_classes=["help"])
                response_diagnostics = gr.HTML(elem_id="response-diagnostics", elem_classes=["diag-box"])
                drafting = build_draft_panel()
    return dict(chat_template=chat, chat_diagnostics=chat_diagnostics, response_template=response,
                response_diagnostics=response_diagnostics, **drafting)
