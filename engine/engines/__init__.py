"""Other Jinja engines that render chat templates in production, rendered beside transformers (the
reference) to tell an author where a template behaves differently:

- `minijinja-tgi`, `minijinja-mistral.rs`: MiniJinja as text-generation-inference and mistral.rs
  configure it (see minijinja_engine);
- `transformers.js`: @huggingface/jinja under Node.js, as transformers.js and the Hub's pages run it.

Every engine gets exactly what transformers hands the template (messages normalised to plain data
with reasoning aliased, tools, documents, add_generation_prompt, special tokens and kwargs), so a
difference is the engine's. Every call is bounded in time and size.

    results = render_all(source, [context, ...])      # {engine: [EngineOutput, ...]}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..render import MAX_PROMPT_CHARS
from ..transformers_compat import plain_data, template_inputs
from . import jinja_js, minijinja_engine

ENGINES = ("minijinja-tgi", "minijinja-mistral.rs", "transformers.js")
LABELS = {
    "minijinja-tgi": "MiniJinja (TGI)",
    "minijinja-mistral.rs": "MiniJinja (mistral.rs)",
    "transformers.js": "@huggingface/jinja (transformers.js)",
}
# Seconds for one engine to render one batch (every case of a check run, or every probe).
TIMEOUT = 10.0

__all__ = ["ENGINES", "LABELS", "EngineOutput", "context_for", "render_all", "unavailable"]


@dataclass(frozen=True)
class EngineOutput:
    """What one engine made of one input: the text, or its error message, or why it was not run."""

    text: str | None = None
    error: str | None = None
    not_checked: str | None = None


def unavailable(engine: str) -> str | None:
    """Why `engine` cannot run on this machine ("not checked: Node.js not found"), or None."""
    if engine == "transformers.js":
        return jinja_js.unavailable()
    return None


def context_for(
    messages: Any,
    tools: Any = None,
    documents: Any = None,
    add_generation_prompt: bool = False,
    kwargs: dict | None = None,
) -> dict:
    """The variables transformers' `render_jinja_template` passes a template, as plain JSON data."""
    plain_messages, plain_kwargs = template_inputs(messages, dict(kwargs or {}))
    return {
        **plain_kwargs,
        "messages": plain_messages,
        "tools": plain_data(tools),
        "documents": plain_data(documents),
        "add_generation_prompt": add_generation_prompt,
    }


def render_all(
    source: str, contexts: list[dict], engines: tuple[str, ...] = ENGINES, *, timeout: float = TIMEOUT,
    sources: list[str] | None = None,
) -> dict[str, list[EngineOutput]]:
    """Render every context with every engine. `sources` gives each context its own template text
    (probes); otherwise all use `source`."""
    texts = sources if sources is not None else [source] * len(contexts)
    out: dict[str, list[EngineOutput]] = {}
    for engine in engines:
        reason = unavailable(engine)
        if reason is not None:
            out[engine] = [EngineOutput(not_checked=reason)] * len(contexts)
            continue
        if engine == "transformers.js":
            pairs = jinja_js.render(list(zip(texts, contexts)), MAX_PROMPT_CHARS, timeout)
        else:
            pairs = minijinja_engine.render(engine, list(zip(texts, contexts)), MAX_PROMPT_CHARS)
        out[engine] = [EngineOutput(text=t, error=e) for t, e in pairs]
    return out
