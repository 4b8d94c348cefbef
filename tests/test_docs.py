"""The README is a door and docs/ is the manual: every relative link points at a file that exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# [text](target) and ![alt](target), outside code blocks; the target up to a space or ')'.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def _links(page: Path) -> list[tuple[int, str]]:
    """(line number, target) of every Markdown link on the page, code blocks left out."""
    found, in_code = [], False
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith("```"):
            in_code = not in_code
            continue
        if not in_code:
            found += [(number, m.group(1)) for m in LINK.finditer(line)]
    return found


def test_every_relative_link_points_at_a_file_that_exists():
    broken = []
    checked = 0
    for page in PAGES:
        for number, target in _links(page):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue  # a web address or an anchor on the same page
            path = target.split("#", 1)[0]
            checked += 1
            if not (page.parent / path).exists():
                broken.append(f"{page.relative_to(ROOT)}:{number}: {target}")
    assert not broken, "links to files that do not exist:\n" + "\n".join(broken)
    assert checked >= len(PAGES) - 1  # the pages do link to each other


def test_the_link_check_finds_a_broken_link(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("See [the guide](missing.md) and ![a picture](here.png).\n```\n[not a link](x.md)\n```\n")
    (tmp_path / "here.png").write_bytes(b"")
    assert _links(page) == [(1, "missing.md"), (1, "here.png")]


def test_readme_is_an_overview_that_opens_with_the_two_commands():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300
    assert text.startswith("---\n") and "sdk: gradio" in text and "app_file: app.py" in text  # the Space card
    blocks = re.findall(r"```bash\n(.*?)```", text, re.S)
    assert blocks[:2] == ["pip install -r requirements.txt && python app.py\n", "bash .ci/run\n"]
    for page in sorted((ROOT / "docs").glob("*.md")):
        assert f"(docs/{page.name})" in text, f"the README does not link {page.name}"
