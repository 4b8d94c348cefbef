"""Where every character of a model's output went, in the response template's own text: the field
that claimed each segment of a trace (engine.trace), and the key of that field that did it (its
`open`/`close` or pattern for a delimiter, its content parser for the body) with the line and
columns where the key is written; for text the parser holds back, the delimiters it may still
become.

The segments are the trace's, unchanged: this only looks up where their fields are written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from transformers.utils.chat_parsing.response_templates import ResponseTemplate

from ..diagnostics import line_col
from ..response_spec import key_spans
from ..trace import Segment


@dataclass(frozen=True)
class FieldSite:
    """Where a key of a field (or the field itself, `key` None) is written in the response
    template's text: 1-based line and column of the key, and of the end of its value (exclusive)."""

    field: str
    key: str | None
    line: int
    column: int
    end_line: int
    end_column: int

    def to_dict(self) -> dict:
        return {"field": self.field, "key": self.key, "line": self.line, "column": self.column,
                "end_line": self.end_line, "end_column": self.end_column}  # fmt: skip


@dataclass(frozen=True)
class SegmentOrigin:
    """A trace segment with where it came from: `site`, the key of the response template that
    claimed it (None for text no region claimed); `waits_for`, for held-back text, the delimiters
    it may still become."""

    segment: Segment
    site: FieldSite | None
    waits_for: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict:
        data: dict[str, Any] = self.segment.to_dict()
        data["site"] = None if self.site is None else self.site.to_dict()
        if self.segment.kind == "pending":
            data["waits_for"] = list(self.waits_for)
        return data


# Which keys of a field claim each kind of segment, first found wins.
_KEYS = {
    "open": ("open", "open_pattern"),
    "close": ("close", "close_pattern"),
    "body": ("content", "transform", "transform_each"),
    "pending": (),
}


def field_sites(text: str) -> dict[str, dict[str | None, FieldSite]]:
    """Every field of a response template's JSON text and where each of its keys is written
    (`None`: the whole field). Empty for text that is not valid JSON."""
    spans = key_spans(text)
    out: dict[str, dict[str | None, FieldSite]] = {}
    for path, (start, end) in spans.items():
        if len(path) in (2, 3) and path[0] == "fields" and isinstance(path[1], str):
            key = path[2] if len(path) == 3 else None
            if key is not None and not isinstance(key, str):
                continue
            line, column = line_col(text, start)
            end_line, end_column = line_col(text, end)
            out.setdefault(path[1], {})[key] = FieldSite(path[1], key, line, column, end_line, end_column)
    return out


def segment_site(sites: dict[str, dict[str | None, FieldSite]], segment: Segment) -> FieldSite | None:
    """The key of the response template that claimed `segment` (its field, for a body with the
    default content parser; None for dropped text)."""
    keys = sites.get(segment.field or "")
    if not keys:
        return None
    for key in _KEYS.get(segment.kind, ()):
        if key in keys:
            return keys[key]
    return keys.get(None)


def kind_sites(text: str) -> dict[str, dict[str, FieldSite]]:
    """For each field, the key that claims each kind of segment (`open`, `close`, `body`,
    `pending`), as `segment_site` decides: what the page looks up when an output region is clicked."""
    sites = field_sites(text)
    out: dict[str, dict[str, FieldSite]] = {}
    for name in sites:
        for kind in _KEYS:
            site = segment_site(sites, Segment(0, 0, kind, name))  # type: ignore[arg-type]
            if site is not None:
                out.setdefault(name, {})[kind] = site
    return out


def waiting_for(template: ResponseTemplate, pending: str, current: str | None) -> list[str]:
    """The delimiters held-back text may still become, as the parser watches for them: the close of
    the open region, or (in the implicit region, or none) every field's open and the implicit
    region's close. Each says which field and key, and the delimiter (`"</think>"`, or the pattern)."""
    fields = template.fields
    if current is not None and current != template.implicit:
        watched = [("close", fields[current])] if current in fields else []
    else:
        watched = [("open", f) for f in fields.values() if f.open_re is not None]
        implicit = fields.get(template.implicit) if template.implicit else None
        if implicit is not None and implicit.close_re is not None:
            watched.append(("close", implicit))
    out = []
    for kind, spec in watched:
        pattern, literals = (spec.open_re, spec.open_literals) if kind == "open" else (spec.close_re, spec.close_literals)
        if pattern is None:
            continue
        if literals is not None:
            shown = [repr(text) for text in literals if text.startswith(pending) or pending.startswith(text)]
        else:
            match = pattern.match(pending, partial=True)
            shown = [f"/{pattern.pattern}/"] if match is not None and (match.partial or match.end() == len(pending)) else []
        if shown:
            key = kind if literals is not None else f"{kind}_pattern"
            out.append(f"{key} of {spec.name}: {' or '.join(shown)}")
    return out


def explain_segments(segments: list[Segment], text: str, template: ResponseTemplate, output: str) -> list[SegmentOrigin]:
    """Each segment of `output` (a trace's, tiling it) with the key of the response template's
    `text` that claimed it, and for held-back text the delimiters it may still become."""
    sites = field_sites(text)
    out = []
    for segment in segments:
        waits: tuple[str, ...] = ()
        if segment.kind == "pending":
            waits = tuple(waiting_for(template, output[segment.start : segment.end], segment.field))
        out.append(SegmentOrigin(segment, segment_site(sites, segment), waits))
    return out
