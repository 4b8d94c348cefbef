"""The prompt panel: the rendered prompt with special tokens boxed, whitespace made visible on a
toggle (·, →, ↵), the generation prompt and the `start_anchor` position marked, and the regions the
prompt already opened (a prefilled `<think>`) coloured as the parser sees them, and where each character
came from (hover, click; "By message" colours it by message: `provenance_view`, `provenance.js`). The
HTML comes from `workbench.build_prompt_view`; this module declares the components (the tokenizer
loader, below the workbench, is `token_panel`'s)."""

from __future__ import annotations

from typing import Any

import gradio as gr

from .provenance_view import CONTROLS

PROMPT_LEGEND = (
    '<div class="legend prompt-legend"><span class="chip tok">special token</span>'
    '<span class="chip gen">generation prompt</span><span class="chip anchor">▾ parsing starts (after start_anchor)</span>'
    '<span class="chip from-prompt">region the prompt opened</span></div>'
)


def build_prompt_panel() -> dict[str, Any]:
    """The prompt view, its info line and the whitespace toggle, by name."""
    with gr.Group(elem_classes=["panel"], elem_id="prompt-panel"):
        with gr.Row(equal_height=True, elem_classes=["panel-head"]):
            gr.HTML('<div class="panel-title">Prompt <span class="sub">exactly what the model reads</span></div>')
            show_tokens = gr.Checkbox(label="Tokens", value=False, elem_id="show-tokens", container=False, scale=0,
                                      min_width=90)
            show_whitespace = gr.Checkbox(label="Whitespace · → ↵", value=False, elem_id="show-whitespace",
                                          container=False, scale=0, min_width=150)  # fmt: skip
            gr.HTML(CONTROLS, elem_id="pv-controls", min_width=110)
        gr.HTML(PROMPT_LEGEND, elem_id="prompt-legend")
        view = gr.HTML(elem_id="prompt-view")
        info = gr.HTML(elem_id="prompt-info", elem_classes=["info-line"])
    return dict(prompt=view, prompt_info=info, show_whitespace=show_whitespace, show_tokens=show_tokens)
