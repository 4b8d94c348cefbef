"""Literal delimiters that transformers cannot stream reliably (transformers 5.24, upstream).

A field's `open` (or `close`) may list several literals; transformers compiles them into one
alternation and, while streaming, asks the `regex` module for a partial match, which reports a
complete match of one literal rather than an earlier partial match of another. So when one
literal ends inside another (`"a"` inside `"<tool_call>"`), a chunk that ends after the shorter
one but before the longer one is complete lets the shorter one match first, and the parse depends
on how the output was cut into chunks. A literal that is a prefix of another (`"<"` of
`"<|im_end|>"`) is held back while it could grow, which covers one more character but not two.
Harmless, and not reported: a literal that ends where the other ends (`"call>"` in
`"<tool_call>"`), or a prefix one character shorter (`"<tool_call>"`, `"<tool_call>\n"`).
Found by streaming every 4-chunk split of such outputs; see tests/test_checks_overlap.py.
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
    """Whether `inner` occurs in `outer` where streaming can complete it first (see above)."""
    start = outer.find(inner)
    while start != -1:
        short_by = len(outer) - (start + len(inner))
        if short_by >= (2 if start == 0 else 1):
            return True
        start = outer.find(inner, start + 1)
    return False
