"""Why a region of a model's output did not parse, said so that an author can act on it: the field and
its content parser (and the response template's line that sets it), the exact character of the
output where parsing stopped (an offset in the whole output, with its line and column there, not in
the region), and a hint that fits the cause. transformers' own message says only
"Extra data: line 1 column 59 (char 58)", counted from the start of the region."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .diagnostics import line_col
from .response_spec import locate
from .text import short


@dataclass(frozen=True)
class ParseFailure:
    """`message` and `hint` for a region that did not parse; `offset`: where it stopped, in the text
    the failure was located in (None when the parser does not say)."""

    message: str
    hint: str | None
    offset: int | None


def parse_failure(error: BaseException, name: str | None, field: Any, text: str, region_start: int, region_end: int,
                  output_start: int = 0, response_text: str | None = None) -> ParseFailure:
    """The failure of field `name` (its compiled `field`, transformers' `ResponseTemplateField`) on
    `text[region_start:region_end]`. `output_start` is where the model's output starts in `text`
    (the positions shown are the output's); `response_text` the response template's JSON, to name
    the line that sets the field's content parser."""
    parser = getattr(field, "content", None)
    where = _template_place(name, parser, response_text)
    cause = _cause(error)
    offset = None
    detail = short(" ".join(str(error).split()), 160)
    hint = None
    if isinstance(cause, json.JSONDecodeError):
        body = text.find(cause.doc, region_start, max(region_end, region_start + len(cause.doc))) if cause.doc else -1
        if body >= 0 and "after dialect transforms" not in str(error):
            offset = body + cause.pos
        detail = cause.msg
        hint = _json_hint(cause, field)
    elif isinstance(cause, SyntaxError) and cause.text is not None and (found := text.find(cause.text, region_start)) >= 0:
        offset = found + max((cause.offset or 1) - 1, 0)
        detail = cause.msg
    if offset is not None:
        line, column = line_col(text[output_start:], offset - output_start)
        detail = detail.removesuffix(" at") + f" at output line {line}, column {column} (character {offset - output_start + 1} of the output)"
    what = f"Field {name!r}" if name else "A region"
    message = f"{what}{where} could not parse its region{' as JSON' if parser == 'json' else ''}: {detail}."
    if hint is None:
        hint = (f"The {parser} parser could not read this text: check that the field's open and close delimiters "
                "frame exactly what the model writes there (the region is highlighted)." if parser else None)
    return ParseFailure(message, hint, offset)


def _template_place(name: str | None, parser: str | None, response_text: str | None) -> str:
    """" (content "json", response template line 12)": what parsed the region, and where that is set."""
    if name is None or parser is None:
        return ""
    line, _ = locate(response_text, ("fields", name, "content")) if response_text else (None, None)
    if line is None and response_text:
        line, _ = locate(response_text, ("fields", name))
    return f' (content "{parser}"' + (f", response template line {line})" if line else ")")


def _cause(error: BaseException) -> BaseException:
    """The parser's own error under transformers' (a JSONDecodeError, a SyntaxError)."""
    seen = error
    while seen.__cause__ is not None and seen.__cause__ is not seen:
        seen = seen.__cause__
        if isinstance(seen, (json.JSONDecodeError, SyntaxError)):
            return seen
    return error


def _json_hint(error: json.JSONDecodeError, field: Any) -> str:
    doc, pos = error.doc, error.pos
    close = next(iter(getattr(field, "close_literals", None) or []), None)
    closing = f" ({close!r})" if close else ""
    if error.msg == "Extra data":
        rest = doc[pos:].strip()
        return (f"The JSON value ends before {short(rest, 40)!r}, which is still inside the region: the region closes "
                f"later{closing} than the JSON does. If the model writes more after its JSON, end the field where the "
                "JSON ends, or leave that text to another field.")  # fmt: skip
    if not doc[pos:].strip():
        return (f"The JSON stops before it is complete: the region closed too early{closing}, or the output was cut "
                "off. If the close delimiter can occur inside the JSON (in an argument), close on a text that cannot.")
    if error.msg.startswith("Unterminated string"):
        return ("A string in the JSON is never closed: the output was cut off, or the region closed inside a string "
                f"(its close delimiter{closing} occurs in an argument).")
    if error.msg.startswith("Expecting property name"):
        if doc[pos : pos + 1] == "'":
            return ("The model writes single-quoted strings (Python style), which JSON does not allow: the json parser "
                    'reads them with "content_args": {"string_delims": [["\'", "\'"]]}, or use content "python-call-list".')
        if doc[pos : pos + 1].isidentifier():
            return 'The model writes keys without quotes: the json parser reads them with "content_args": {"unquoted_keys": true}.'
        return "A key must be a double-quoted string, and JSON allows no comma before }."
    if error.msg.startswith("Invalid control character"):
        return "A raw newline or tab inside a JSON string: JSON writes them \\n and \\t. The model wrote text JSON does not allow."
    return ("This character is not what JSON allows here: the model wrote malformed JSON, or the region does not start "
            "where the JSON does (check the field's open delimiter).")
