"""Provenance: where every character came from. In a prompt, the template line (and columns) that
wrote it and the message the template was handling (`explain_prompt`, what `render(explain=True)`
calls); in a model's output, the key of the response template that claimed it and where that key
is written, and for held-back text the delimiters it may still become (`explain_segments`)."""

from .output import FieldSite, SegmentOrigin, explain_segments, field_sites, kind_sites, waiting_for
from .page import PageExplanation, for_page
from .prompt import Explanation, Piece, Site, explain_prompt

__all__ = ["Explanation", "FieldSite", "PageExplanation", "Piece", "SegmentOrigin", "Site", "explain_prompt",
           "explain_segments", "field_sites", "for_page", "kind_sites", "waiting_for"]
