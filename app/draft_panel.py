""""Draft from the chat template", by the response template editor: the engine drafts a response
template from the chat template (`engine.draft`); the page shows it as a diff against the current
response template with the per-field report, and puts it in the editor only when the author
applies it. Undo puts the previous text back, byte for byte. The format picker
(`app/format_panel.py`) proposes, applies and undoes through the same functions."""

from __future__ import annotations

from typing import Any

import gradio as gr

from engine import limits
from engine.draft import Draft
from engine.inputs import load_json
from engine.hub.files import FileChange

from .highlight import diagnostics_html, esc, inline_html
from .publish_panel import diff_html
from .state import Session
from .workbench import keep_template, sync

# Drafting renders the chat template about 50 times, then parses and checks every probe: in the
# killable worker; a minute is far more than it needs.
DRAFT_TIMEOUT = 60.0
# What showing a draft updates, and what applying or undoing one updates.
SHOWN = ("draft_box", "draft_diff", "draft_report", "draft_apply", "draft_status")
APPLIED = ("response_template", "draft_box", "draft_undo", "draft_status")

STATUS_LABELS = {"verified": "verified", "unverified": "not verified", "not_inferable": "not inferable"}


def build_draft_panel() -> dict[str, Any]:
    """The button, the review box (diff, report, apply / discard) and undo, by name."""
    with gr.Row(elem_id="draft-row"):
        button = gr.Button("Draft from the chat template", size="sm", elem_id="draft-button")
        undo = gr.Button("Undo", size="sm", visible=False, elem_id="draft-undo")
    status = gr.HTML(elem_id="draft-status")
    with gr.Column(visible=False, elem_id="draft-box", elem_classes=["draft-box"]) as box:
        gr.HTML('<div class="draft-title">The draft against your response template. Nothing changes until you apply it.</div>')
        diff = gr.HTML(elem_id="draft-diff")
        report = gr.HTML(elem_id="draft-report")
        with gr.Row():
            apply = gr.Button("Apply the draft", variant="primary", size="sm", elem_id="draft-apply")
            discard = gr.Button("Discard", size="sm", elem_id="draft-discard")
    return dict(draft_button=button, draft_undo=undo, draft_status=status, draft_box=box, draft_diff=diff,
                draft_report=report, draft_apply=apply, draft_discard=discard)  # fmt: skip


def draft_response(session: Session, chat_template: str, response_template: str, form_case: str, **form: Any) -> dict[str, Any]:
    """The "Draft" button: draft from the chat template being edited, and show it for review."""
    sync(session, chat_template, response_template, form_case, form)
    workspace = session.workspace
    draft = workspace.draft_response_template(timeout=DRAFT_TIMEOUT)
    if draft.text:
        shown, changes = proposal_diff(workspace.response_template, draft.text, "the draft")
    else:
        shown, changes = '<div class="diff-empty">No draft: the chat template shows no field the draft could read (see below).</div>', False
    session.draft = draft.text if changes else None
    return {
        "draft_box": gr.update(visible=True),
        "draft_diff": shown,
        "draft_report": report_html(draft),
        "draft_apply": gr.update(interactive=session.draft is not None),
        "draft_status": "",
    }


def proposal_diff(current: str, proposed: str, what: str) -> tuple[str, bool]:
    """A proposed response template (a draft, a library format) as a diff against the editor's
    text, and whether applying it changes anything: equal as data is no change."""
    if len(current) > limits.MAX_RESPONSE_TEMPLATE_CHARS:  # a visitor's text: not diffed beyond the editor's limit
        return (f'<div class="diff-empty">Your response template is over {limits.MAX_RESPONSE_TEMPLATE_CHARS:,} characters, '
                f"too long to compare: applying {esc(what)} replaces it.</div>"), True
    data = _data(proposed)
    if data is not None and _data(current) == data:
        return f'<div class="diff-empty">No changes: {esc(what)} is your response template.</div>', False
    return diff_html(FileChange("response_template.json", current.encode(), proposed.encode()).diff), True


def _data(text: str) -> object:
    """The response template as data (None when it is not JSON, or too long or deep to read: the
    editor's text is the visitor's): a proposal equal to it as data is no change."""
    data, problems = load_json(text, "response_template", "response template", limits.MAX_RESPONSE_TEMPLATE_CHARS)
    return None if problems else data


def apply_draft(session: Session, response_template: str) -> dict[str, Any]:
    """"Apply": the draft goes into the editor; the text it replaces is kept for undo."""
    if session.draft is None:
        return {"draft_status": '<div class="status-note">Nothing to apply: draft first.</div>'}
    text, session.draft = session.draft, None
    return apply_text(session, response_template, text,
                      "The draft is in the editor. “Undo” puts your previous response template back.")


def apply_text(session: Session, response_template: str | None, text: str, note: str) -> dict[str, Any]:
    """Put a proposed response template (a draft, a library format) in the editor; the editor's
    text it replaces is kept for Undo."""
    session.draft_undo = response_template if response_template is not None else ""
    return _in_editor(session, text, undo=True, note=note)


def undo_draft(session: Session) -> dict[str, Any]:
    """"Undo": the response template as it was before the draft was applied."""
    if session.draft_undo is None:
        return {"draft_undo": gr.update(visible=False)}
    text, session.draft_undo = session.draft_undo, None
    return _in_editor(session, text, undo=False, note="Your previous response template is back.")


def _in_editor(session: Session, text: str, undo: bool, note: str) -> dict[str, Any]:
    """Put `text` in the response template editor, the draft box closed, Undo shown or not. The
    workspace keeps it as it keeps a typed text (within its limit and the workspace's budget)."""
    keep_template(session, "response_template", text)
    return {
        "response_template": text,
        "draft_box": gr.update(visible=False),
        "draft_undo": gr.update(visible=undo),
        "draft_status": f'<div class="status-note">{note}</div>',
    }


def discard_draft(session: Session) -> dict[str, Any]:
    session.draft = None
    return {"draft_box": gr.update(visible=False), "draft_diff": "", "draft_report": "", "draft_apply": gr.update(),
            "draft_status": ""}  # fmt: skip


def _library_rows(draft: Draft) -> list[str]:
    """The library format the calls come from, the history/instructions disagreement with both texts
    side by side, and what the spec cannot say."""
    rows = []
    if draft.format is not None:
        rows.append(f'<div class="draft-format">From the format library: <b>{esc(draft.format.name)}</b> '
                    f'({esc(draft.format.title)}); {inline_html("; ".join(draft.format.how))}.</div>')  # fmt: skip
    found = draft.disagreement
    if found is not None:
        rows.append(
            '<div class="draft-disagreement"><b>The history writes calls unlike what the model is told</b> (a bug in '
            f'the chat template; the draft follows the instructions): {found.parsed[0]} of {found.parsed[1]} history '
            'probes with calls parse with the format the instructions describe.<div class="draft-sides">'
            f'<div>What the model is told to write<pre>{esc(found.told)}</pre></div>'
            f'<div>What the history writes ({esc(found.probe)})<pre>{esc(found.history)}</pre></div></div></div>'
        )
    limits = [*(draft.format.limits if draft.format else []), *draft.limits]
    if limits:
        items = "".join(f"<li>{inline_html(limit)}</li>" for limit in dict.fromkeys(limits))
        rows.append(f'<div class="draft-limits">What the response-template spec cannot say here:<ul class="draft-notes">{items}</ul></div>')
    return rows


def report_html(draft: Draft) -> str:
    """Per field: verified / not verified / not inferable, what was read or why not, and the notes;
    then the checks on the probes and any diagnostics."""
    rows = []
    for report in draft.fields:
        notes = "".join(f"<li>{inline_html(note)}</li>" for note in report.notes)
        rows.append(
            f'<div class="draft-field {report.status}" data-field="{esc(report.field)}">'
            f'<span class="draft-badge">{STATUS_LABELS[report.status]}</span> <b>{esc(report.field)}</b>'
            f'<div class="draft-message">{inline_html(report.message)}</div>'
            + (f'<ul class="draft-notes">{notes}</ul>' if notes else "")
            + "</div>"
        )
    rows += _library_rows(draft)
    if draft.checks:
        counts = {s: sum(1 for c in draft.checks if c.status == s) for s in ("pass", "warn", "fail")}
        worst = "fail" if counts["fail"] else "warn" if counts["warn"] else "pass"
        # A check's details are laid out in lines and columns (the history's calls side by side): as written.
        failed = "".join(f'<li><b>{esc(c.name)}</b>' + (f" · {esc(c.subject)}" if c.subject else "")
                         + f'<pre class="draft-check-details">{esc(c.details)}</pre></li>'
                         for c in draft.checks if c.status == "fail")
        rows.append(
            f'<div class="draft-checks {worst}">Round-trip and streaming checks of the draft on {draft.probes} probe '
            f'conversations: {counts["pass"]} passed, {counts["warn"]} warnings, {counts["fail"]} failed '
            f'({draft.seconds:.2f} s).' + (f'<ul class="draft-notes">{failed}</ul>' if failed else "") + "</div>"
        )
    return '<div class="draft-report">' + "".join(rows) + "</div>" + diagnostics_html(draft.diagnostics)
