"""Provenance on the page: the prompt's pieces and the response template's field sites as the data the
page's script (`provenance.js`) reads, and the controls it adds to the prompt panel.

The engine decides (engine.provenance: which template line and message wrote each character, which
key of the response template claims each kind of segment); this module only writes that down as
compact HTML attributes, so a keystroke sends the prompt once with its provenance, and every hover,
click and cursor move after it is answered in the browser:
- each piece of the prompt is a `<span data-p="i">` (the i-th row of the table below) with the class
  `pm<message % 6>` (`pm-` for none): the colour of its message when "By message" is on;
- the prompt text's `data-pieces` is that table: `[line, column, end line, end column, message (-1:
  none), kind (0 template text, 1 string literal, 2 expression, 3 block), [call site lines]]`;
- its `data-fields` maps a field's colour class (`f0`…) and a segment kind (`open`, `close`, `body`,
  `pending`) to `[line, column, end line, end column]` of the key that claims it in the response
  template.
"""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext

from transformers.utils.chat_parsing.response_templates import ResponseTemplate

from engine.provenance import Explanation, Piece, kind_sites, waiting_for
from engine.regex_bounds import RegexTimeout

KINDS = {"text": 0, "literal": 1, "expression": 2, "block": 3}
# Messages take these many colours, in turn.
MESSAGE_COLOURS = 6
# A prompt with more pieces than this is shown without its provenance (the page would get heavy);
# the command line explains it whole (`render --explain`).
MAX_PAGE_PIECES = 20_000

# The prompt panel's "By message" switch (the page's script keeps it, in this browser).
CONTROLS = (
    '<label class="pv-by-message" title="Colour the prompt by the message the template was handling">'
    '<input type="checkbox" id="pv-by-message"> By message</label>'
)


def prompt_pieces(explanation: Explanation | None) -> tuple[list[tuple[int, int, str, str]], str, str | None]:
    """The tiles `highlight.prompt_html` gives each piece (classes, attributes), the prompt text's
    `data-pieces` attribute, and a note for the info line (why there is no provenance, or what is
    shown whole). Empty when there is nothing to show."""
    if explanation is None:
        return [], "", None
    pieces = explanation.pieces
    if pieces is None:
        return [], "", explanation.note
    if len(pieces) > MAX_PAGE_PIECES:
        return [], "", (f"where each character came from is not shown: {len(pieces):,} pieces, over the page's "
                        f"{MAX_PAGE_PIECES:,} (python -m engine render --explain lists them)")
    tiles = [(p.start, p.end, _message_class(p.message), f' data-p="{i}"') for i, p in enumerate(pieces)]
    table = [_row(p) for p in pieces]
    return tiles, f' data-pieces="{_attr(table)}"', explanation.note


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


def _row(piece: Piece) -> list:
    return [piece.line, piece.column, piece.end_line, piece.end_column, -1 if piece.message is None else piece.message,
            KINDS.get(piece.kind, 2), [site.line for site in piece.calls]]


def _message_class(message: int | None) -> str:
    return "pm-" if message is None else f"pm{message % MESSAGE_COLOURS}"


def _attr(value: Sequence | dict) -> str:
    return html.escape(json.dumps(value, separators=(",", ":")), quote=True)
