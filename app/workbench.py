"""Keeps a session's workspace in step with the editors, and derives what depends on them: each
editor's diagnostics and the highlighted prompt.

`refresh` runs on every (debounced) edit. It writes the editors into the workspace (the case only
when its JSON parses, so a typo never loses the last good case), renders the prompt with the
engine, and shows the last good prompt, marked stale, when the new edit does not render."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from engine import limits
from engine.budget import check_workspace, keep_text
from engine.diagnostics import Diagnostic, has_errors
from engine.errors import log_failure
from engine.response_spec import LoadedSpec, literal_delimiters, load_response_spec
from engine.trace import Trace

from .case_form import CaseForm, save_form
from .highlight import diagnostics_html, esc, field_classes, prompt_html
from .provenance_view import fields_data, prompt_pieces
from .state import Session, encode_workspace
from .token_panel import NO_TOKENIZER, TOKEN_LEGEND, session_tokens, tokens_html, tokens_info

# Templates are untrusted code: the app renders in engine.sandbox's killable worker, bounded in time
# and memory. The first render also waits for the worker to start (about a second).
RENDER_TIMEOUT = limits.RENDER_SECONDS
# Shown over a run once the templates or the case it ran with have changed.
STALE_NOTE = ('<div class="stale-banner run-stale">The output below ran with other templates or another case: run again to '
              "update it. The checks leave it out.</div>")


@dataclass
class PromptView:
    """Everything the prompt panel shows for one render."""

    prompt: str | None
    html: str
    info: str
    chat_diagnostics: list[Diagnostic]
    case_diagnostics: list[Diagnostic]
    response_diagnostics: list[Diagnostic]


# An empty response template is where a workspace of one's own model starts (no error: nothing to fix yet).
NO_RESPONSE_TEMPLATE = Diagnostic("info", "No response template yet: the output is shown unparsed.", "response_template",
                                  hint="“Draft from the chat template” (below) reads one off the chat template; or start "
                                       "from a format of the library.")  # fmt: skip


def response_spec(session: Session) -> tuple[LoadedSpec, dict | None]:
    """The response template as loaded now, and the spec to parse with (the last good one when
    the current text has errors; none when there is no text at all)."""
    if not session.workspace.response_template.strip():
        session.last_spec = None
        return LoadedSpec(None, None, [NO_RESPONSE_TEMPLATE]), None
    loaded = load_response_spec(session.workspace.response_template)
    if loaded.ok:
        session.last_spec = loaded.spec
    return loaded, session.last_spec


def build_prompt_view(session: Session, show_whitespace: bool, in_process: bool = False, explain: bool = True) -> PromptView:
    """The prompt panel for the session's workspace. `in_process` renders here instead of in the
    killable worker: only for the app's own presets (the page's first view), never a visitor's template.
    `explain`: with where each character came from (see `explain_view`)."""
    workspace = session.workspace
    case = workspace.case
    loaded, spec = response_spec(session)
    response_diags = list(loaded.diagnostics)
    # One call to the worker for the prompt, where its generation prompt starts and where each of its
    # characters came from: the template is compiled once (each edit is a new template to compile,
    # the slowest part of an edit).
    timeout = None if in_process else RENDER_TIMEOUT
    # (The Tokens view shows no provenance: then it is not computed.)
    # (Explained as the page shows it: counted and cut in the worker, so the server only forwards it.)
    result = workspace.render(case, timeout=timeout, owner=session.owner, with_generation_start=True,
                              explain="page" if explain and not session.show_tokens else False)
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
    # What reads as a special token: the model's own (its added tokens, when its files were loaded),
    # the named ones and the stop tokens; then the response template's literal delimiters.
    special = set(workspace.special_tokens.values()) | set(workspace.stop_tokens) | set(workspace.model_tokens)
    fields = ""
    if spec is not None:
        trace = Trace(spec, prompt=prompt, tools=case.tools, response_text=workspace.response_template if loaded.ok else None)
        classes = field_classes(trace.template.fields)
        if loaded.ok:
            fields = fields_data(workspace.response_template, classes)
        anchor_end = trace.anchor_end if trace.anchor_found else None
        prefix_segments = trace.prefix_segments()
        response_diags += [d for d in trace.diagnostics if d not in response_diags]
        special |= literal_delimiters(trace.template)
    gen_start = result.generation_start
    # With a tokenizer: the prompt's tokens, encoded in the render worker (counted even when not shown).
    tokens = session_tokens(session, prompt, result.generation_spans, gen_start, RENDER_TIMEOUT)
    body = None
    if session.show_tokens and tokens is not None and not tokens.diagnostics:
        body = TOKEN_LEGEND + tokens_html(prompt, tokens, show_whitespace)
    pieces, table, explained = prompt_pieces(result.page_explanation)
    # Shown without where its characters came from (a keystroke's answer): the page asks for that once
    # the author pauses (`explain_view`; provenance.js presses the hidden Explain button). Numbered by
    # the edit: the page keeps the prompt's element and changes what is in it, so each edit's prompt
    # is told apart by this.
    later = f' data-explain="later-{session.edits}"' if not explain and not session.show_tokens else ""
    body = body or prompt_html(
        prompt,
        special_tokens=special,
        generation_start=gen_start,
        anchor_end=anchor_end,
        prefix_segments=prefix_segments,
        classes=classes,
        show_whitespace=show_whitespace,
        pieces=pieces,
        data=table + fields + later,
    )
    if session.show_tokens and (tokens is None or tokens.diagnostics):
        why = tokens.diagnostics if tokens is not None else [Diagnostic("info", NO_TOKENIZER, "tokenizer")]
        body = diagnostics_html(why) + body
    session.last_prompt_html = body
    info = [f"{len(prompt):,} characters"]
    if tokens is not None and not tokens.diagnostics:
        info.append(tokens_info(tokens))
    else:
        info.append("tokens: load a tokenizer (“Tokenizer”, below)")
    if result.template_name:
        info.append(f"template “{esc(result.template_name)}”")
    if gen_start is not None:
        in_tokens = f" ({tokens.generation_count:,} tokens)" if tokens is not None and not tokens.diagnostics else ""
        info.append(f"generation prompt: {len(prompt) - gen_start} characters{in_tokens}")
    if prefix_segments:
        opened = sorted({s.field for s in prefix_segments if s.field and s.kind in ("open", "body")})
        if opened:
            info.append("the prompt opens " + ", ".join(opened))
    if explained:
        info.append(esc(explained))
    return PromptView(prompt, body, " · ".join(info), chat_diags, case_diags, response_diags)


def _view(session: Session, show_whitespace: bool, explain: bool = True) -> PromptView:
    try:
        with session.regex.active():
            return build_prompt_view(session, show_whitespace, explain=explain)
    except Exception as e:  # noqa: BLE001 - whatever an edit does, the page keeps working and says why
        log_failure("Refreshing the prompt failed", e)
        problem = Diagnostic("error", f"Unexpected problem while rendering ({type(e).__name__}); the server log has details.",
                             "chat_template")
        return PromptView(None, session.last_prompt_html, "⚠ not rendered", [problem], [], [])


def sync(session: Session, chat_template: str | None, response_template: str | None, form_case: str,
         form: dict[str, Any]) -> list[Diagnostic]:
    """Write the editors and the case form into the workspace; returns the case form's problems."""
    keep_template(session, "chat_template", chat_template)
    keep_template(session, "response_template", response_template)
    return save_form(session.workspace, form_case, CaseForm.from_named(form))


# The most the server keeps of each editor's text (engine.budget.keep_text).
EDITOR_LIMITS = {"chat_template": (limits.MAX_CHAT_TEMPLATE_CHARS, "chat template"),
                 "response_template": (limits.MAX_RESPONSE_TEMPLATE_CHARS, "response template")}


def keep_template(session: Session, editor: str, text: Any) -> None:
    """Keep an editor's text in the workspace, unless it is over its limit or the workspace cannot
    hold it (engine.budget.check_workspace): then the last text that fitted stays, and the editor's
    diagnostics say why until a text that fits arrives (the editor still holds what was typed)."""
    limit, what = EDITOR_LIMITS[editor]
    current = getattr(session.workspace, editor)
    kept, refused = keep_text(current, text, limit, editor, what)  # type: ignore[arg-type]
    setattr(session.workspace, editor, kept)
    if refused is None and len(kept) > len(current) and (too_much := check_workspace(session.workspace, editor)):  # type: ignore[arg-type]
        setattr(session.workspace, editor, current)
        refused = replace(too_much[0], message=f"{too_much[0].message} The server keeps the last text that fitted.")
    session.refused = {k: v for k, v in session.refused.items() if k != editor} | ({editor: refused} if refused else {})


def refresh(session: Session, chat_template: str, response_template: str, form_case: str, show_whitespace: bool,
            **form: Any) -> dict[str, Any]:
    """The editors changed: each editor's diagnostics, the case's, the prompt and its info line, and
    the state code browser storage keeps.

    One refresh per session at a time: an edit that arrives while one runs is synced and answered
    at once with no change, and the running refresh renders again with it before it answers. So a
    visitor's edits never pile up server threads, and the page always ends on the latest edit."""
    session.form_problems = sync(session, chat_template, response_template, form_case, form)
    return refreshed(session, show_whitespace)


def edit_case(session: Session, chat_template: str, response_template: str, form_case: str, show_whitespace: bool,
              **form: Any) -> dict[str, Any]:
    """A keystroke in the case form (or the whitespace toggle): as `refresh`, answered before the
    prompt's explanation (`explain_view` follows it)."""
    session.form_problems = sync(session, chat_template, response_template, form_case, form)
    return refreshed(session, show_whitespace, explain=False)


def toggle_tokens(session: Session, show_tokens: bool, show_whitespace: bool) -> dict[str, Any]:
    """The "Tokens" toggle: kept in the session (an edit then needs no extra value), and the prompt again."""
    session.show_tokens = bool(show_tokens)
    return refreshed(session, show_whitespace)


def edit_chat_template(session: Session, chat_template: str, show_whitespace: bool) -> dict[str, Any]:
    """A keystroke in the chat template editor: only that editor's text travels (the session holds
    the rest, synced by each control's own edits), so the page gathers and sends 3 values, not 21.
    Answered before the prompt's explanation (`explain_view` follows it)."""
    keep_template(session, "chat_template", chat_template)
    return refreshed(session, show_whitespace, explain=False)


def edit_response_template(session: Session, response_template: str, show_whitespace: bool) -> dict[str, Any]:
    """A keystroke in the response template editor (see `edit_chat_template`)."""
    keep_template(session, "response_template", response_template)
    return refreshed(session, show_whitespace, explain=False)


def refreshed(session: Session, show_whitespace: bool, explain: bool = True) -> dict[str, Any]:
    """What `refresh` shows for the session's workspace as it is now (`explain`: with where each
    character came from)."""
    if not session.edited():
        return {}
    try:
        while True:
            rendered = session.edits
            view = _view(session, show_whitespace, explain)
            if session.finished_refresh(rendered):
                break
    except BaseException:
        session.done("refresh")
        raise
    return view_outputs(session, view)


def explain_view(session: Session, show_whitespace: bool) -> dict[str, Any]:
    """Once the author pauses: the prompt a keystroke showed, now with where each character came from,
    and its info line. A keystroke is answered without it: explaining compiles a marked copy of the
    edited template in the worker, which doubles an edit's work (`python -m benchmarks`:
    `explain_ratio`), and the author is typing. Asked for by the page (the hidden Explain button,
    pressed by provenance.js `EXPLAIN_AFTER` (700) ms after the last key, when the prompt shown says
    `data-explain="later"`) rather than chained to every keystroke: an explanation per key kept the
    worker busy while the next key waited for it. Nothing while a newer edit is being rendered (its
    prompt asks again), and one explanation per session at a time (it explains the latest edit
    before it ends)."""
    if session.show_tokens or not session.claim("explain"):
        return {}
    try:
        while True:
            if "refresh" in session.busy:
                return {}
            edits = session.edits
            view = _view(session, show_whitespace)
            if session.edits == edits:
                break
    finally:
        session.done("explain")
    return {"prompt": view.html, "prompt_info": view.info} if view.prompt is not None else {}


def view_outputs(session: Session, view: PromptView) -> dict[str, Any]:
    """The editors' diagnostics, the case's, the prompt and its info line, the state code browser
    storage keeps, and the stale-run note, by output name (`page.REFRESH_OUTPUTS`)."""
    case_diags = session.form_problems + view.case_diagnostics
    refused = session.refused
    chat = [refused["chat_template"]] if "chat_template" in refused else []
    response = [refused["response_template"]] if "response_template" in refused else []
    return {
        "chat_diagnostics": diagnostics_html(chat + view.chat_diagnostics, "Chat template renders this case."),
        "response_diagnostics": diagnostics_html(response + view.response_diagnostics, "Response template loads."),
        "case_diagnostics": diagnostics_html(case_diags, "" if has_errors(case_diags) else "Case OK."),
        "prompt": view.html,
        "prompt_info": view.info,
        "saved_code": encode_workspace(session.workspace),
        "run_note": STALE_NOTE if session.run_is_stale() else "",
    }
