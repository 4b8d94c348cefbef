"""The author's own cases and recordings, as `check` and `diff` read them from files."""

from __future__ import annotations

from ..cases import Case, Recording
from . import UsageError, read_json


def read_cases(path: str) -> list[Case]:
    """A case file: {"cases": [...]}, a list of cases, or one case (names unique)."""
    data = read_json(path)
    items = data.get("cases") if isinstance(data, dict) and "cases" in data else data
    if isinstance(items, dict):
        items = [items]
    if not isinstance(items, list) or not all(isinstance(c, dict) for c in items):
        raise UsageError(f"{path}: expected {{\"cases\": [...]}}, a list of cases, or one case object")
    cases = []
    for i, item in enumerate(items):
        try:
            cases.append(Case.from_dict(item, name=item.get("name") or f"case {i + 1}"))
        except (TypeError, ValueError) as e:
            raise UsageError(f"{path}: {e}") from e
    names = [c.name for c in cases]
    if len(set(names)) != len(names):
        raise UsageError(f"{path}: case names must be unique (recordings refer to cases by name)")
    return cases


def read_recordings(path: str) -> list[Recording]:
    """A recordings file: {"recordings": [...]} or a list of them."""
    data = read_json(path)
    items = data.get("recordings") if isinstance(data, dict) else data
    if not isinstance(items, list) or not all(isinstance(r, dict) for r in items):
        raise UsageError(f"{path}: expected {{\"recordings\": [...]}} or a list of recordings")
    out = []
    for i, item in enumerate(items):
        try:
            out.append(Recording.from_dict({"name": f"recording {i + 1}", **item}))
        except TypeError as e:
            raise UsageError(f"{path}: recording {i + 1}: {e} (keys: name, case, output, expected, description)") from e
        if not isinstance(out[-1].output, str) or not isinstance(out[-1].case, str):
            raise UsageError(f"{path}: recording {out[-1].name!r} needs \"case\" (a case name) and \"output\" (text)")
    return out

