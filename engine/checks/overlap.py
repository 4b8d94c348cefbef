"""Literal delimiters that transformers cannot stream reliably (transformers 5.24, upstream).

A field's `open` (or `close`) may list several literals; transformers compiles them into one
alternation and, while streaming, asks the `regex` module for a partial match. When one literal
ends inside another (`"<"` inside `"<|im_end|>"`, `"a"` inside `"<tool_call>"`), a chunk that
ends after the shorter one but before the longer one is complete lets the shorter one match
first: the parse then depends on how the output was cut into chunks. (A literal that ends where
the other ends, `"call>"` in `"<tool_call>"`, completes together with it and is harmless.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Overlap:
    """`inner` ends inside `outer`, both in `field`'s `key` list."""

    field: str
    key: str  # "open" or "close"
    inner: str
    outer: str

    def explain(self) -> str:
        return (f"Field `{self.field}`: the {self.key} literal {self.inner!r} ends inside {self.outer!r}, so while "
                f"streaming it can match before {self.outer!r} is complete, and the result depends on where the "
                "output was cut into chunks (transformers' streaming parser, as of 5.24). Keep one field's literals "
                "from overlapping: drop the shorter one, or give it its own field.")


def overlapping_literals(template: Any) -> list[Overlap]:
    """Every pair of one field's open or close literals where one ends strictly inside the other."""
    found = []
    for name, field in template.fields.items():
        for key, literals in (("open", field.open_literals), ("close", field.close_literals)):
            for inner in literals or []:
                for outer in literals or []:
                    if inner != outer and _ends_inside(inner, outer):
                        found.append(Overlap(name, key, inner, outer))
    return found


def _ends_inside(inner: str, outer: str) -> bool:
    """Whether `inner` occurs in `outer` somewhere it ends before `outer` does."""
    start = outer.find(inner)
    while start != -1:
        if start + len(inner) < len(outer):
            return True
        start = outer.find(inner, start + 1)
    return False
