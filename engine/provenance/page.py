"""An explanation as the page shows it, made where the render ran (the worker) and bounded there.

The page needs, for each piece of the prompt, its offsets and message (to wrap its text in a span),
and a row its script reads on hover: `[line, column, end line, end column, message (-1: none), kind
(0 text, 1 literal, 2 expression, 3 block), call chain (-1: none)]`; and the call chains once each,
`[chain it extends (-1: none), line of the call site]` (a piece's call sites, outermost first, are
its chain's lines up to the root). `for_page` writes that, counting the pieces and the bytes it
takes as it goes, and stops at the first limit: past one, nothing is sent but a note. So the server
gets at most what the page shows, already in the page's form, and only forwards it: a template that
writes 100,000 pieces through 100 levels of macro calls costs the server nothing (issue 29)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from .prompt import Explanation

KINDS = {"text": 0, "literal": 1, "expression": 2, "block": 3}
# What the page adds around each piece's text, beside its row: `<span class="pmN" data-p="i">` and
# `</span>` (the index's digits are counted on their own). A piece cut by a special token or the
# generation prompt's start repeats it; the prompt view's own budget covers that.
TILE_BYTES = 34
CLI_HINT = "python -m engine render --explain lists them"


@dataclass
class PageExplanation:
    """`tiles[i]` = (start, end, message or -1) of piece i in the prompt; `table` and `chains` are the
    JSON texts the page's script reads (row i of `table` is piece i); `note`: why nothing is shown,
    or what is shown whole. Nothing shown: `tiles` is empty."""

    tiles: list[tuple[int, int, int]] = field(default_factory=list)
    table: str = ""
    chains: str = ""
    note: str | None = None

    @property
    def shown(self) -> bool:
        return bool(self.tiles)

    def size(self) -> int:
        """The bytes it adds to the page (tiles counted as the page writes them)."""
        return len(self.table) + len(self.chains) + sum(TILE_BYTES + len(str(i)) for i in range(len(self.tiles)))


def for_page(explanation: Explanation | None, max_pieces: int, max_bytes: int) -> PageExplanation | None:
    """`explanation` as the page shows it, or a note saying why not: more than `max_pieces` pieces, or
    more than `max_bytes` for the page. Its work stops at the first limit it passes."""
    if explanation is None:
        return None
    rows = explanation.rows
    if rows is None:
        return PageExplanation(note=explanation.note)
    if len(rows) > max_pieces:
        return PageExplanation(note=f"where each character came from is not shown: {len(rows):,} pieces, over the "
                                    f"page's {max_pieces:,} ({CLI_HINT})")
    chains = json.dumps([[parent, explanation.origins[site].line] for parent, site in explanation.chains],
                        separators=(",", ":"))
    size = len(chains)
    parts: list[str] = []
    kinds = [KINDS.get(o.kind, 2) for o in explanation.origins]
    tiles = []
    for i, row in enumerate(rows):
        start, end, origin, message, chain, _ = row
        line, column, end_line, end_column = explanation.place(row)
        message = -1 if message is None else message
        part = json.dumps([line, column, end_line, end_column, message, kinds[origin], chain], separators=(",", ":"))
        size += len(part) + 1 + TILE_BYTES + len(str(i))
        if size > max_bytes:
            return PageExplanation(note=f"where each character came from is not shown: its {len(rows):,} pieces take "
                                        f"more than the {max_bytes // 1000:,} kB the page gives them ({CLI_HINT})")
        parts.append(part)
        tiles.append((start, end, message))
    return PageExplanation(tiles, "[" + ",".join(parts) + "]", chains, explanation.note)
