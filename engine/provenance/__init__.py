"""Provenance: where every character came from. In a prompt, the template line (and columns) that
wrote it and the message the template was handling (`explain_prompt`); in a model's output, the
response template's field that claimed it and where that field is written."""

from .prompt import Explanation, Piece, Site, explain_prompt

__all__ = ["Explanation", "Piece", "Site", "explain_prompt"]
