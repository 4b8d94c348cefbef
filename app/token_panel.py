"""The prompt's tokens: the "Tokens" toggle of the prompt panel, the tokenizer loader under it, and
the HTML of the token view (boundaries, ids on hover, special tokens, the generation prompt and the
assistant mask shaded). The engine (`engine.tokens`) loads tokenizers and computes every token."""

from __future__ import annotations

import html
from typing import Any

import gradio as gr

from engine import limits
from engine.budget import check_workspace
from engine.diagnostics import Diagnostic
from engine.public import policy
from engine.tokens import (TokenView, load_tokenizer_path, load_tokenizer_repo, load_tokenizer_uploads, prompt_tokens,
                           read_special_tokens, special_tokens_for, special_tokens_text)

from .highlight import diagnostics_html, esc, visible_ws
from .sources import take_uploads
from .state import Session

TOKEN_LEGEND = (
    '<div class="legend token-legend"><span class="chip tk-demo">token</span><span class="chip tk-demo sp">special token</span>'
    '<span class="chip tk-demo gp">generation prompt</span><span class="chip tk-demo am">assistant mask '
    "(trained on)</span> · hover a token for its id</div>"
)
# A tokenizer is checked and built in the bounded worker: a 40 MB tokenizer.json takes seconds.
LOAD_TIMEOUT = 3 * limits.RENDER_SECONDS
NO_TOKENIZER = ("No tokenizer loaded: load one under “Tokenizer”, below the workbench (from the Hub repo, a tokenizer.json, "
                "a folder, or the model you ran).")


def build_token_controls() -> dict[str, Any]:
    """The tokenizer loader (an accordion below the workbench, beside the run options; the first
    screen stays the loop's): its status, and the ways to load one."""
    with gr.Accordion("Tokenizer", open=False, elem_id="tokenizer-accordion"):
        status = gr.HTML(f'<div class="sub" id="tokenizer-status">{NO_TOKENIZER}</div>', elem_id="tokenizer-status-box")
        with gr.Row(equal_height=True):
            repo = gr.Textbox(label="Hub repo (default: the one the templates came from)", elem_id="tokenizer-repo",
                              placeholder="HuggingFaceTB/SmolLM3-3B", scale=3)
            hub = gr.Button("Load from the Hub", elem_id="tokenizer-hub", scale=1, size="sm")
        upload = gr.File(label="Upload tokenizer.json (and tokenizer_config.json)", file_count="multiple",
                         file_types=[".json"], elem_id="tokenizer-upload")
        with gr.Row(equal_height=True, visible=policy().allow_paths):
            folder = gr.Textbox(label="Local folder or tokenizer.json", elem_id="tokenizer-folder", scale=3)
            folder_button = gr.Button("Load folder", elem_id="tokenizer-folder-load", scale=1, size="sm")
        model = gr.Button("Use the tokenizer of the model I ran", elem_id="tokenizer-model", size="sm")
        special = gr.Code(language="json", lines=3, max_lines=8, label=SPECIAL_LABEL, elem_id="special-tokens")
        special_diagnostics = gr.HTML(elem_id="special-tokens-diagnostics", elem_classes=["diag-box"])
    return dict(tokenizer_status=status, tokenizer_repo=repo, tokenizer_hub=hub, tokenizer_upload=upload,
                tokenizer_folder=folder, tokenizer_folder_load=folder_button, tokenizer_model=model,
                special_tokens=special, special_tokens_diagnostics=special_diagnostics)


# The special tokens field and what it says, as a workspace or a tokenizer load shows them.
SPECIAL_SHOWN = ("special_tokens", "special_tokens_diagnostics")
SPECIAL_LABEL = ("Special tokens the templates render with (bos_token, eos_token, …): a loaded tokenizer's own; "
                 "edit to override")


def _loaded(session: Session, loaded: Any, problems: list[Diagnostic]) -> dict[str, Any]:
    if loaded is not None:
        problems = [*problems, *session.set_tokenizer(loaded)]  # its special tokens are the templates' now
    return {"tokenizer_status": status_html(session, problems), **special_tokens_shown(session)}


def keep_tokenizer_tokens(session: Session, workspace: Any) -> None:
    """Templates loaded while this session has a tokenizer: its special tokens still win over those
    the template files declare (engine.tokens.special's rule, as when the tokenizer was loaded)."""
    if session.tokenizer is not None:
        before = workspace.special_tokens
        workspace.special_tokens = special_tokens_for(session.tokenizer.files.special_tokens, before)
        if check_workspace(workspace, "tokenizer"):  # the loaded workspace with them is more than it may hold
            workspace.special_tokens = before


def special_tokens_shown(session: Session) -> dict[str, Any]:
    """The special tokens field, as the workspace has them."""
    return {"special_tokens": special_tokens_text(session.workspace.special_tokens), "special_tokens_diagnostics": ""}


def edit_special_tokens(session: Session, special_tokens: str) -> dict[str, Any]:
    """The author typed the special tokens: they are what the templates render with, until a
    tokenizer is loaded again (`refresh` shows the prompt with them)."""
    session.touch()
    tokens, problems = read_special_tokens(special_tokens if isinstance(special_tokens, str) else "")
    if tokens is not None:
        before, session.workspace.special_tokens = session.workspace.special_tokens, tokens
        if too_much := check_workspace(session.workspace, "tokenizer"):
            session.workspace.special_tokens, problems = before, too_much
    return {"special_tokens_diagnostics": diagnostics_html(problems) if problems else ""}


def status_html(session: Session, problems: list[Diagnostic] | None = None) -> str:
    """Which tokenizer this session uses, and what loading the last one said."""
    now = session.tokenizer
    line = f"Tokenizer: <b>{esc(now.describe())}</b>" if now is not None else NO_TOKENIZER
    return f'<div class="sub" id="tokenizer-status">{line}</div>' + (diagnostics_html(problems) if problems else "")


def load_from_hub(session: Session, tokenizer_repo: str, hub_revision: str = "") -> dict[str, Any]:
    """Load the tokenizer of `tokenizer_repo` (default: the repo the templates were loaded from)."""
    session.touch()
    repo = (tokenizer_repo or "").strip() or session.workspace.source_repo
    if not repo:
        return _loaded(session, None, [Diagnostic("error", "Which repo? Type a repo id, or load templates from the Hub "
                                                  "first.", "tokenizer")])
    from engine.hub import local_token

    revision = (hub_revision or "").strip() or (session.workspace.source_revision if repo == session.workspace.source_repo else "")
    return _loaded(session, *load_tokenizer_repo(repo, revision or None, token=local_token(), timeout=LOAD_TIMEOUT))


def load_from_upload(session: Session, tokenizer_upload: list[Any] | None) -> dict[str, Any]:
    session.touch()
    uploads = take_uploads(tokenizer_upload)
    if not uploads:
        return {}
    return _loaded(session, *load_tokenizer_uploads(uploads, timeout=LOAD_TIMEOUT))


def load_from_folder(session: Session, tokenizer_folder: str) -> dict[str, Any]:
    session.touch()
    return _loaded(session, *load_tokenizer_path((tokenizer_folder or "").strip(), timeout=LOAD_TIMEOUT))


def use_model(session: Session) -> dict[str, Any]:
    session.touch()
    problems = session.use_model_tokenizer()
    return {"tokenizer_status": status_html(session, problems), **special_tokens_shown(session)}


# The token view's HTML on the page (it replaces the prompt's text and provenance there).
TOKEN_VIEW_BYTES = limits.PROMPT_VIEW_BYTES + limits.PAGE_EXPLANATION_BYTES


def session_tokens(session: Session, prompt: str, generation_spans: list, generation_start: int | None,
                   timeout: float) -> TokenView | None:
    """The prompt's tokens with this session's tokenizer (in the bounded worker), or None without one."""
    if session.tokenizer is None:
        return None
    return prompt_tokens(session.tokenizer.files, prompt, generation_spans, generation_start, timeout=timeout,
                         owner=session.owner, page_bytes=TOKEN_VIEW_BYTES)


def tokens_html(prompt: str, view: TokenView, show_whitespace: bool = False, budget: int | None = None) -> str:
    """The prompt cut at its token boundaries: tokens alternate shades, each with its id and the
    tokenizer's own spelling on hover (`title`, and the ids in `data-ids`); special tokens boxed; the
    generation prompt and the assistant mask shaded. One short element per token: a prompt of
    thousands of tokens is rebuilt on every keystroke. At most `budget` bytes (`TOKEN_VIEW_BYTES`;
    the worker sent about as many tokens, `TokenView.for_page`): the rest of the prompt is a note."""
    budget = TOKEN_VIEW_BYTES if budget is None else budget
    out = []
    size = 0
    ids, pieces, special, mask = view.ids, view.pieces, view.special, view.assistant_mask
    generation = view.generation_token if view.generation_token is not None else len(ids)
    escape = html.escape
    shown_end = len(prompt) if view.shown_end is None else view.shown_end
    for start, end, tokens in view.cells(shown_end):
        text = prompt[start:end]
        shown = visible_ws(text) if show_whitespace else escape(text, quote=False).replace("\n", '<span class="ws">↵</span>\n')
        if tokens:
            first = tokens[0]
            if len(tokens) == 1:
                classes = f"tk tk{first & 1}{' sp' if special[first] else ''}{' am' if mask[first] else ''}{' gp' if first >= generation else ''}"
                token_ids, spelled = str(ids[first]), pieces[first]
            else:
                classes = (f"tk tk{first & 1}{' sp' if any(special[i] for i in tokens) else ''}"
                           f"{' am' if any(mask[i] for i in tokens) else ''}{' gp' if first >= generation else ''}")
                token_ids, spelled = " ".join(str(ids[i]) for i in tokens), " ".join(pieces[i] for i in tokens)
            shown = f'<span class="{classes}" data-ids="{token_ids}" title="id {token_ids} · {escape(spelled)}">{shown}</span>'
        size += len(shown)
        if size > budget:
            shown_end = start
            break
        out.append(shown)
    if shown_end < len(prompt):
        out.append(f'<div class="stale-banner view-cut">Tokens are shown up to character {shown_end:,} of {len(prompt):,}: '
                   f"the rest would be over the {budget // 1000:,} kB the page shows of them (the counts above are the "
                   "whole prompt's).</div>")
    return f'<div class="prompt-text token-text{" show-ws" if show_whitespace else ""}">{"".join(out)}</div>'


def tokens_info(view: TokenView) -> str:
    """The counts for the prompt's info line."""
    parts = [f"{view.count:,} tokens", f"{view.special_count:,} special"]
    parts.append(f"assistant mask: {view.assistant_count:,} tokens")
    if view.added_before:
        parts.append(f"tokenizer(prompt) would add {len(view.added_before)} in front (id {' '.join(map(str, view.added_before))})")
    return " · ".join(parts)
