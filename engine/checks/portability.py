"""Portability lints grounded in the engines: Python methods (`.strip()`, `.items()`, …), Python's
`True` / `False` / `None`, and dicts or lists printed as text. Each construct found in the template
(by Jinja's own parser) is rendered as a probe in transformers and in every other engine; it is
reported only where some engine fails on it or prints something else, naming those engines. A
rewrite is suggested only after it gave transformers' text in every engine."""

from __future__ import annotations

from typing import Any

from jinja2 import nodes

from ..jinja_analysis import TokenIndex, describe_node, environment, lex, parse
from ..transformers_compat import plain_data
from .context import CheckContext
from .probes import Probe, describe, run_probes
from .results import CheckResult, Location

_STRING = "\n  hello, wORLD!  \n"
_DICT = {"city": "Paris", "days": 2}
STRING_METHODS = frozenset({
    "strip", "lstrip", "rstrip", "lower", "upper", "title", "capitalize", "replace", "split", "splitlines",
    "startswith", "endswith", "join", "count", "find",
})  # fmt: skip
DICT_METHODS = frozenset({"items", "keys", "values", "get"})
# The filter that may replace a method (tried in every engine before it is suggested).
FILTERS = {"strip": "trim", "lower": "lower", "upper": "upper", "title": "title", "capitalize": "capitalize",
           "items": "items", "replace": "replace", "join": "join"}  # fmt: skip
_LIST_RESULTS = frozenset({"split", "splitlines", "keys", "values"})
_BOOL_RESULTS = frozenset({"startswith", "endswith"})
PYTHON_LITERALS = {"True": "true", "False": "false", "None": "none"}
_LITERAL_VALUES = {"True": True, "False": False, "None": None}
_PROBE = "_playground_probe"


def _finding(details: str, line: int | None, column: int | None) -> CheckResult:
    return CheckResult("", "warn", details, Location("chat_template", line, column))


def _fails_in(probe: Probe) -> str:
    return describe(probe.problems())


def _print(expression: str, method: str) -> str:
    """A probe template printing the result of `expression` as plain text in every engine (lists
    item by item, booleans as y/n: engines print those differently, which is not the point here)."""
    if method == "items":
        return f"{{% for k, v in {expression} %}}{{{{ k }}}}={{{{ v }}}};{{% endfor %}}"
    if method in _LIST_RESULTS:
        return f"{{% for v in {expression} %}}{{{{ v }}}};{{% endfor %}}"
    if method in _BOOL_RESULTS:
        return f"{{% if {expression} %}}y{{% else %}}n{{% endif %}}"
    return f"{{{{ {expression} }}}}"


def python_methods(ctx: CheckContext) -> list[CheckResult]:
    """`.strip()` and friends, where some engine fails on them or gives other text."""
    source = ctx.chat_template
    index = TokenIndex(lex(source))
    sites: list[tuple[nodes.Call, str, list[str], dict[str, Any], int | None]] = []
    for call in parse(source).find_all(nodes.Call):
        if not isinstance(call.node, nodes.Getattr):
            continue
        method = call.node.attr
        if method not in STRING_METHODS | DICT_METHODS:
            continue
        column = index.column(call.node.lineno, "name", method, after=".")
        if call.kwargs or call.dyn_args or call.dyn_kwargs:
            continue
        args, variables = [], {"x": dict(_DICT) if method in DICT_METHODS else (", " if method == "join" else _STRING)}
        for i, arg in enumerate(call.args):
            if isinstance(arg, nodes.Const):
                args.append(repr(arg.value))
            else:
                args.append(f"a{i}")
                variables[f"a{i}"] = ["a", "b"] if method == "join" else "city" if method == "get" else ("l", "L")[i % 2]
        if method == "get" and call.args and isinstance(call.args[0], nodes.Const) and isinstance(call.args[0].value, str):
            # The key the template asks for is there: what matters is how `.get` reads it, not how an
            # engine prints a missing value (Python's None).
            variables["x"][call.args[0].value] = "Paris"
        sites.append((call, method, args, variables, column))
    originals = run_probes([(_print(f"x.{m}({', '.join(a)})", m), v) for _, m, a, v, _ in sites])
    rewrites = []
    for (_, method, args, variables, _), original in zip(sites, originals):
        if original.problems() and method in FILTERS:
            expression = "a0|join(x)" if method == "join" else f"x|{FILTERS[method]}" + (f"({', '.join(args)})" if args else "")
            rewrites.append((_print(expression, method), variables))
    rewritten = iter(run_probes(rewrites))
    out = []
    for (call, method, args, _, column), original in zip(sites, originals):
        if not original.problems():
            continue
        target = describe_node(call.node.node)
        details = f"`{target}.{method}(…)` is a Python method: {_fails_in(original)}."
        if method in FILTERS:
            rewrite = next(rewritten)
            arguments = f"({', '.join(args)})" if args and method != "join" else ""
            suggestion = f"{describe_node(call.args[0]) if call.args else '…'}|join({target})" if method == "join" else f"{target}|{FILTERS[method]}{arguments}"
            if rewrite.agrees_everywhere(original.reference):
                details += f" Use the `{FILTERS[method]}` filter, `{suggestion}`: it gives the same text in every engine."
            else:
                details += f" No rewrite is offered: the `{FILTERS[method]}` filter does not give the same text everywhere ({_fails_in(rewrite) or 'transformers gives other text'})."
        out.append(_finding(details, call.node.lineno, column))
    return out


def python_literals(ctx: CheckContext) -> list[CheckResult]:
    """`True` / `False` / `None` where some engine does not understand them. Jinja's parser accepts
    both spellings and keeps no trace of which was used, so this reads its lexer's tokens."""
    tokens = lex(ctx.chat_template)
    index = TokenIndex(tokens)
    found = [t for i, t in enumerate(tokens) if t.kind == "name" and t.value in PYTHON_LITERALS and index.previous(i).value != "."]
    spellings = sorted({t.value for t in found})
    probes = run_probes([(_literal_probe(s), {"x": _LITERAL_VALUES[s]}) for s in spellings])
    fixes = run_probes([(_literal_probe(PYTHON_LITERALS[s]), {"x": _LITERAL_VALUES[s]}) for s in spellings])
    by_spelling = dict(zip(spellings, zip(probes, fixes)))
    out = []
    for token in found:
        probe, fix = by_spelling[token.value]
        if not probe.problems():
            continue
        details = f"`{token.value}` is Python's spelling: {_fails_in(probe)}."
        if fix.agrees_everywhere(probe.reference):
            details += f" Write `{PYTHON_LITERALS[token.value]}`: it gives the same text in every engine."
        out.append(_finding(details, token.line, token.column))
    return out


def _literal_probe(spelling: str) -> str:
    return f"{{% if x == {spelling} %}}1{{% else %}}0{{% endif %}}{{% if {spelling} %}}1{{% else %}}0{{% endif %}}"


def printed_structures(ctx: CheckContext) -> list[CheckResult]:
    """A dict or list printed (or joined with `~`, or passed to |string) where some engine prints it
    differently. Found by rendering every case with each printed value checked (a probe filter
    wrapped around it in the AST); dict and list literals are checked even where no case reaches them."""
    source = ctx.chat_template
    env = environment(source).overlay()
    ast = env.parse(source)
    index = TokenIndex(lex(source))
    sites: list[tuple[int, int | None, str, str]] = []  # line, column, expression, how it is used
    hits: dict[int, Any] = {}

    def probe(value: object, site: int) -> object:
        if isinstance(value, (dict, list, tuple)) and site not in hits:
            hits[site] = plain_data(value)
        return value

    def wrap(node: nodes.Expr, column: int | None, how: str) -> nodes.Expr:
        sites.append((node.lineno, column, describe_node(node), how))
        if isinstance(node, (nodes.Dict, nodes.List)):
            try:
                hits[len(sites) - 1] = plain_data(node.as_const())
            except Exception:  # noqa: BLE001 - not a constant: a sample of its kind
                hits[len(sites) - 1] = dict(_DICT) if isinstance(node, nodes.Dict) else ["a", 1]
        return nodes.Filter(node, _PROBE, [nodes.Const(len(sites) - 1)], [], None, None, lineno=node.lineno)

    for output in list(ast.find_all(nodes.Output)):
        for i, child in enumerate(output.nodes):
            if not isinstance(child, nodes.TemplateData):
                output.nodes[i] = wrap(child, index.column(child.lineno, "variable_begin", None), "printed")
    for concat in list(ast.find_all(nodes.Concat)):
        column = index.column(concat.lineno, "operator", "~")
        concat.nodes = [wrap(n, column, "joined with `~`") for n in concat.nodes]
    for node in [f for f in ast.find_all(nodes.Filter) if f.name == "string" and f.node is not None]:
        node.node = wrap(node.node, index.column(node.lineno, "name", "string", after="|"), "turned into text with |string")
    env.filters = {**env.filters, _PROBE: probe}
    try:
        template = env.from_string(ast)
    except Exception:  # noqa: BLE001 - a template that does not compile is reported as a diagnostic
        return []
    for case in ctx.cases:
        variables = ctx.variables(case)
        try:
            template.render(**variables)
        except Exception:  # noqa: BLE001 - render errors are the round-trip checks' to report
            continue
    ordered = sorted(hits, key=lambda site: (sites[site][0], sites[site][1] or 0))
    forms = {"printed": "{{ x }}", "joined with `~`": "{{ 'a' ~ x }}", "turned into text with |string": "{{ x|string }}"}
    probes = run_probes([(forms[sites[s][3]], {"x": hits[s]}) for s in ordered])
    tojson = run_probes([("{{ x|tojson }}", {"x": hits[s]}) for s in ordered])
    out = []
    for site, result, as_json in zip(ordered, probes, tojson):
        if not result.problems():
            continue
        line, column, expression, how = sites[site]
        kind = "dict" if isinstance(hits[site], dict) else "list"
        details = f"`{expression}` is a {kind}, {how} without |tojson: {_fails_in(result)}."
        if as_json.agrees_everywhere(as_json.reference):
            details += (f" `{expression}|tojson` gives the same text in every engine (JSON), though not the text "
                        "transformers prints now, so the prompt changes.")  # fmt: skip
        out.append(_finding(details, line, column))
    return out
