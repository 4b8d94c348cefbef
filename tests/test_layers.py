"""The engine's layers read top-down: a lower layer never imports a higher one, and no modules import
each other in a circle (docs/architecture.md draws the layers).

Read from the source with `ast`, every import counts: at the top of a module, inside a function (a
lazy import hides no circle) and under `TYPE_CHECKING`. A new module must be given a layer here."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The layers, lowest first, and what each decides; a module belongs to the layer of its longest
# prefix here (a package stands for every module in it).
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("text and limits", (  # bounds, text, errors, processes: what every layer above may use
        "engine.text", "engine.limits", "engine.errors", "engine.diagnostics", "engine.public", "engine.npm_packages",
        "engine.content_parts", "engine.process_role", "engine.server_guard", "engine.sandbox", "engine.budget",
        "engine.clients", "engine.inputs", "engine.regex_bounds", "engine.regex_portability", "engine.transformers_compat",
        "engine.error_place", "engine.response_spec", "engine.turns", "engine.jinja_analysis",
    )),
    ("render / trace / tokens", (  # what a template writes, what a parser reads, and in which tokens
        "engine", "engine.render", "engine.trace", "engine.terminal", "engine.tokens", "engine.engines", "engine.hub",
        "engine.cases", "engine.presets",
    )),
    ("provenance", ("engine.provenance",)),  # where every character came from
    ("formats and the reading", ("engine.formats", "engine.reading")),  # the format library; what a template writes per field
    ("checks", ("engine.checks",)),  # the judgements
    ("draft", ("engine.draft",)),  # the reading, verified by the checks
    ("what changes for the model", ("engine.behaviour", "engine.publish")),  # two versions compared; a pull request that says so
    ("workspace", ("engine.workspace", "engine.model_workspace")),  # the author's document
    ("runners", ("engine.runners",)),  # where model output comes from
    ("commands / app", ("engine.commands", "engine.cli", "engine.__main__", "app")),  # what people call
)

# The imports that run back up, each with why (and a comment at the import saying so). At most two.
UPWARD: dict[tuple[str, str], str] = {
    ("engine.render", "engine.provenance"): "render(explain=True) explains the render in the same worker call",
}


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules(root: Path, tops: tuple[str, ...] = ("engine", "app")) -> dict[str, Path]:
    """Every Python module under `tops`, by dotted name."""
    return {module_name(p, root): p for top in tops for p in sorted((root / top).rglob("*.py"))}


def statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement, nested ones included (in functions, classes, `if`, `try`, `with`, loops,
    `match`): an import is a statement, so the expressions need not be walked."""
    for node in body:
        yield node
        for name in ("body", "orelse", "finalbody", "handlers"):
            yield from statements(getattr(node, name, None) or [])
        for case in getattr(node, "cases", None) or []:
            yield from statements(case.body)


def imports(root: Path, tops: tuple[str, ...] = ("engine", "app")) -> dict[str, dict[str, int]]:
    """For each module, the modules of `tops` it imports, each with the line of its first import."""
    known = modules(root, tops)
    graph: dict[str, dict[str, int]] = {}
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found: dict[str, int] = {}
        for node in statements(ast.parse(path.read_text(encoding="utf-8"), str(path)).body):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(parent + ([node.module] if node.module else []))
                # `from package import module` imports the module; `from module import name`, the module.
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
            else:
                continue
            for target in targets:
                while target and target not in known:  # `import a.b.c` of a name inside a module
                    target = target.rpartition(".")[0]
                if target and target != name:
                    found.setdefault(target, node.lineno)
        graph[name] = found
    return graph


def circles(graph: dict[str, dict[str, int]] | dict[str, set[str]]) -> list[list[str]]:
    """The sets of modules that import each other in a circle (strongly connected, more than one)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        # Tarjan's algorithm without recursion: (node, iterator over its successors).
        index[start] = low[start] = len(index)
        stack.append(start)
        work = [(start, iter(graph[start]))]
        while work:
            node, successors = work[-1]
            for nxt in successors:
                if nxt not in graph:
                    continue
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    work.append((nxt, iter(graph[nxt])))
                    break
                if nxt in stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    members = []
                    while True:
                        member = stack.pop()
                        members.append(member)
                        if member == node:
                            break
                    if len(members) > 1:
                        found.append(sorted(members))
    return found


def layer_of(module: str) -> int | None:
    best: tuple[int, int] | None = None
    for number, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and (best is None or len(prefix) > best[1]):
                best = (number, len(prefix))
    return None if best is None else best[0]


def room_of(module: str) -> str:
    """The package a module is in (engine's subpackages, the app as one), or the module itself."""
    parts = module.split(".")
    if parts[0] == "app":
        return "app"
    return ".".join(parts[:2]) if len(parts) > 2 or (ROOT / "/".join(parts)).is_dir() else module


def upward(graph: dict[str, dict[str, int]]) -> dict[tuple[str, str], int]:
    """Every import from a lower layer into a higher one: (importer, imported) -> line."""
    return {(a, b): line for a, targets in graph.items() for b, line in targets.items()
            if (layer_of(a) or 0) < (layer_of(b) or 0)}  # fmt: skip


GRAPH = imports(ROOT)


def test_every_module_has_a_layer():
    assert [m for m in GRAPH if layer_of(m) is None] == []


def test_no_modules_import_each_other_in_a_circle():
    assert circles(GRAPH) == []


def test_no_packages_import_each_other_in_a_circle():
    rooms: dict[str, set[str]] = {}
    for a, targets in GRAPH.items():
        rooms.setdefault(room_of(a), set()).update(room_of(b) for b in targets if room_of(b) != room_of(a))
    assert circles(rooms) == []


def test_only_the_allowed_imports_run_back_up_each_with_its_comment():
    assert len(UPWARD) <= 2
    found = upward(GRAPH)
    assert sorted(set(found) - set(UPWARD)) == [], "a lower layer imports a higher one"
    assert sorted(set(UPWARD) - set(found)) == [], "an allowed upward import is gone: take it out of UPWARD"
    for (importer, imported), line in found.items():
        source = modules(ROOT)[importer].read_text(encoding="utf-8").splitlines()
        nearby = source[max(0, line - 4): line]
        assert any("upward" in text.lower() and "#" in text for text in nearby), f"{importer}:{line}: say why it runs up"


def test_the_reading_finds_circles_and_upward_imports_in_a_tree(tmp_path):
    """The analysis on a small tree of its own: a lazy import closes a circle, and runs back up."""
    engine = tmp_path / "engine"
    (engine / "checks").mkdir(parents=True)
    (engine / "__init__.py").write_text("")
    (engine / "render.py").write_text("from . import text\n")
    (engine / "text.py").write_text("def f():\n    from .render import x\n")
    (engine / "checks" / "__init__.py").write_text("from ..workspace import Workspace\nfrom .. import render\n")
    (engine / "workspace.py").write_text("import engine.checks.results\n")
    (engine / "checks" / "results.py").write_text("")
    graph = imports(tmp_path, ("engine",))
    assert graph["engine.checks"] == {"engine.workspace": 1, "engine.render": 2}
    assert graph["engine.workspace"] == {"engine.checks.results": 1}
    assert circles(graph) == [["engine.render", "engine.text"]]
    assert upward(graph) == {("engine.text", "engine.render"): 2, ("engine.checks", "engine.workspace"): 1}
