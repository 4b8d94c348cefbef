"""Diagnostics: every mistake a user can make becomes one of these, shown next to the editor it belongs to."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from typing import Literal

Severity = Literal["error", "warning", "info"]
# Where a diagnostic points: the chat template editor, the response template editor, the case
# (messages / tools JSON), the model output, the runner that produced it, or the session's tokenizer.
Source = Literal["chat_template", "response_template", "case", "output", "runner", "hub", "preset", "tokenizer"]


@dataclass(frozen=True)
class Diagnostic:
    """One problem, located as precisely as we can: 1-based line and column in its source text,
    the offending line as a snippet, and a hint that says how to fix it. `span` is a character
    range in the model output for problems found while tracing (the region that failed).
    `end_column` is the column just after the offending token, when the problem is one token (an
    unknown filter's name), so an editor can mark exactly it. `file` names the file of a model
    folder the line is in, when that is not the source's own editor (`tokenizer_config.json`).
    `offset` is the exact character of the model output where parsing stopped (in the whole output,
    inside `span`), when the parser says."""

    severity: Severity
    message: str
    source: Source
    line: int | None = None
    column: int | None = None
    snippet: str | None = None
    hint: str | None = None
    span: tuple[int, int] | None = None
    end_column: int | None = None
    file: str | None = None
    offset: int | None = None

    def to_dict(self) -> dict:
        data = asdict(self)
        if self.span is not None:
            data["span"] = list(self.span)
        return data

    @property
    def caret(self) -> str | None:
        """The line under the snippet that marks the place: `^` under each character of the token."""
        if self.column is None:
            return None
        width = self.end_column - self.column if self.end_column and self.end_column > self.column else 1
        return " " * (self.column - 1) + "^" * width

    def __str__(self) -> str:
        where = ""
        if self.line is not None:
            where = f"line {self.line}" + (f", column {self.column}" if self.column is not None else "") + ": "
        text = f"{self.severity}: {where}{self.message}"
        if self.hint:
            text += f" (hint: {self.hint})"
        return text


def line_col(text: str, offset: int) -> tuple[int, int]:
    """1-based (line, column) of a character offset in `text`."""
    offset = max(0, min(offset, len(text)))
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, column


def line_text(text: str, line: int | None) -> str | None:
    """The 1-based `line` of `text` (the snippet shown under a diagnostic), or None when out of range."""
    if line is None or line < 1:
        return None
    lines = text.splitlines()
    return lines[line - 1] if line <= len(lines) else None


def has_errors(diagnostics: list[Diagnostic]) -> bool:
    return any(d.severity == "error" for d in diagnostics)


def json_error(text: str, error: json.JSONDecodeError, source: Source, what: str = "Invalid JSON") -> Diagnostic:
    """A JSON syntax error in `text` (a response template, a case's messages…) at its line and
    column, with a hint for the mistakes people make most (Python spellings, quotes, backslashes)."""
    snippet = line_text(text, error.lineno)
    hint = None
    if snippet and re.search(r"\b(True|False|None)\b", snippet):
        hint = "JSON spells these true, false and null."
    elif "Expecting property name enclosed in double quotes" in error.msg:
        hint = "JSON keys need double quotes, and a trailing comma before } is not allowed."
    elif "Invalid \\escape" in error.msg:
        hint = r"Backslashes in JSON strings must be doubled: write \\s for the regex \s."
    return Diagnostic("error", f"{what}: {error.msg}", source, line=error.lineno, column=error.colno,
                      snippet=snippet, hint=hint)
