"""Chat template lints: the portability rules for Jinja outside Python (JavaScript, C++ and Rust
implementations render chat templates too), and fields the two templates disagree about.

Every finding comes from Jinja's own lexer/parser (see jinja_analysis) and, where behaviour matters
(what gets printed, which whitespace reaches the prompt), from rendering the cases: a lint reports
what actually happens to the prompt, not what the source looks like."""

from __future__ import annotations

from jinja2 import nodes

from ..transformers_compat import REASONING_FIELDS, plain_data, template_inputs
from ..text import short
from .context import CheckContext
from .jinja_analysis import TokenIndex, block_tag_name, describe_node, environment, lex, normalise_newlines, parse
from .results import CheckResult, Location

# Python methods with a Jinja filter that does the same, and the filter to use instead.
METHOD_FILTERS = {
    "strip": "trim",
    "lower": "lower",
    "upper": "upper",
    "title": "title",
    "capitalize": "capitalize",
    "items": "items",
    "replace": "replace",
    "join": "join",
}
PYTHON_LITERALS = {"True": "true", "False": "false", "None": "none"}
_PROBE = "_playground_probe"


def check_chat_lints(ctx: CheckContext) -> list[CheckResult]:
    """Every chat template lint; a lint with no finding reports one pass."""
    results: list[CheckResult] = []
    for name, lint, ok in (
        ("chat_lint.python_method", python_methods, "No Python method is called where a Jinja filter exists."),
        ("chat_lint.python_literal", python_literals, "Constants are spelled true / false / none."),
        ("chat_lint.print_without_tojson", printed_structures, "No dict or list is printed without |tojson."),
        ("chat_lint.whitespace_leak", whitespace_leaks, "No block tag leaks layout whitespace into the prompt."),
        ("chat_lint.unread_field", unread_fields, "The chat template reads every field the response template writes."),
        ("chat_lint.unwritten_field", unwritten_fields, "The response template writes every field the chat template reads from assistant messages."),
    ):
        found = lint(ctx)
        for result in found:
            result.name = name
        results += found or [CheckResult(name, "pass", ok)]
    return results


def _finding(status: str, details: str, line: int | None, column: int | None, source: str = "chat_template") -> CheckResult:
    return CheckResult("", status, details, Location(source, line, column))  # type: ignore[arg-type]


def python_methods(ctx: CheckContext) -> list[CheckResult]:
    """`.strip()` and friends: Python string/dict methods other implementations may not have."""
    source = ctx.chat_template
    index = TokenIndex(lex(source))
    out = []
    for call in parse(source).find_all(nodes.Call):
        if isinstance(call.node, nodes.Getattr) and call.node.attr in METHOD_FILTERS:
            method, fix = call.node.attr, METHOD_FILTERS[call.node.attr]
            column = index.column(call.node.lineno, "name", method, after=".")
            target = describe_node(call.node.node)
            args = "(…)" if call.args or call.kwargs else ""
            example = f"{target}|{fix}{args}" if method != "join" else f"items|join({target})"
            out.append(_finding(
                "warn",
                f"`{target}.{method}()` is a Python method; Jinja outside Python may not have it. "
                f"Use the `{fix}` filter instead, e.g. `{example}`.",
                call.node.lineno, column,
            ))  # fmt: skip
    return out


def python_literals(ctx: CheckContext) -> list[CheckResult]:
    """`True` / `False` / `None`: Python's spelling. Jinja's parser accepts both spellings and keeps
    no trace of which was used, so this reads its lexer's tokens."""
    tokens = lex(ctx.chat_template)
    index = TokenIndex(tokens)
    out = []
    for i, token in enumerate(tokens):
        if token.kind == "name" and token.value in PYTHON_LITERALS and index.previous(i).value != ".":
            out.append(_finding(
                "warn",
                f"`{token.value}` is Python's spelling; write `{PYTHON_LITERALS[token.value]}`, which every "
                "Jinja implementation understands.",
                token.line, token.column,
            ))  # fmt: skip
    return out


def printed_structures(ctx: CheckContext) -> list[CheckResult]:
    """A dict or list printed (or joined with `~`, or passed to |string) without |tojson. Python
    prints `{'a': 1}`, JavaScript `[object Object]`: the prompt depends on the implementation.
    Found by rendering every case with each printed value checked (a probe filter wrapped around it
    in the AST); dict and list literals are flagged even where no case reaches them."""
    source = ctx.chat_template
    env = environment(source).overlay()
    ast = env.parse(source)
    index = TokenIndex(lex(source))
    sites: list[tuple[int, int | None, str, str]] = []  # line, column, expression, how it is used
    hits: dict[int, str] = {}

    def probe(value: object, site: int) -> object:
        if isinstance(value, (dict, list, tuple)) and site not in hits:
            hits[site] = type(value).__name__
        return value

    def wrap(node: nodes.Expr, column: int | None, how: str) -> nodes.Expr:
        sites.append((node.lineno, column, describe_node(node), how))
        if isinstance(node, (nodes.Dict, nodes.List)):
            hits[len(sites) - 1] = "dict" if isinstance(node, nodes.Dict) else "list"
        return nodes.Filter(node, _PROBE, [nodes.Const(len(sites) - 1)], [], None, None, lineno=node.lineno)

    outputs = list(ast.find_all(nodes.Output))
    concats = list(ast.find_all(nodes.Concat))
    stringified = [f for f in ast.find_all(nodes.Filter) if f.name == "string" and f.node is not None]
    for output in outputs:
        for i, child in enumerate(output.nodes):
            if not isinstance(child, nodes.TemplateData):
                output.nodes[i] = wrap(child, index.column(child.lineno, "variable_begin", None), "printed")
    for concat in concats:
        column = index.column(concat.lineno, "operator", "~")
        concat.nodes = [wrap(n, column, "joined with `~`") for n in concat.nodes]
    for node in stringified:
        node.node = wrap(node.node, index.column(node.lineno, "name", "string", after="|"), "turned into text with |string")
    env.filters = {**env.filters, _PROBE: probe}
    try:
        template = env.from_string(ast)
    except Exception:  # noqa: BLE001 - a template that does not compile is reported as a diagnostic
        return []
    for case in ctx.cases:
        try:
            template.render(**_template_inputs(ctx, case))
        except Exception:  # noqa: BLE001 - render errors are the round-trip checks' to report
            continue
    out = []
    for site, kind in sorted(hits.items(), key=lambda hit: (sites[hit[0]][0], sites[hit[0]][1] or 0)):
        line, column, expression, how = sites[site]
        out.append(_finding(
            "warn",
            f"`{expression}` is a {kind}, {how} without |tojson: Python prints it as a Python literal, "
            f"other Jinja implementations differently. Use `{expression}|tojson`.",
            line, column,
        ))  # fmt: skip
    return out


def _template_inputs(ctx: CheckContext, case) -> dict:
    """What transformers passes a template for this case (the same preparation as
    `render_jinja_template`: plain data, None values dropped, reasoning aliased)."""
    messages, kwargs = template_inputs(
        case.messages, {**ctx.special_tokens, **case.special_tokens, **ctx.template_kwargs, **case.template_kwargs}
    )
    return {
        **kwargs,
        "messages": messages,
        "tools": plain_data(case.tools),
        "documents": plain_data(case.documents),
        "add_generation_prompt": case.add_generation_prompt,
    }


def whitespace_leaks(ctx: CheckContext) -> list[CheckResult]:
    """Layout whitespace next to a block tag (`{% if %}`, `{% for %}`, …) that reaches the prompt.
    transformers renders with trim_blocks and lstrip_blocks, so Jinja's lexer already removes the
    usual newline after a tag and the indentation before one; whitespace it still emits as text is a
    candidate. A candidate is reported when deleting it changes some case's prompt (the leak is real),
    or, marked unconfirmed, when no case renders that part of the template."""
    source = ctx.chat_template
    text = normalise_newlines(source)
    tokens = lex(source)
    baseline = [ctx.render(case).prompt for case in ctx.cases]
    out = []
    for i, token in enumerate(tokens):
        if token.kind != "data" or token.value.strip() or "\n" not in token.value:
            continue
        tags = []
        if i + 1 < len(tokens) and tokens[i + 1].kind == "block_begin":
            name = block_tag_name(tokens, i + 1)
            tags.append((tokens[i + 1], f"`{{%- {name}` (a `-` on the tag after it)"))
        if i > 0 and tokens[i - 1].kind == "block_end":
            begin = max(j for j in range(i) if tokens[j].kind == "block_begin")
            name = block_tag_name(tokens, begin)
            tags.append((tokens[begin], f"`{{% {name} -%}}` (a `-` on the tag before it)"))
        if not tags:
            continue
        edited = text[: token.start] + text[token.end :]
        leaked = [
            case.name for case, prompt in zip(ctx.cases, baseline)
            if prompt is not None and ctx.render(case, chat_template=edited).prompt not in (None, prompt)
        ]  # fmt: skip
        tag, fix = tags[0]
        what = f"The whitespace {short(token.value)!r} next to this block tag"
        if leaked:
            details = (
                f"{what} reaches the prompt (cases: {', '.join(leaked)}). Write {fix}, or put the text in a "
                "string if you mean it: {{ '\\n' }}."
            )
        elif not _reached(ctx, text, token.start, token.end):
            details = f"{what} would reach the prompt, but no case renders this part of the template (unconfirmed). Write {fix}."
        else:
            continue  # rendered, yet the prompt does not change: the text is captured, e.g. by {% set %}
        out.append(_finding("warn", details, tag.line, tag.column))
    return out


def _reached(ctx: CheckContext, text: str, start: int, end: int) -> bool:
    """Whether any case renders the data token at [start, end): replace it with a marker and look."""
    marker = "\x00playground-marker\x00"
    edited = text[:start] + marker + text[end:]
    return any(marker in (ctx.render(case, chat_template=edited).prompt or "") for case in ctx.cases)


def unread_fields(ctx: CheckContext) -> list[CheckResult]:
    """Fields the response template writes that the chat template never reads: a parsed message loses
    them when the conversation is rendered again. Documented differences are expected, not findings."""
    fields = ctx.fields
    if fields is None:
        return []
    out = []
    written = [*ctx.template.fields, *[k for k in ctx.template.defaults if k not in ctx.template.fields]]
    for name in written:
        if name == "role" or fields.reads(name) or name in ctx.documented:
            continue
        location = ctx.field_location(name) if name in ctx.template.fields else ctx.key_location("defaults", name)
        result = CheckResult(
            "", "warn",
            f"The response template writes `{name}`, but the chat template never reads it: a parsed message loses "
            f"`{name}` when it is rendered back into the conversation.",
            location,
        )  # fmt: skip
        out.append(result)
    return out


def unwritten_fields(ctx: CheckContext) -> list[CheckResult]:
    """Fields the chat template reads from assistant messages that the response template never writes:
    the model can produce them (the template renders them) but parsing never gives them back."""
    fields = ctx.fields
    if fields is None:
        return []
    written = set(ctx.template.fields) | set(ctx.template.defaults)
    if written & set(REASONING_FIELDS):
        written |= set(REASONING_FIELDS)  # transformers aliases the reasoning names before rendering
    out = []
    for name, read in sorted(fields.assistant_reads().items()):
        if name == "role" or name in written or name in ctx.documented:
            continue
        out.append(_finding(
            "warn",
            f"The chat template reads `{name}` from messages that may be the assistant's, but the response "
            f"template never writes it: if the model writes it, parsing drops it.",
            read.line, read.column,
        ))  # fmt: skip
    return out

