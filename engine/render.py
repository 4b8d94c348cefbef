"""Render a chat template into the exact prompt text a model reads, the way `apply_chat_template` does.

Rendering is transformers' own (`render_jinja_template`, its sandboxed Jinja environment and its
message normalisation); this module only selects the template, checks the inputs a user typed, and
turns every failure into a `Diagnostic` with a line and column in the template.
"""

from __future__ import annotations

import difflib
import json
import re
import time
from dataclasses import dataclass, field
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import jinja2
from transformers.utils.chat_template_utils import render_jinja_template

from . import limits
from .diagnostics import Diagnostic, line_text
from .error_place import compile_error_place, runtime_error_place, syntax_error_place, undefined_read
from .inputs import check_text, check_value
from .sandbox import bounded_or_why
from .transformers_compat import compile_template, normalize_messages, plain_data, template_inputs

if TYPE_CHECKING:
    # Upward, on purpose (tests/test_layers.py allows it): `explain` explains a render in the same
    # call, so one worker compiles the template once for both, under one time limit. Imported where
    # used, so a render that is not explained never loads the provenance.
    from .provenance import Explanation, PageExplanation

# Rendered prompts longer than this are refused: a template that loops over its own output can
# otherwise eat the server's memory. Real prompts are far below it (a 128k-token context is ~500k chars).
MAX_PROMPT_CHARS = limits.MAX_PROMPT_CHARS

# Names the renderer passes itself; a template kwarg with one of these names would be ambiguous.
RESERVED_KWARGS = frozenset({"messages", "tools", "documents", "add_generation_prompt", "chat_template"})
# How a diagnostic of the template's own raise_exception(...) begins: a refusal the author wrote on
# purpose, unlike an error of the template's code (the checks tell the two apart).
REFUSAL = "The template raised: "

_GENERATION_TAG = re.compile(r"\{%-?\s*generation\s*-?%\}")


@dataclass
class RenderResult:
    """The prompt text (None when rendering failed), the `{% generation %}` spans in it, the name of
    the named template used (None for a single template), and what went wrong. `generation_start`:
    where the generation prompt begins in the prompt, when asked for (`with_generation_start`);
    `explanation`: which template line and message wrote each character, when asked for (`explain`)."""

    prompt: str | None
    generation_spans: list[tuple[int, int]] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    template_name: str | None = None
    generation_start: int | None = None
    # Where each character came from (engine.provenance), when asked for (`explain`).
    explanation: Explanation | None = None
    # ... as the page shows it, bounded where the render ran (`explain="page"`, engine.provenance.page).
    page_explanation: PageExplanation | None = None

    @property
    def ok(self) -> bool:
        return self.prompt is not None

    def to_dict(self, max_chars: int | None = None) -> dict:
        """As JSON data. `max_chars`: the pieces are left out (`pieces` null, the note says why) when
        their JSON would be longer (99,000 pieces reached through 50 macro calls each are 516 MB):
        counted piece by piece, so it stops there."""
        data: dict[str, Any] = {
            "prompt": self.prompt,
            "generation_spans": [list(span) for span in self.generation_spans],
            "template_name": self.template_name,
            "diagnostics": [d.to_dict() for d in self.diagnostics],
        }
        explanation = self.explanation
        if explanation is not None:
            data["pieces"], data["explanation_note"] = None, explanation.note
            if explanation.rows is not None:
                data["pieces"] = pieces = []
                size = 0
                for row in explanation.rows:
                    pieces.append(explanation.piece(row).to_dict())
                    # (as printed: indented, one level in)
                    size += len(json.dumps(pieces[-1], ensure_ascii=False, indent=2)) + 8 * len(pieces[-1]) + 8
                    if max_chars is not None and size > max_chars:
                        data["pieces"] = None
                        data["explanation_note"] = (
                            f"The pieces are not listed: {len(explanation.rows):,} pieces, whose JSON is longer than "
                            "this output may be (PLAYGROUND_MAX_COMMAND_OUTPUT_MB).")
                        break
        return data


def select_template(
    chat_template: str | dict[str, str], tools: list | None = None, name: str | None = None
) -> tuple[str, str | None]:
    """Pick the template text to render, with transformers' rule for named templates
    (`PreTrainedTokenizerBase.get_chat_template`): an explicit name wins, else `tool_use` when tools
    are given, else `default`. Raises ValueError with a message for the user."""
    if isinstance(chat_template, str):
        return chat_template, None
    if name is not None:
        if name not in chat_template:
            raise ValueError(f"No chat template named {name!r}. Available: {sorted(chat_template)}")
        return chat_template[name], name
    if tools is not None and "tool_use" in chat_template:
        return chat_template["tool_use"], "tool_use"
    if "default" in chat_template:
        return chat_template["default"], "default"
    raise ValueError(
        f"These named templates have no 'default' and none was chosen. Available: {sorted(chat_template)}"
    )


def render(
    chat_template: str | dict[str, str],
    messages: Any,
    tools: Any = None,
    documents: Any = None,
    *,
    add_generation_prompt: bool = False,
    continue_final_message: bool | str = False,
    template_kwargs: dict | None = None,
    special_tokens: dict | None = None,
    template_name: str | None = None,
    timeout: float | None = None,
    owner: Any = None,
    with_generation_start: bool = False,
    explain: bool | str = False,
    explain_seconds: float | None = None,
    locate: bool = True,
) -> RenderResult:
    """Render `messages` exactly as `tokenizer.apply_chat_template(..., tokenize=False)` would with
    these special tokens. Never raises: every failure is a diagnostic on the result.

    With `timeout` (seconds), rendering runs in a killable worker process with a memory cap
    (engine.sandbox): what the app and the command line do, since templates are untrusted code.
    The answer comes within `timeout`, waiting for a free worker included; `owner` (a visitor's
    session) has one render running at a time, so one visitor's slow templates never wait in
    front of another's. In a script, call it under `if __name__ == "__main__":` as multiprocessing
    asks (the worker does not re-run the script either way).
    `with_generation_start` also finds where the generation prompt begins (`generation_start` on
    the result; see `generation_start_in`): in the same call, so a worker compiles the template once
    for both renders (what the prompt panel asks for on every edit).
    `explain` also says where every character came from (`explanation`, engine.provenance), in the
    same call; the work of this call stops explaining `explain_seconds` after it started (with
    `timeout`: 60% of it, so a slow template is shown unexplained rather than not at all).
    `explain="page"`: as the page shows it instead (`page_explanation`, engine.provenance.page),
    counted and cut here, in the worker, to what the page will show (`limits.MAX_PAGE_PIECES`,
    `limits.PAGE_EXPLANATION_BYTES`): the server only forwards it.
    `locate=False` leaves a run-time error at its line without its columns: for callers that only
    ask whether a conversation renders (finding the columns renders the template again, instrumented,
    which costs as much as compiling it)."""
    started = time.monotonic()
    if timeout is not None:
        return _render_bounded(
            timeout, owner, chat_template=chat_template, messages=messages, tools=tools, documents=documents,
            add_generation_prompt=add_generation_prompt, continue_final_message=continue_final_message,
            template_kwargs=template_kwargs, special_tokens=special_tokens, template_name=template_name,
            with_generation_start=with_generation_start, explain=explain, locate=locate,
        )  # fmt: skip
    template, chosen, refused = _what_to_render(chat_template, messages, tools, documents, template_kwargs, special_tokens,
                                                template_name, add_generation_prompt, continue_final_message)  # fmt: skip
    if template is None:
        return RenderResult(None, diagnostics=refused, template_name=chosen)
    # kwargs overwrite special tokens when both are given, as in apply_chat_template.
    kwargs = {**(special_tokens or {}), **(template_kwargs or {})}
    result = _rendered(template, chosen, messages, tools, documents, add_generation_prompt, continue_final_message, kwargs,
                       locate)
    if result.ok and with_generation_start and add_generation_prompt:
        without = render(chat_template, messages, tools, documents, add_generation_prompt=False,
                         continue_final_message=continue_final_message, template_kwargs=template_kwargs,
                         special_tokens=special_tokens, template_name=template_name)  # fmt: skip
        result.generation_start = generation_start_in(result.prompt, without.prompt)
    if result.ok and explain:
        left = None if explain_seconds is None else explain_seconds - (time.monotonic() - started)
        variables = _variables(messages, tools, documents, add_generation_prompt, kwargs)
        result.explanation = _explain(template, variables, result.prompt, chosen, bool(continue_final_message), left,
                                      limits.MAX_PAGE_PIECES if explain == "page" else None)
        if explain == "page":
            from .provenance import for_page  # upward on purpose: see the TYPE_CHECKING import

            result.page_explanation = for_page(result.explanation, limits.MAX_PAGE_PIECES, limits.PAGE_EXPLANATION_BYTES)
            result.explanation = None  # (what the page does not show is not sent)
    return result


def _what_to_render(chat_template: str | dict[str, str], messages: Any, tools: Any, documents: Any,
                    template_kwargs: dict | None, special_tokens: dict | None, template_name: str | None,
                    add_generation_prompt: bool, continue_final_message: bool | str,
                    ) -> tuple[str | None, str | None, list[Diagnostic]]:  # fmt: skip
    """The template to render and its name, or (None, the name, why) when nothing is rendered: what a
    user typed cannot be rendered, no template has that name, or both prompt flags are on."""
    problems = _check_template(chat_template) or _check_inputs(messages, tools, documents, template_kwargs, special_tokens)
    if problems:
        return None, None, problems
    try:
        template, chosen = select_template(chat_template, tools, template_name)
    except ValueError as e:
        return None, None, [Diagnostic("error", str(e), "chat_template")]
    if add_generation_prompt and continue_final_message:
        return None, chosen, [Diagnostic(
            "error", "add_generation_prompt and continue_final_message cannot both be on.", "case",
            hint="Use continue_final_message to let the model continue the last message, "
            "add_generation_prompt to start a new assistant turn.",
        )]  # fmt: skip
    return template, chosen, []


def _rendered(template: str, chosen: str | None, messages: Any, tools: Any, documents: Any, add_generation_prompt: bool,
              continue_final_message: bool | str, kwargs: dict, locate: bool = True) -> RenderResult:  # fmt: skip
    """transformers' render of `template`: the prompt and its `{% generation %}` spans, or the failure
    on its place in the template (its line only, without `locate`), or a prompt over the size limit refused."""
    try:
        conversation = normalize_messages(messages)
        rendered, spans = render_jinja_template(
            conversations=[conversation],
            tools=tools,
            documents=documents,
            chat_template=template,
            # Rendering with the tracker on gives the same text, plus the {% generation %} spans.
            return_assistant_tokens_mask=bool(_GENERATION_TAG.search(template)),
            continue_final_message=continue_final_message,
            add_generation_prompt=add_generation_prompt,
            **kwargs,
        )
    except Exception as e:  # noqa: BLE001 - a template is untrusted code: any failure is the user's to see
        variables = _variables(messages, tools, documents, add_generation_prompt, kwargs) if locate else None
        return RenderResult(None, diagnostics=[template_error(e, template, variables)], template_name=chosen)
    prompt = rendered[0]
    if len(prompt) > MAX_PROMPT_CHARS:
        return RenderResult(None, diagnostics=[Diagnostic(
            "error", f"The rendered prompt is {len(prompt):,} characters, over the {MAX_PROMPT_CHARS:,} limit.",
            "chat_template", hint="Check for a loop that repeats its output.",
        )], template_name=chosen)  # fmt: skip
    return RenderResult(prompt, [tuple(s) for s in (spans[0] if spans else [])], [], chosen)


# The share of a render's time limit that explaining it may take (the render's own time included).
EXPLAIN_SHARE = 0.6


def _explain(template: str, variables: dict | None, prompt: str, name: str | None, continued: bool,
             seconds: float | None, max_pieces: int | None = None) -> Explanation:
    from .provenance import Explanation, explain_prompt  # upward on purpose: see the TYPE_CHECKING import

    if variables is None:
        return Explanation(None, note="No explanation: the variables could not be prepared as transformers does.")
    if seconds is not None and seconds <= 0:
        return Explanation(None, note="No explanation: the render took most of its time limit.")
    return explain_prompt(template, variables, prompt, template_name=name, continued=continued, seconds=seconds,
                          max_pieces=max_pieces)


def generation_start_in(prompt: str, without: str | None) -> int | None:
    """Where the generation prompt begins in `prompt`, given the same conversation rendered without
    it: that must be a strict prefix of `prompt` (else the template renders the earlier turns
    differently without it, and there is no clean boundary to show)."""
    if without is not None and len(without) < len(prompt) and prompt.startswith(without):
        return len(without)
    return None


def _render_bounded(timeout: float, owner: Any, **kwargs: Any) -> RenderResult:
    """`render(**kwargs)` in the killable worker; explaining it may take EXPLAIN_SHARE of `timeout`."""
    for name in ("template_kwargs", "special_tokens"):  # plain dicts: what a worker can be sent
        kwargs[name] = dict(kwargs[name]) if isinstance(kwargs[name], Mapping) else kwargs[name]
    kwargs["explain_seconds"] = EXPLAIN_SHARE * timeout if kwargs["explain"] else None
    # Inputs are checked here first: a value too deep to send to a worker gets its own message.
    problems = _check_template(kwargs["chat_template"]) or _check_inputs(
        kwargs["messages"], kwargs["tools"], kwargs["documents"], kwargs["template_kwargs"], kwargs["special_tokens"])
    if problems:
        return RenderResult(None, diagnostics=problems)
    result, problem = bounded_or_why(render, kwargs, timeout, owner, doing="Rendering",
                                     hint="Look for nested loops over large ranges.")
    return result if problem is None else RenderResult(None, diagnostics=[problem])


def _variables(messages: Any, tools: Any, documents: Any, add_generation_prompt: bool, kwargs: dict) -> dict | None:
    """What transformers handed the template (to render it again: to find where it failed, or to
    explain it)."""
    try:
        plain_messages, plain_kwargs = template_inputs(messages, kwargs)
        return {**plain_kwargs, "messages": plain_messages, "tools": plain_data(tools), "documents": plain_data(documents),
                "add_generation_prompt": add_generation_prompt}  # fmt: skip
    except Exception:  # noqa: BLE001 - then the column is found by name
        return None


def template_error(error: BaseException, template: str, variables: dict | None = None) -> Diagnostic:
    """Turn an exception raised while compiling or rendering `template` into a diagnostic on the
    line and columns of the token that caused it (engine.error_place): a syntax error, an error
    while jinja2 compiles the parsed template (an unknown filter, `break` outside a loop, …), or a
    runtime error (placed on the failing node when `variables` are the ones it was rendered with)."""
    environment = compile_template("").environment  # transformers' environment, for its lexer and parser
    compiling = isinstance(error, (jinja2.TemplateSyntaxError, SyntaxError)) or _while_compiling(error)
    place = compile_error_place(environment, template, error) if compiling else None
    if place is None and isinstance(error, jinja2.TemplateSyntaxError):
        place = syntax_error_place(environment, template, error)
        return Diagnostic("error", f"Jinja syntax error: {error.message}", "chat_template", line=place.line,
                          column=place.column, snippet=line_text(template, place.line),
                          hint=_syntax_hint(error.message or ""), end_column=place.end)  # fmt: skip
    if place is not None:
        message, hint = _describe_compile_error(error, environment)
        return Diagnostic("error", message, "chat_template", line=place.line, column=place.column,
                          snippet=line_text(template, place.line), hint=hint, end_column=place.end)  # fmt: skip
    line, in_template = _template_line(error)
    snippet = line_text(template, line)
    message, hint, needle = _describe_runtime_error(error)
    found = runtime_error_place(environment, template, line, error, variables) if line and variables is not None else None
    if found is None and snippet is not None and needle and (at := snippet.find(needle)) >= 0:
        found = (at + 1, at + 1 + len(needle))
    column, end = found or (None, None)
    # A type or value error outside the template's code is about the input (a message of the wrong shape).
    source = "chat_template" if in_template or not isinstance(error, (TypeError, ValueError)) else "case"
    return Diagnostic("error", message, source, line=line, column=column, snippet=snippet, hint=hint, end_column=end)


def _while_compiling(error: BaseException) -> bool:
    """Whether `error` was raised while jinja2 compiled the template (it folds constants then:
    `{{ (10**5000)|string }}`), not while the compiled template ran."""
    tb = error.__traceback__
    compiling = False
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if name == "<template>":
            return False
        compiling = compiling or bool(_JINJA_DIR and name.startswith(_JINJA_DIR) and tb.tb_frame.f_code.co_name == "compile")
        tb = tb.tb_next
    return compiling


# Python's messages about the code jinja2 generated, as a template author reads them (NAME: the name
# the message gives).
_PYTHON_COMPILE_ERRORS = (
    (r"'break' outside loop", "{% break %} is outside a loop.",
     "break and continue work inside {% for %} only (not in its {% else %}, nor in a macro or call block in it)."),
    (r"'continue' not properly in loop", "{% continue %} is outside a loop.",
     "break and continue work inside {% for %} only (not in its {% else %}, nor in a macro or call block in it)."),
    (r"duplicate argument 'l_\d+_(\w+)'", "The parameter 'NAME' is declared twice.", "Give each parameter its own name."),
    (r"keyword argument repeated: (\w+)", "The keyword argument 'NAME' is given twice.", "Pass each argument once."),
    (r"too many statically nested blocks", "Blocks are nested too deeply to compile (Python allows 20 levels).",
     "Fewer {% for %} / {% if %} inside each other: move an inner part into a macro."),
)


def _describe_compile_error(error: BaseException, environment: jinja2.Environment) -> tuple[str, str | None]:
    """A message and a hint for an error raised while jinja2 compiled the template."""
    if isinstance(error, SyntaxError):
        for pattern, message, hint in _PYTHON_COMPILE_ERRORS:
            found = re.search(pattern, error.msg or "")
            if found:
                return message.replace("NAME", found.group(1) if found.groups() else ""), hint
        return f"The template cannot be compiled: {error.msg}", None
    if isinstance(error, jinja2.TemplateSyntaxError):
        text = error.message or ""
        unknown = re.match(r"No (filter|test) named '([^']+)'", text)
        hint = None
        if unknown:
            kind, name = unknown.groups()
            known = environment.filters if kind == "filter" else environment.tests
            close = difflib.get_close_matches(name, list(known), n=1)
            hint = (f"Did you mean {close[0]!r}? " if close else "") + (
                f"transformers' Jinja has jinja2's built-in {kind}s" + (" and tojson." if kind == "filter" else "."))
        return f"Jinja compile error: {text}", hint
    return f"{type(error).__name__}: {error}", None


def _template_line(error: Exception) -> tuple[int | None, bool]:
    """The template line an exception came from, and whether it came from the template at all: its
    own frames (`<template>`), or Jinja compiling it (constant folding evaluates `10**5000|string`
    while compiling; the node being compiled knows its line)."""
    line, in_template = None, False
    tb = error.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename == "<template>":
            line, in_template = tb.tb_lineno, True
        elif _JINJA_DIR and code.co_filename.startswith(_JINJA_DIR):
            in_template = True
            node = tb.tb_frame.f_locals.get("node")
            if isinstance(getattr(node, "lineno", None), int):
                line = node.lineno
        tb = tb.tb_next
    return line, in_template


_JINJA_DIR = jinja2.__file__.rsplit("/", 1)[0] + "/" if "/" in jinja2.__file__ else None


def special_token_advice(name: str) -> str | None:
    """What to give when a chat template reads `name`, nobody passed it, and it is a special token
    (a `…_token` name, as a Hub load reads them): it comes with the model's tokenizer, so the
    template is right and the case or a template kwarg is the wrong advice. None for other names."""
    if not name.endswith("_token"):
        return None
    return (f"`{name}` is a special token: it comes with the model's tokenizer. Load the tokenizer (a model folder, "
            f"--tokenizer, or the Tokenizer panel) or give it (--special-tokens '{{\"{name}\": …}}', or the "
            "Special tokens field).")


# Where a case's tool-call ids are given, and what templates that check them want.
CALL_ID_ADVICE = ("give each tool call of the case an `id` of the shape the template wants (Mistral's: 9 letters or "
                  "digits), in the conversation editor's id field, and each tool reply the same `tool_call_id`.")
_ABOUT_CALL_IDS = re.compile(r"(?i)\b(?:tool[ _-]?call[ _-]?ids?|call[ _-]ids?)\b|\bids?\b.*\btool")


def missing_key_advice(key: str) -> str:
    """What to do when the template reads `key` of a message or tool call the case gave, and it has
    none: it belongs in the case (a template kwarg is the wrong advice)."""
    if key == "id":
        return "A tool call of this case has no `id`, and the template reads it: " + CALL_ID_ADVICE
    if key == "tool_call_id":
        return ("A tool reply of this case has no `tool_call_id`, and the template reads it: give it the `id` of the "
                "call it answers (the conversation editor's tool_call_id field).")
    return (f"A message (or tool call) of this case has no `{key}`, and the template reads it: add `{key}` to it in "
            "the case, or guard it in the template with `is defined`.")


def _describe_runtime_error(error: Exception) -> tuple[str, str | None, str | None]:
    """A message, a hint and the text to look for on the failing line (to find a column)."""
    text = str(error)
    if isinstance(error, jinja2.UndefinedError):
        read = undefined_read(text)
        needle = (read[1] or read[0]) if read else None
        if read and read[1]:  # a key of something the case gave (a message, a tool call): not a kwarg
            return f"Undefined value: {text}", missing_key_advice(read[1]), needle
        special = special_token_advice(read[0]) if read else None
        return (
            f"Undefined value: {text}",
            special or "The template reads a variable that is not passed. Pass it as a template kwarg, or guard it "
            "with `is defined`.",
            needle,
        )
    if isinstance(error, jinja2.exceptions.SecurityError):
        return f"Blocked by the sandbox: {text}", "Chat templates run sandboxed; this operation is not allowed.", None
    if isinstance(error, MemoryError):
        return (
            "Rendering stopped: the template used more memory than allowed.",
            "Look for loops that build very large strings or lists.",
            None,
        )
    if type(error) is jinja2.TemplateError:
        # raise_exception(...) in the template: the author's own message, shown as written.
        hint = "The template rejects this input on purpose (raise_exception)."
        if _ABOUT_CALL_IDS.search(text):
            hint += " It asks for tool-call ids: " + CALL_ID_ADVICE
        return f"{REFUSAL}{text}", hint, "raise_exception"
    return f"{type(error).__name__}: {text}", None, None


def _syntax_hint(message: str) -> str | None:
    if "Encountered unknown tag" in message:
        return "Check the spelling of the tag, and that every {% if %} / {% for %} is closed in order."
    if "Unexpected end of template" in message:
        return "A block is never closed: add the missing {% endif %} / {% endfor %} / {% endgeneration %}."
    if "unexpected" in message:
        return "Check the brackets and quotes on this line: {{ ... }} for output, {% ... %} for statements."
    return None


def _check_template(chat_template: Any) -> list[Diagnostic]:
    """The template text's size and encoding (named templates: each of them)."""
    if isinstance(chat_template, dict):
        return [d for name, text in chat_template.items()
                for d in check_text(text, "chat_template", f"chat template {name!r}", limits.MAX_CHAT_TEMPLATE_CHARS)]
    return check_text(chat_template, "chat_template", "chat template", limits.MAX_CHAT_TEMPLATE_CHARS)


def _message_problem(i: int, message: Any) -> tuple[str, str | None] | None:
    """What is wrong with `messages[i]` (and how to fix it), or None."""
    if not isinstance(message, dict):
        return f"messages[{i}] must be an object, got {type(message).__name__}.", None
    if "role" not in message:
        return f"messages[{i}] has no 'role'.", "Every message needs a role: system, user, assistant or tool."
    if not isinstance(message["role"], str):
        return f"messages[{i}].role must be a string.", None
    return None


def _check_inputs(
    messages: Any, tools: Any, documents: Any, template_kwargs: Any, special_tokens: Any
) -> list[Diagnostic]:
    """Input shape checks, so a malformed case gets a clear message rather than a template error."""
    problems: list[Diagnostic] = []
    for what, value in (("messages", messages), ("tools", tools), ("documents", documents),
                        ("template kwargs", template_kwargs), ("special tokens", special_tokens)):
        problems += check_value(value, "case", what)
    if problems:
        return problems

    def bad(message: str, hint: str | None = None) -> None:
        problems.append(Diagnostic("error", message, "case", hint=hint))

    if not isinstance(messages, list):
        bad(f"messages must be a list of message objects, got {type(messages).__name__}.")
    elif not messages:
        bad("messages is empty.", "Add at least one message, e.g. {\"role\": \"user\", \"content\": \"Hi\"}.")
    else:
        # One diagnostic per malformed message, up to a few: a case of a million `{}` gets a count.
        wrong = [(i, why) for i, message in enumerate(messages) if (why := _message_problem(i, message))]
        shown = wrong if len(wrong) <= limits.MAX_DIAGNOSTICS else wrong[: limits.MAX_DIAGNOSTICS - 1]
        for _, (message, hint) in shown:
            bad(message, hint)
        if len(wrong) > len(shown):
            bad(f"… and {len(wrong) - len(shown):,} more messages like these.")
    if tools is not None:
        if not isinstance(tools, list) or not all(isinstance(t, dict) for t in tools):
            bad("tools must be a list of JSON schema objects.", 'e.g. [{"type": "function", "function": {...}}]')
    if documents is not None:
        if not isinstance(documents, list) or not all(isinstance(d, dict) for d in documents):
            bad("documents must be a list of objects (usually with 'title' and 'text').")
    for label, value in (("template kwargs", template_kwargs), ("special tokens", special_tokens)):
        if value is not None and not isinstance(value, Mapping):
            bad(f"{label} must be an object, got {type(value).__name__}.")
        elif value and (clash := sorted(RESERVED_KWARGS & set(value))):
            bad(f"{label} cannot set {', '.join(clash)}: the renderer passes these itself.")
    return problems
