"""Keeps a session's workspace in step with the editors, and derives what depends on them: each
editor's diagnostics and the highlighted prompt.

`refresh` runs on every (debounced) edit. It writes the editors into the workspace (the case only
when its JSON parses, so a typo never loses the last good case), renders the prompt with the
engine, and shows the last good prompt, marked stale, when the new edit does not render."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.cases import Case, render_case
from engine.diagnostics import Diagnostic, has_errors
from engine.response_spec import LoadedSpec, load_response_spec
from engine.trace import Trace

from .case_panel import FORM_SIZE, CaseForm, save_form
from .highlight import diagnostics_html, esc, field_classes, prompt_html
from .state import Session, Workspace, encode_workspace

# Templates are untrusted code: the app renders in engine.sandbox's killable worker, bounded in time
# and memory. The first render also waits for the worker to start (about a second).
RENDER_TIMEOUT = 10.0


@dataclass
class PromptView:
    """Everything the prompt panel shows for one render."""

    prompt: str | None
    html: str
    info: str
    chat_diagnostics: list[Diagnostic]
    case_diagnostics: list[Diagnostic]
    response_diagnostics: list[Diagnostic]


def template_kwargs(workspace: Workspace) -> dict[str, Any]:
    """The declared kwargs' defaults that apply to every case (None means "not passed": a template
    may test `is defined`)."""
    return {k: v for k, v in workspace.default_kwargs().items() if v is not None}


def render_prompt(workspace: Workspace, case: Case | None = None):
    """The engine's rendering of a case (the current one by default)."""
    return render_case(
        workspace.chat_template, case or workspace.case, workspace.special_tokens, template_kwargs(workspace),
        timeout=RENDER_TIMEOUT,
    )


def generation_start(workspace: Workspace, case: Case, prompt: str) -> int | None:
    """Where the generation prompt begins: the prompt rendered without it is a prefix of the one
    with it (for templates that behave; otherwise no marker)."""
    if not case.add_generation_prompt:
        return None
    without = render_case(
        workspace.chat_template,
        Case.from_dict({**case.to_dict(), "add_generation_prompt": False}),
        workspace.special_tokens,
        template_kwargs(workspace),
        timeout=RENDER_TIMEOUT,
    )
    if without.prompt is not None and prompt.startswith(without.prompt) and len(without.prompt) < len(prompt):
        return len(without.prompt)
    return None


def token_count(prompt: str) -> int | None:
    """Tokens in the prompt by the loaded local model's tokenizer (None when no model is loaded)."""
    try:
        from engine.runners import loaded_tokenizer

        tokenizer = loaded_tokenizer()
        if tokenizer is None:
            return None
        return len(tokenizer(prompt, add_special_tokens=False)["input_ids"])
    except Exception:  # noqa: BLE001 - a count is a nicety; never fail the panel over it
        return None


def response_spec(session: Session) -> tuple[LoadedSpec, dict | None]:
    """The response template as loaded now, and the spec to parse with (the last good one when
    the current text has errors)."""
    loaded = load_response_spec(session.workspace.response_template)
    if loaded.ok:
        session.last_spec = loaded.spec
    return loaded, session.last_spec


def build_prompt_view(session: Session, show_whitespace: bool) -> PromptView:
    workspace = session.workspace
    case = workspace.case
    loaded, spec = response_spec(session)
    response_diags = list(loaded.diagnostics)
    result = render_prompt(workspace, case)
    chat_diags = [d for d in result.diagnostics if d.source != "case"]
    case_diags = [d for d in result.diagnostics if d.source == "case"]
    if result.prompt is None:
        stale = session.last_prompt_html or '<div class="prompt-text empty">No prompt yet.</div>'
        banner = '<div class="stale-banner">The prompt below is from the last edit that rendered; fix the error to update it.</div>'
        return PromptView(None, banner + stale, "⚠ not rendered", chat_diags, case_diags, response_diags)
    prompt = result.prompt
    anchor_end = None
    prefix_segments: list = []
    classes: dict[str, str] = {}
    if spec is not None:
        trace = Trace(spec, prompt=prompt, tools=case.tools)
        classes = field_classes(trace.template.fields)
        anchor_end = trace.anchor_end if trace.template.start_anchor_re.search(prompt) else None
        prefix_segments = trace.prefix_segments()
        response_diags += [d for d in trace.diagnostics if d not in response_diags]
    special = set(workspace.special_tokens.values()) | set(workspace.stop_tokens) | _literal_delimiters(spec)
    gen_start = generation_start(workspace, case, prompt)
    body = prompt_html(
        prompt,
        special_tokens=special,
        generation_start=gen_start,
        anchor_end=anchor_end,
        prefix_segments=prefix_segments,
        classes=classes,
        show_whitespace=show_whitespace,
    )
    session.last_prompt = prompt
    session.last_prompt_html = body
    info = [f"{len(prompt):,} characters"]
    tokens = token_count(prompt)
    info.append(f"{tokens:,} tokens" if tokens is not None else "token count: load a local model")
    if result.template_name:
        info.append(f"template “{esc(result.template_name)}”")
    if gen_start is not None:
        info.append(f"generation prompt: {len(prompt) - gen_start} characters")
    if prefix_segments:
        opened = sorted({s.field for s in prefix_segments if s.field and s.kind in ("open", "body")})
        if opened:
            info.append("the prompt opens " + ", ".join(opened))
    return PromptView(prompt, body, " · ".join(info), chat_diags, case_diags, response_diags)


def _literal_delimiters(spec: dict | None) -> set[str]:
    """The response template's literal open/close delimiters (highlighted as tokens in the prompt)."""
    found: set[str] = set()
    for field in ((spec or {}).get("fields") or {}).values():
        if not isinstance(field, dict):
            continue
        for key in ("open", "close"):
            value = field.get(key)
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, str) and item.strip():
                    found.add(item.strip())
    return found


def sync(session: Session, chat_template: str, response_template: str, form_case: str, form: CaseForm) -> list[Diagnostic]:
    """Write the editors into the workspace; returns the case form's problems."""
    workspace = session.workspace
    workspace.chat_template = chat_template if chat_template is not None else ""
    workspace.response_template = response_template if response_template is not None else ""
    return save_form(session, form_case, form)


def refresh(session: Session, chat_template: str, response_template: str, form_case: str, show_whitespace: bool, *form: Any) -> tuple:
    """The editors changed: returns (chat diagnostics, response diagnostics, case diagnostics,
    prompt HTML, prompt info, saved state code)."""
    if len(form) != FORM_SIZE:
        raise ValueError(f"refresh expects {FORM_SIZE} case form values, got {len(form)}")
    form_problems = sync(session, chat_template, response_template, form_case, CaseForm.from_values(form))
    try:
        view = build_prompt_view(session, show_whitespace)
    except Exception as e:  # noqa: BLE001 - whatever an edit does, the page keeps working and says why
        problem = Diagnostic("error", f"Unexpected problem while rendering: {type(e).__name__}: {e}", "chat_template")
        view = PromptView(None, session.last_prompt_html, "⚠ not rendered", [problem], [], [])
    case_diags = form_problems + view.case_diagnostics
    case_ok = "Case OK." if not has_errors(case_diags) else ""
    return (
        diagnostics_html(view.chat_diagnostics, "Chat template renders this case."),
        diagnostics_html(view.response_diagnostics, "Response template loads."),
        diagnostics_html(case_diags, case_ok),
        view.html,
        view.info,
        encode_workspace(session.workspace),
    )
