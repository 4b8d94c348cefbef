"""The page, declared in one place."""

from __future__ import annotations

import gradio as gr
import transformers


def build() -> gr.Blocks:
    with gr.Blocks(title="Template playground") as page:
        gr.Markdown(
            "# Template playground\n"
            f"Chat templates and response templates, rendered and parsed by transformers {transformers.__version__}."
        )
    return page
