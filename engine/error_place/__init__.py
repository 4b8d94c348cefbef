"""Where a Jinja error really is. Jinja reports a line only, and for a syntax error sometimes the
line after the broken one (`{{ x` without `}}` fails on the next token). On a one-line template (a
2,000-character DeepSeek template is one line) a line is no help at all, so every error is placed
on the line and the columns of the token the author has to look at (`Place`):

- a **syntax error** (lexing, parsing: `syntax.py`) on the token the parser stopped at, found by
  parsing again with every token's offset recorded; when the parser expected the end of a tag, just
  after the last good token (where `%}` or `}}` is missing); an unclosed block, comment or raw block
  at its opening tag;
- a **compile-time error** (`compile.py`: an unknown filter or test, `break` outside a loop, a
  block defined twice, a repeated argument; jinja2 raises these after parsing succeeded, some as
  `TemplateAssertionError`, some as Python's own `SyntaxError` on the code it generated) on the node
  that caused it, found by generating the code again with each node's lines recorded;
- a **runtime error** (`runtime.py`) on the node that failed, found by rendering again with the
  nodes on the failing line instrumented: the node being evaluated when the error was raised, or,
  for an undefined value, the read that produced it (`undefined_read`: the one reading of what
  Jinja's message names, for every caller).

A node's columns are those of its anchor token (`anchors.py`): `.attr`, `['key']`, a name,
`|filter`, `is test`, a tag's keyword (`break`, `for`), a keyword argument's name.
"""

from .anchors import Place
from .compile import compile_error_place
from .runtime import runtime_error_place, undefined_name, undefined_read
from .syntax import syntax_error_place

__all__ = [
    "Place",
    "compile_error_place",
    "runtime_error_place",
    "syntax_error_place",
    "undefined_name",
    "undefined_read",
]
