"""`check --format github`: every finding as a GitHub Actions workflow command, so a model repo's CI
shows it on the pull request's diff: `::error file=…,line=…,col=…,endColumn=…,title=…::message`
(`::warning` for a warning, `::notice` for a note). The file is the path the author gave (a model
folder's `chat_template.jinja`, or `tokenizer_config.json` at the line of the template kept inside
it); a finding with no place is an annotation without a file. Values are escaped as GitHub's
workflow commands require: `%`, CR and LF everywhere, and `:` and `,` in properties too.

`diff --format github` puts a behaviour diff on the same lines: a notice on each line of the new
chat template that wrote changed prompt text (`behaviour_annotations`)."""

from __future__ import annotations

from collections.abc import Callable

from ..behaviour import BehaviourDiff, Change
from ..behaviour.report import change_line, site_text
from ..checks import CheckReport
from ..diagnostics import Diagnostic
from ..hub.files import TOKENIZER_CONFIG
from ._model_inputs import Origin

LEVELS = {"fail": "error", "warn": "warning", "info": "notice", "error": "error", "warning": "warning"}


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(level: str, message: str, *, file: str | None = None, line: int | None = None,
               column: int | None = None, end_column: int | None = None, title: str | None = None) -> str:
    """One workflow command. `end_column` is the column after the token (a Diagnostic's), so
    GitHub's inclusive `endColumn` is one less."""
    properties = []
    if file:
        properties.append(f"file={escape_property(file)}")
        if line:
            properties.append(f"line={line}")
            if column:
                properties.append(f"col={column}")
                if end_column and end_column - 1 > column:
                    properties.append(f"endColumn={end_column - 1}")
    if title:
        properties.append(f"title={escape_property(title)}")
    head = f"::{level}" + (" " + ",".join(properties) if properties else "")
    return f"{head}::{escape_data(message)}"


def _where(source: str, line: int | None, column: int | None, end: int | None, file: str | None,
           origins: dict[str, Origin]) -> tuple[str | None, int | None, int | None, int | None]:
    """(file, line, column, end column) in the author's files of a place in one of the inputs."""
    if source == "tokenizer" and file == TOKENIZER_CONFIG and "tokenizer" in origins:
        return origins["tokenizer"].path, line, column, end
    if file:
        return file, line, column, end
    origin = origins.get(source)
    if origin is None:
        return None, None, None, None
    file_line, file_column = origin.place(line, column)
    if end is not None and column is not None and file_column is not None:
        end = file_column + (end - column)
    return origin.path, file_line, file_column, end


def github_annotations(report: CheckReport, origins: dict[str, Origin]) -> list[str]:
    """Every finding of a report (not the passes) and every diagnostic, as workflow commands."""
    lines = []
    # Findings with no place and the same words (every family "Not run: the chat template has
    # errors") are one annotation naming them all: GitHub lists unplaced annotations at the top of
    # the run, where six copies of one sentence hide the finding that has a place.
    unplaced: dict[tuple[str, str], list[str]] = {}
    for result in report.checks:
        if result.status == "pass":
            continue
        location = result.location
        file, line, column, _ = _where(location.source, location.line, location.column, None, None, origins) \
            if location is not None else (None, None, None, None)
        title = result.name + (f" [{result.subject}]" if result.subject else "")
        if file is None:
            unplaced.setdefault((LEVELS[result.status], result.details), []).append(title)
            continue
        lines.append(annotation(LEVELS[result.status], result.details, file=file, line=line, column=column, title=title))
    lines += [annotation(level, details, title=", ".join(titles)) for (level, details), titles in unplaced.items()]
    lines += [diagnostic_annotation(d, origins) for d in report.diagnostics]
    return lines


def diagnostic_annotation(d: Diagnostic, origins: dict[str, Origin]) -> str:
    file, line, column, end = _where(d.source, d.line, d.column, d.end_column, d.file, origins)
    message = d.message + (f"\nHint: {d.hint}" if d.hint else "")
    return annotation(LEVELS.get(d.severity, "notice"), message, file=file, line=line, column=column, end_column=end,
                      title=f"{d.source.replace('_', ' ')}")


def behaviour_annotations(diff: BehaviourDiff, origin: Callable[[str | None], Origin | None]) -> list[str]:
    """A behaviour diff as workflow commands: the summary as one notice; a notice on each line of the
    new chat template that wrote changed prompt text, naming the conversations it changes (and the
    first change, whitespace visible); a warning where a conversation no longer renders. `origin`
    finds the file of a named chat template (None: the only one) in the author's files."""
    lines = [annotation("notice", diff.summary(), title=TITLE)]
    places: dict[tuple, list[tuple[str, Change]]] = {}
    unplaced: list[str] = []
    for conversation in diff.changed:
        if conversation.after_error and not conversation.before_error:
            where = _behaviour_place(origin, conversation.after_template, conversation.after_error_line, None)
            lines.append(annotation("warning", f"{conversation.name!r} no longer renders: {conversation.after_error}",
                                    title=TITLE, **where))
            continue
        for change in conversation.changes:
            sites = [s for s in change.after_sites if s.wrote] or change.after_sites
            if sites:
                places.setdefault((sites[0].template, sites[0].line, sites[0].column), []).append((conversation.name, change))
            else:
                unplaced.append(annotation("notice", f"{conversation.name!r}: {change_line(change)}", title=TITLE))
    for (template, line, column), found in places.items():
        names = list(dict.fromkeys(name for name, _ in found))
        first = found[0][1]
        message = (f"The prompt changes here in {len(names)} conversation{'s' if len(names) != 1 else ''} "
                   f"({', '.join(names)}): {change_line(first)} (before: {site_text(first.before_sites)})")
        lines.append(annotation("notice", message, title=TITLE, **_behaviour_place(origin, template, line, column)))
    return lines + unplaced


TITLE = "what changes for the model"


def _behaviour_place(origin: Callable[[str | None], Origin | None], template: str | None, line: int | None,
                     column: int | None) -> dict:
    """The file, line and column of a place in the new chat template (empty: not in a file)."""
    found = origin(template)
    if found is None or line is None:
        return {}
    file_line, file_column = found.place(line, column)
    return {"file": found.path, "line": file_line, "column": file_column}
