"""Provenance on the page: the prompt's pieces and the response template's field sites as the data the
page's script (`provenance.js`) reads, and the controls it adds to the prompt panel.

The engine decides (engine.provenance: which template line and message wrote each character, which
key of the response template claims each kind of segment) and writes it in the page's form where the
render ran, bounded there (engine.provenance.page); this module only forwards it as HTML attributes,
so a keystroke sends the prompt once with its provenance, and every hover, click and cursor move
after it is answered in the browser:
- each piece of the prompt is a `<span data-p="i">` (the i-th row of the table below) with the class
  `pm<message % 6>` (`pm-` for none): the colour of its message when "By message" is on;
- the prompt text's `data-pieces` is that table: `[line, column, end line, end column, message (-1:
  none), kind (0 template text, 1 string literal, 2 expression, 3 block), call chain (-1: none)]`,
  and its `data-chains` the call chains, each once: `[chain it extends (-1: none), call site line]`;
- its `data-fields` maps a field's colour class (`f0`…) and a segment kind (`open`, `close`, `body`,
  `pending`) to `[line, column, end line, end column]` of the key that claims it in the response
  template.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext

from transformers.utils.chat_parsing.response_templates import ResponseTemplate

from engine.provenance import PageExplanation, kind_sites, waiting_for
from engine.regex_bounds import RegexTimeout

# Messages take these many colours, in turn.
MESSAGE_COLOURS = 6

# The prompt panel's "By message" switch (the page's script keeps it, in this browser).
CONTROLS = (
    '<label class="pv-by-message" title="Colour the prompt by the message the template was handling">'
    '<input type="checkbox" id="pv-by-message"> By message</label>'
)


def prompt_pieces(explanation: PageExplanation | None) -> tuple[list[tuple[int, int, str, str]], str, str | None]:
    """The tiles `highlight.prompt_html` gives each piece (classes, attributes), the prompt text's
    `data-pieces` and `data-chains` attributes, and a note for the info line (why there is no
    provenance, or what is shown whole). Empty when there is nothing to show. The explanation came
    from the worker already bounded to what the page shows (engine.provenance.page)."""
    if explanation is None:
        return [], "", None
    if not explanation.shown:
        return [], "", explanation.note
    tiles = [(start, end, _message_class(message), f' data-p="{i}"') for i, (start, end, message) in enumerate(explanation.tiles)]
    return tiles, f' data-pieces="{html.escape(explanation.table)}" data-chains="{html.escape(explanation.chains)}"', explanation.note


def fields_data(response_text: str, classes: dict[str, str]) -> str:
    """The prompt text's `data-fields` attribute: where each field's keys are written, by colour
    class and segment kind."""
    sites = kind_sites(response_text)
    table = {classes[name]: {kind: [s.line, s.column, s.end_line, s.end_column] for kind, s in kinds.items()}
             for name, kinds in sites.items() if name in classes}
    return f' data-fields="{_attr(table)}"' if table else ""


def held_back(template: ResponseTemplate,
              bounded: Callable[[], AbstractContextManager] = nullcontext) -> Callable[[str, str | None], str]:
    """The title of held-back output text: the delimiters it may still become (engine.provenance),
    matched within `bounded` (a visitor's regex allowance: patterns are the author's)."""

    def title(text: str, field: str | None) -> str:
        try:
            with bounded():
                waits = waiting_for(template, text, field)
        except RegexTimeout:
            waits = []
        return "held back: may still become " + " or ".join(waits) if waits else "held back by the parser"

    return title


def _message_class(message: int) -> str:
    return "pm-" if message < 0 else f"pm{message % MESSAGE_COLOURS}"


def _attr(value: dict) -> str:
    return html.escape(json.dumps(value, separators=(",", ":")), quote=True)
