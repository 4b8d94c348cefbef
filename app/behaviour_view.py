"""What changes for the model, in the page: the loaded version (the preset as it was loaded, or the
templates of the last Hub load, upload or share link) against the edited one, on the standard
conversations and the workspace's own cases; N of M conversations change, each expandable to its
prompt before and after with the changed characters marked. Below the workbench while editing,
and in the Publish tab (where "Show the diff" compares with the repo the pull request targets).

The engine decides (`engine.behaviour`, in the killable worker, its answer bounded there); this
module only builds the HTML, with every text escaped: templates and prompts are a visitor's text."""

from __future__ import annotations

import json
from typing import Any

import gradio as gr

from engine import limits
from engine.behaviour import BehaviourDiff, Change, ConversationDiff, Suite, Version, compare_bounded
from engine.behaviour.report import site_text
from engine.behaviour.text_diff import marked
from engine.diagnostics import Diagnostic
from engine.presets import load_preset
from engine.text import visible
from engine.workspace import Workspace

from .highlight import diagnostics_html, esc
from .state import Session
from .workbench import sync

# The diff renders every conversation twice, and explains the ones that change: a long call, in the
# worker, within the checks' bound.
COMPARE_TIMEOUT = limits.CHECK_SECONDS
NOTE = ("What the model will read: the standard conversations and your cases rendered with the loaded version and "
        "with your edit, and the outputs parsed by both response templates.")


def build_behaviour_section(prefix: str) -> dict[str, Any]:
    """The button and the view, named `{prefix}_compare` and `{prefix}_behaviour`."""
    button = gr.Button("Compare with the loaded version", size="sm",
                       elem_id=f"{prefix}-compare", elem_classes=["behaviour-button"])
    view = gr.HTML(elem_id=f"{prefix}-behaviour", elem_classes=["behaviour-box"])
    return {f"{prefix}_compare": button, f"{prefix}_behaviour": view}


def loaded_version(workspace: Workspace) -> Version:
    """What a workspace was loaded as (kept by the session when it is shown whole): a preset is its
    own, unchanged templates; anything else, its templates as they arrived."""
    if workspace.preset:
        try:
            preset = load_preset(workspace.preset)
            return Version(f"the {preset.display_name} preset as loaded", preset.chat_template,
                           preset.response_template, dict(preset.special_tokens))
        except (KeyError, ValueError, OSError):
            pass
    label = f"{workspace.source_repo} as loaded" if workspace.source_repo else "the templates as loaded"
    return Version(label, _chat_template(workspace), workspace.response_template or None, dict(workspace.special_tokens))


def _chat_template(workspace: Workspace) -> str | dict[str, str]:
    return {"default": workspace.chat_template, **workspace.other_templates} if workspace.other_templates \
        else workspace.chat_template


def edited_version(session: Session) -> Version:
    workspace = session.workspace
    return Version("your edit", _chat_template(workspace), workspace.response_template or None,
                   dict(workspace.special_tokens))


def session_suite(session: Session) -> Suite:
    """The workspace's cases, recordings and declared kwargs, and this visitor's tokenizer (token counts)."""
    workspace = session.workspace
    tokenizer = session.tokenizer.files if session.tokenizer is not None else None
    return Suite(cases=list(workspace.cases), recordings=list(workspace.recordings),
                 template_kwargs=workspace.template_kwargs(), tokenizer=tokenizer)


def _compare(session: Session, chat_template: str, response_template: str, form_case: str, form: dict) -> str:
    sync(session, chat_template, response_template, form_case, form)
    base = session.loaded if session.loaded is not None else loaded_version(session.workspace)
    diff, problem = compare_bounded(base, edited_version(session), session_suite(session), timeout=COMPARE_TIMEOUT,
                                    owner=session.owner)
    return behaviour_html(diff, problem)


def compare_in_playground(session: Session, chat_template: str, response_template: str, form_case: str,
                          **form: Any) -> dict[str, str]:
    """"Compare with the loaded version", under the chat template."""
    return {"playground_behaviour": _compare(session, chat_template, response_template, form_case, form)}


def compare_in_publish(session: Session, chat_template: str, response_template: str, form_case: str,
                       **form: Any) -> dict[str, str]:
    """The same, in the Publish tab."""
    return {"publish_behaviour": _compare(session, chat_template, response_template, form_case, form)}


def behaviour_html(diff: BehaviourDiff | None, problem: Diagnostic | None = None) -> str:
    """The view: the summary, each changed conversation as a `<details>` with its changes and both
    prompts (changed characters marked), the unchanged ones named, the outputs that parse to
    another message."""
    if diff is None:
        return '<div class="behaviour">' + diagnostics_html([problem] if problem else []) + "</div>"
    changed = "changed" if diff.any_change else "same"
    parts = [f'<div class="behaviour"><div class="behaviour-summary {changed}">{esc(diff.summary())}'
             f'<span class="behaviour-against"> {esc(diff.base)} → {esc(diff.new)}</span></div>',
             f'<div class="behaviour-note">{esc(NOTE)}</div>']
    parts += [_conversation(c) for c in diff.changed]
    same = [c.name for c in diff.conversations if not c.changed]
    if same:
        parts.append(f'<div class="behaviour-same">Unchanged: {esc(", ".join(same))}.</div>')
    for m in diff.changed_messages:
        fields = ", ".join(m.fields) or "the message"
        parts.append(f'<details class="behaviour-item"><summary><b>{esc(m.source)} {esc(m.name)}</b> · '
                     f'{esc(fields)} parse differently</summary><div class="behaviour-message">'
                     f'<div><span class="behaviour-label">Before</span> <code>{esc(_message(m.before, m.before_error))}</code></div>'
                     f'<div><span class="behaviour-label">After</span> <code>{esc(_message(m.after, m.after_error))}</code></div>'
                     "</div></details>")  # fmt: skip
    if diff.diagnostics:
        parts.append(diagnostics_html(diff.diagnostics))
    return "".join(parts) + "</div>"


def _conversation(c: ConversationDiff) -> str:
    count = len(c.changes) + c.more_changes
    facts = [f"{count} change{'s' if count != 1 else ''}"] if count else []
    if c.after_error and not c.before_error:
        facts.append("no longer renders")
    elif c.before_error and not c.after_error:
        facts.append("renders now")
    if c.token_change is not None:
        facts.append(f"{c.before_tokens:,} → {c.after_tokens:,} tokens")
    head = f'<summary><b>{esc(c.name)}</b> · {esc(" · ".join(facts))}</summary>'
    body = []
    for side, error in (("Before", c.before_error), ("After", c.after_error)):
        if error:
            body.append(f'<div class="behaviour-error"><span class="behaviour-label">{side}</span> {esc(error)}</div>')
    for change in c.changes:
        body.append(_change(change))
    if c.more_changes:
        body.append(f'<div class="behaviour-note">… and {c.more_changes} more changes.</div>')
    if c.before is not None and c.after is not None:
        body.append('<div class="behaviour-sides">'
                    f'<div><div class="behaviour-label">Before</div><pre class="behaviour-prompt">'
                    f'{_marked(c.before, [(ch.before_start, ch.before_end) for ch in c.changes], "del")}</pre></div>'
                    f'<div><div class="behaviour-label">After</div><pre class="behaviour-prompt">'
                    f'{_marked(c.after, [(ch.after_start, ch.after_end) for ch in c.changes], "ins")}</pre></div></div>')
    body += [f'<div class="behaviour-note">{esc(note)}</div>' for note in c.notes]
    return f'<details class="behaviour-item" data-conversation="{esc(c.name)}">{head}{"".join(body)}</details>'


def _change(change: Change) -> str:
    """Where one change is: the template line on each side, and the change in its context."""
    after = change.after_sites[0].text if change.after_sites else ""
    before = change.before_sites[0].text if change.before_sites else ""
    sites = (f'<div class="behaviour-site">now {esc(site_text(change.after_sites))}'
             + (f": <code>{esc(after)}</code>" if after else "")
             + f"; before {esc(site_text(change.before_sites))}"
             + (f": <code>{esc(before)}</code>" if before and before != after else "") + "</div>")
    line = (esc(visible(change.lead[-30:])) + (f"<del>{esc(visible(change.removed))}</del>" if change.removed else "")
            + (f"<ins>{esc(visible(change.added))}</ins>" if change.added else "") + esc(visible(change.trail[:30])))
    return sites + f'<div class="behaviour-line">…{line}…</div>'


def _marked(text: str, spans: list[tuple[int, int]], tag: str) -> str:
    out = []
    for piece, changed in marked(text, spans):
        if changed and not piece:  # the other version has text here
            out.append(f'<{tag} class="gap" title="the other version has text here"></{tag}>')
        elif changed:  # whitespace drawn where it changed, so a lost newline shows
            shown = "".join(visible(ch) + ("\n" if ch == "\n" else "") for ch in piece)
            out.append(f"<{tag}>{esc(shown)}</{tag}>")
        else:
            out.append(esc(piece))
    return "".join(out)


def _message(message: dict | str | None, error: str | None) -> str:
    if message is None:
        return f"({error})"
    return message if isinstance(message, str) else json.dumps(message, ensure_ascii=False)
