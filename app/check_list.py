"""The Checks tab's list of results: what needs attention first (failures, warnings, notes), each
with its details wrapped and a button that jumps to the line it points at; passes folded away."""

from __future__ import annotations

from engine import limits
from engine.checks import CheckResult
from engine.text import shorten

from .highlight import esc

# Results a person must act on come first; passes are folded away.
ORDER = {"fail": 0, "warn": 1, "info": 2, "pass": 3}
LOCATION = {"chat_template": "chat template", "response_template": "response template", "case": "case"}


def ordered(checks: list[CheckResult]) -> list[CheckResult]:
    """Failures, then warnings, then notes, then passes (each in the order the checks ran)."""
    return sorted(checks, key=lambda c: ORDER.get(c.status, 9))


# The list's share of an answer (limits.MAX_ANSWER_BYTES), and the longest details one result shows:
# a result's details may quote a whole prompt or output.
LIST_BYTES = limits.MAX_ANSWER_BYTES * 70 // 100
MAX_DETAILS = 4_000


def checks_html(checks: list[CheckResult], selected: int | None = None) -> str:
    """The results as a list (`checks` already `ordered`): what needs attention first, details
    wrapped, passes folded; a result that points at a line has a button that jumps there. Within
    `LIST_BYTES`: past it, a line counts the results not shown."""
    if not checks:
        return ""
    rows: list[str] = []
    size = 0
    for i, c in enumerate(checks):
        row = _row(i, c, i == selected)
        size += len(row)
        if size > LIST_BYTES:
            break
        rows.append(row)
    shown = checks[: len(rows)]
    passes = [r for r, c in zip(rows, shown) if c.status == "pass"]
    others = [r for r, c in zip(rows, shown) if c.status != "pass"]
    folded = f'<details class="passed"><summary>{len(passes)} passed</summary>{"".join(passes)}</details>' if passes else ""
    more = (f'<div class="check-row info">… and {len(checks) - len(rows):,} more results, not shown (the list is over '
            f"the {LIST_BYTES // 1000:,} kB the page shows of it)</div>") if len(rows) < len(checks) else ""
    return f'<div class="check-list">{"".join(others)}{more}{folded}</div>'


def _row(index: int, result: CheckResult, selected: bool) -> str:
    location = result.location
    jump = ""
    if location is not None and location.line is not None and location.source in LOCATION:
        where = f"{LOCATION[location.source]}, line {location.line}" + (f":{location.column}" if location.column else "")
        jump = (f'<button class="check-jump" data-source="{esc(location.source)}" data-line="{location.line}">'
                f"→ {esc(where)}</button>")  # fmt: skip
    subject = f'<span class="check-subject">{esc(result.subject)}</span>' if result.subject else ""
    cls = f"check-row {esc(result.status)}" + (" selected" if selected else "")
    # Focusable, so a keyboard selects a result as a click does (Enter or Space; checks_panel.PICK_JS).
    current = ' aria-current="true"' if selected else ""
    return (f'<div class="{cls}" data-index="{index}" tabindex="0"{current}><div class="check-head"><span class="check-status">'
            f'{esc(result.status)}</span><b class="check-name">{esc(result.name)}</b>{subject}{jump}</div>'
            f'<pre class="check-details">{esc(shorten(result.details, MAX_DETAILS))}</pre></div>')  # fmt: skip
