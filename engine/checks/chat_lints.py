"""Chat template lints: portability to the other engines (measured, see portability), layout
whitespace that reaches the prompt, and fields the two templates disagree about.

Every finding comes from Jinja's own lexer/parser (see jinja_analysis) and, where behaviour matters
(what gets printed, which whitespace reaches the prompt), from rendering the cases: a lint reports
what actually happens to the prompt, not what the source looks like."""

from __future__ import annotations

from ..jinja_analysis import block_tag_name, lex, normalise_newlines
from ..text import short
from ..transformers_compat import REASONING_FIELDS
from .context import CheckContext
from .history_calls import NAME as HISTORY_CALLS
from .history_calls import history_calls
from .portability import printed_structures, python_literals, python_methods
from .results import CheckResult, Location


def check_chat_lints(ctx: CheckContext) -> list[CheckResult]:
    """Every chat template lint; a lint with no finding reports one pass."""
    results: list[CheckResult] = []
    for name, lint, ok in (
        ("chat_lint.python_method", python_methods, "Every Python method the template calls works the same in every engine."),
        ("chat_lint.python_literal", python_literals, "True / False / None (if used) work the same in every engine."),
        ("chat_lint.print_without_tojson", printed_structures, "No dict or list is printed differently in another engine."),
        ("chat_lint.whitespace_leak", whitespace_leaks, "No block tag leaks layout whitespace into the prompt."),
        ("chat_lint.unread_field", unread_fields, "The chat template reads every field the response template writes."),
        ("chat_lint.unwritten_field", unwritten_fields, "The response template writes every field the chat template reads from assistant messages."),
        (HISTORY_CALLS, history_calls, "The history writes tool calls as the tool instructions tell the model to "
         "(or the instructions show no format of the library)."),
    ):
        if ctx.template is None and name in ("chat_lint.unread_field", "chat_lint.unwritten_field"):
            continue  # they compare with the response template: none yet (run_checks says so)
        found = lint(ctx)
        for result in found:
            result.name = name
        results += found or [CheckResult(name, "pass", ok)]
    return results


def _finding(status: str, details: str, line: int | None, column: int | None, source: str = "chat_template") -> CheckResult:
    return CheckResult("", status, details, Location(source, line, column))  # type: ignore[arg-type]


def whitespace_leaks(ctx: CheckContext) -> list[CheckResult]:
    """Layout whitespace next to a block tag (`{% if %}`, `{% for %}`, …) that reaches the prompt
    (`info`: blank lines may be the format the model was trained on).
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
                f"{what} reaches the prompt (cases: {', '.join(leaked)}). That may be the format the model was "
                f"trained on; if you do not mean it, write {fix}. If you do, a string says so: {{{{ '\\n' }}}}."
            )
        elif not _reached(ctx, text, token.start, token.end):
            details = f"{what} would reach the prompt, but no case renders this part of the template (unconfirmed). If you do not mean it, write {fix}."
        else:
            continue  # rendered, yet the prompt does not change: the text is captured, e.g. by {% set %}
        # A matter of taste, never a warning: blank lines may be exactly what the model was trained on.
        out.append(_finding("info", details, tag.line, tag.column))
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
    """Fields the chat template writes into the prompt from assistant messages that the response
    template never writes: the model can produce them (the template renders them) but parsing never
    gives them back. Keys only tested (`{% if message.prefix %}`) are request flags, not output."""
    fields = ctx.fields
    if fields is None:
        return []
    written = set(ctx.template.fields) | set(ctx.template.defaults)
    if written & set(REASONING_FIELDS):
        written |= set(REASONING_FIELDS)  # transformers aliases the reasoning names before rendering
    out = []
    for name, read in sorted(fields.assistant_reads(values_only=True).items()):
        if name == "role" or name in written or name in ctx.documented:
            continue
        out.append(_finding(
            "warn",
            f"The chat template writes `{name}` of assistant messages into the prompt, but the response "
            f"template never writes it: if the model writes it, parsing drops it.",
            read.line, read.column,
        ))  # fmt: skip
    return out

