"""What a check returns: a status (pass / warn / fail), details a person can act on, and where to look."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ..diagnostics import Diagnostic

# `info`: a fact worth knowing that is no problem (a matter of taste, what a template requires, an
# engine that was not checked, a difference the author marked as intended); it never fails a run.
Status = Literal["pass", "info", "warn", "fail"]
# Worst first: the order a report is summarised in.
SEVERITY = {"fail": 3, "warn": 2, "info": 1, "pass": 0}


@dataclass(frozen=True)
class Location:
    """The editor a result points into ("chat_template", "response_template", "case" or "output") and a
    1-based line/column in its text, so the Checks tab can jump there. Line is None when a result is
    about the whole text."""

    source: str
    line: int | None = None
    column: int | None = None

    def to_dict(self) -> dict:
        return {"source": self.source, "line": self.line, "column": self.column}

    def __str__(self) -> str:
        where = self.source
        if self.line is not None:
            where += f":{self.line}" + (f":{self.column}" if self.column is not None else "")
        return where


@dataclass
class CheckResult:
    """One outcome of one check. `name` is stable (CI scripts can match on it), e.g.
    "round_trip.message" or "chat_lint.python_method"; `subject` says what was checked when a check
    runs per case or per recording ("case 'weather'", "recording 'think-then-answer'")."""

    name: str
    status: Status
    details: str
    location: Location | None = None
    subject: str | None = None
    # Why the author says this result is intended (then the status is `info`); None otherwise.
    intended: str | None = None

    @property
    def key(self) -> str:
        """How an intended difference names this result: `name` or `name [subject]`."""
        return f"{self.name} [{self.subject}]" if self.subject else self.name

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "status": self.status,
            "details": self.details,
            "location": self.location.to_dict() if self.location else None,
            "subject": self.subject,
            "intended": self.intended,
        }

    def __str__(self) -> str:
        head = f"{self.status.upper():4}  {self.name}"
        if self.subject:
            head += f" [{self.subject}]"
        if self.location is not None:
            head += f" at {self.location}"
        return head + "\n" + "\n".join("      " + line for line in self.details.splitlines())


@dataclass
class CheckReport:
    """Every check result, plus the diagnostics for inputs that could not be read (a response template
    that is not valid JSON, a chat template with a syntax error, a recording naming an unknown case)."""

    checks: list[CheckResult] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    # {engine: {case: {"status": identical | differs | error | not checked, "details", ...}}}
    engines: dict[str, dict[str, dict]] = field(default_factory=dict)

    @property
    def status(self) -> Status:
        """The worst status; input errors count as a failure. `info` counts as a pass."""
        worst: Status = "pass"
        for result in self.checks:
            if result.status != "info" and SEVERITY[result.status] > SEVERITY[worst]:
                worst = result.status
        if any(d.severity == "error" for d in self.diagnostics):
            worst = "fail"
        return worst

    def to_dict(self) -> dict:
        return {
            "checks": [c.to_dict() for c in self.checks],
            "diagnostics": [d.to_dict() for d in self.diagnostics],
            "engines": self.engines,
        }

    def counts(self) -> dict[str, int]:
        out = {"pass": 0, "info": 0, "warn": 0, "fail": 0}
        for result in self.checks:
            out[result.status] += 1
        return out
