"""axe-core (Deque's accessibility engine, npm `axe-core`), injected into the page the browser tests
drive: a WCAG 2 A/AA audit of what is on screen. Installed once, pinned, into the gitignored cache
(`engine.npm_packages`, beside @huggingface/jinja; `.ci/run` installs it, and so does the first
test that needs it).

    python -c "from tests.browser import axe; print(axe.install() or 'axe-core ready')"
"""

from __future__ import annotations

from playwright.sync_api import Page

from engine import npm_packages

PACKAGE = "axe-core"
VERSION = "4.14.1"
# WCAG 2.0 and 2.1, levels A and AA: what "accessible" means in the issue (and in most laws).
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
SERIOUS = ("serious", "critical")


def install() -> str | None:
    """Install axe-core unless it is there; why it could not, or None."""
    return npm_packages.install({PACKAGE: VERSION})


def script() -> str:
    return (npm_packages.package_dir(PACKAGE) / "axe.min.js").read_text(encoding="utf-8")


def audit(page: Page, include: str | None = None) -> list[dict]:
    """axe-core's WCAG 2 A/AA violations on `page` as it is now (within `include`, a CSS selector, when
    given): each with its rule id, impact, and the nodes (their selector and axe's summary)."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(content=script())
    return page.evaluate(
        """async ([include, tags]) => {
             const result = await axe.run(include ? {include: [include]} : document,
                                          {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']});
             return result.violations.map((v) => ({id: v.id, impact: v.impact, help: v.help,
               nodes: v.nodes.map((n) => ({target: n.target.join(' '), summary: n.failureSummary, html: n.html.slice(0, 200)}))}));
           }""",
        [include, TAGS],
    )


def serious(violations: list[dict]) -> list[dict]:
    """The serious and critical ones (what the page must have none of)."""
    return [v for v in violations if v["impact"] in SERIOUS]


def describe(violations: list[dict]) -> str:
    """A readable report for an assertion message: rule, impact, count, the first few nodes."""
    lines = []
    for v in violations:
        lines.append(f"{v['id']} ({v['impact']}, {len(v['nodes'])} nodes): {v['help']}")
        lines += [f"    {n['target']}: {n['summary'].splitlines()[-1] if n['summary'] else ''}" for n in v["nodes"][:6]]
    return "\n".join(lines)
