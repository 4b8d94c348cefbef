"""A readable coloured view of traced output for the terminal (ANSI): each region in its field's
colour, delimiters in reverse video, dropped text struck through, pending text dimmed."""

from __future__ import annotations

from collections.abc import Iterable

from .trace import Segment

# Foreground colours handed to fields in the order the response template declares them.
PALETTE = [36, 33, 35, 32, 34, 31, 96, 93, 95, 92]
RESET = "\x1b[0m"


def field_colours(field_names: Iterable[str]) -> dict[str, int]:
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(field_names)}


def paint(text: str, segments: list[Segment], colours: dict[str, int]) -> str:
    """`text` with ANSI styling for each segment."""
    out = []
    for seg in segments:
        piece = text[seg.start : seg.end]
        colour = colours.get(seg.field or "", 37)
        if seg.kind == "body":
            style = f"{colour}"
        elif seg.kind in ("open", "close"):
            style = f"7;{colour}"
        elif seg.kind == "discarded":
            style = "9;90"
        else:  # pending
            style = f"2;{colour}"
        out.append(f"\x1b[{style}m{piece}{RESET}")
    return "".join(out)


def legend(colours: dict[str, int]) -> str:
    parts = [f"\x1b[{c}m{name}{RESET}" for name, c in colours.items()]
    parts += ["\x1b[7mdelimiter" + RESET, "\x1b[9;90mdropped" + RESET, "\x1b[2mpending" + RESET]
    return "  ".join(parts)
