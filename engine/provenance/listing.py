"""Provenance as a person reads it on a terminal (`render --explain`, `trace --explain`): one row per
piece, with its template line (or response template key), its message, and its text with the
whitespace made visible."""

from __future__ import annotations

from collections.abc import Sequence

from ..text import short
from .output import SegmentOrigin
from .prompt import Piece

TEXT_WIDTH = 48


def prompt_listing(prompt: str, pieces: Sequence[Piece], max_chars: int | None = None) -> str:
    """`line:col  message  kind  text  (source; macro; call sites)` for each piece of the prompt. At
    most about `max_chars`: the pieces past it are a last line that counts them."""
    rows = [("where", "message", "kind", "text", "written by")]
    size = 0
    for piece in pieces:
        if max_chars is not None and size > max_chars:
            break
        where = "?" if piece.line is None else f"{piece.line}:{piece.column}"
        notes = []
        if piece.source is not None and piece.kind != "text":
            source = " ".join(piece.source.split())  # one row per piece: an expression may span lines
            notes.append(source if len(source) <= TEXT_WIDTH else source[: TEXT_WIDTH - 1] + "…")
        if piece.macro is not None:
            notes.append(f"in macro {piece.macro} (line {piece.macro_line})")
        if piece.calls:
            notes.append("via line " + ", ".join(str(site.line) for site in piece.calls))
        if piece.template is not None:
            notes.append(f"template {piece.template}")
        message = "-" if piece.message is None else str(piece.message + 1)  # counted from 1, as the page does
        rows.append((where, message, piece.kind, short(prompt[piece.start : piece.end], TEXT_WIDTH), "; ".join(notes)))
        size += sum(len(cell) for cell in rows[-1]) + 2 * TEXT_WIDTH  # (with the columns' padding)
    listing = _table(rows)
    if len(rows) - 1 < len(pieces):
        listing += (f"\n… and {len(pieces) - len(rows) + 1:,} more pieces, not listed: the listing is over the "
                    f"{max_chars / 1e6:g} MB a command prints (PLAYGROUND_MAX_COMMAND_OUTPUT_MB)")
    return listing


def output_listing(output: str, origins: Sequence[SegmentOrigin]) -> str:
    """`start-end  kind  field  text  (response template line:col key; what held-back text waits for)`."""
    rows = [("chars", "kind", "field", "text", "claimed by")]
    for origin in origins:
        segment, site = origin.segment, origin.site
        claimed = "" if site is None else f"line {site.line}:{site.column} " + (f'"{site.key}"' if site.key else "the field")
        if origin.waits_for:
            claimed += ("; " if claimed else "") + "may become " + " or ".join(origin.waits_for)
        rows.append((f"{segment.start}-{segment.end}", segment.kind, segment.field or "-",
                     short(output[segment.start : segment.end], TEXT_WIDTH), claimed))  # fmt: skip
    return _table(rows)


def _table(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join("  ".join([*(cell.ljust(w) for cell, w in zip(row, widths)), row[-1]]).rstrip() for row in rows)
