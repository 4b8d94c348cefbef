"""The Publish tab: review the diff of the files `save_pretrained` would write for the edited
templates against a Hub model repo, open a pull request (one commit, `create_pr=True`), or download
the same files as a zip. All Hub work is `engine.hub`'s; this module only formats.

Auth: on a Space, "Sign in with Hugging Face" (OAuth; the Space's README declares the write scope);
locally, a pasted token or the one `huggingface_hub` finds (HF_TOKEN, `hf auth login`). A token is
never stored in the session, put in a share link, or shown back."""

from __future__ import annotations

import base64
import os
from typing import Any

import gradio as gr

from engine.diagnostics import Diagnostic
from engine import limits
from engine.hub import local_token
from engine.hub.files import TOKENIZER_CONFIG
from engine.publish import plan_publish, publish, templates_zip
from engine.public import policy

from .behaviour_view import behaviour_html, build_behaviour_section, session_suite
from .highlight import diagnostics_html, esc
from .state import Session
from .workbench import sync

NOTE = (
    "Publish the edited templates as a **pull request** on the model repo: the files are exactly what "
    "transformers' `save_pretrained` writes (`chat_template.jinja`, and `tokenizer_config.json` with "
    "`response_template` set and every other key kept). Review the diff first; nothing is sent until you "
    "press *Open pull request*. Or download the same files as a zip."
)
# "Sign in with Hugging Face" needs the OAuth a Space provides.
ON_SPACE = bool(os.environ.get("SPACE_ID"))
# Building the files compiles the chat template: in the bounded worker, within a render's time.
BUILD_TIMEOUT = limits.RENDER_SECONDS
# A diff shows at most this many lines (a repo's tokenizer_config.json can be megabytes).
MAX_DIFF_LINES = 5_000


def chat_template_to_publish(session: Session) -> str | dict[str, str]:
    workspace = session.workspace
    if not workspace.other_templates:
        return workspace.chat_template
    return {"default": workspace.chat_template, **workspace.other_templates}


def _token(pasted: str | None, oauth: Any) -> str | None:
    """The token to use: pasted, else the visitor's sign-in, else the local login (never in public
    mode: `local_token` asks engine.public, and a public server never acts with its own token)."""
    if pasted and pasted.strip():
        return pasted.strip()
    if oauth is not None and oauth.token:
        return oauth.token
    return local_token()


def diff_html(diff: str, computed: bool = True) -> str:
    """A unified diff, coloured (escaped: template text is untrusted). A diff that could not be
    computed (the repo could not be read) is not an empty one."""
    if not computed:
        return '<div class="diff-empty">No diff: the repo could not be read (see the message above).</div>'
    if not diff:
        return '<div class="diff-empty">No changes.</div>'
    rows = []
    lines = diff.splitlines()
    if len(lines) > MAX_DIFF_LINES:
        rows.append(f'<div class="diff-empty">The diff has {len(lines):,} lines; the first {MAX_DIFF_LINES:,} are shown '
                    "(the zip and the pull request hold every file whole).</div>")
        lines = lines[:MAX_DIFF_LINES]
    for line in lines:
        cls = "add" if line.startswith("+") and not line.startswith("+++") else "del" if line.startswith("-") and not line.startswith("---") else "hunk" if line.startswith("@@") else "file" if line.startswith(("---", "+++")) else ""
        rows.append(f'<div class="{cls}">{esc(line) or " "}</div>')
    return '<div class="diff">' + "".join(rows) + "</div>"


def preview(session: Session, chat_template: str, response_template: str, form_case: str, publish_repo: str,
            publish_revision: str, publish_token: str, oauth: gr.OAuthToken | None, **form: Any) -> dict[str, Any]:
    """"Show the diff": the diff, a title and description to start from, messages, the zip."""
    sync(session, chat_template, response_template, form_case, form)
    repo = (publish_repo or "").strip()
    if not repo:
        return {"publish_diff": "", "publish_messages": diagnostics_html([_problem("Enter the model repo id (owner/model)" + (", or a local folder to diff against." if policy().allow_paths else "."))]),
                "publish_zip": ""}  # fmt: skip
    plan = plan_publish(repo, chat_template_to_publish(session), session.workspace.response_template,
                        revision=(publish_revision or "").strip() or None, token=_token(publish_token, oauth),
                        timeout=BUILD_TIMEOUT, special_tokens=dict(session.workspace.special_tokens),
                        suite=session_suite(session))  # fmt: skip
    failed = any(d.severity == "error" for d in plan.diagnostics)
    files = "".join(f'<div class="diff-file"><b>{esc(c.path)}</b> · {esc(c.status)}</div>' for c in plan.changes)
    out: dict[str, Any] = {
        "publish_diff": files + diff_html(plan.diff(), computed=not failed),
        "publish_messages": diagnostics_html(plan.diagnostics, "Ready: review the diff, then open the pull request."),
        "publish_zip": zip_link(plan.zip(), f"{repo}-templates") if plan.changes and not failed else "",
    }
    # What changes for the model against the repo the pull request targets (worked out with the plan).
    out["publish_behaviour"] = behaviour_html(plan.behaviour) if plan.behaviour is not None else ""
    if plan.title:
        out["publish_title"] = plan.title
    if plan.description:
        out["publish_description"] = plan.description
    return out


def open_pull_request(session: Session, chat_template: str, response_template: str, form_case: str, publish_repo: str,
                      publish_revision: str, publish_title: str, publish_description: str, publish_token: str,
                      oauth: gr.OAuthToken | None, **form: Any) -> dict[str, str]:  # fmt: skip
    """"Open pull request": the PR link, or why nothing was published."""
    sync(session, chat_template, response_template, form_case, form)
    repo = (publish_repo or "").strip()
    if not repo:
        return {"publish_messages": diagnostics_html([_problem("Enter the model repo id (owner/model).")])}
    token = _token(publish_token, oauth)
    # What changes for the model is worked out for the default description only (a description the
    # author kept or wrote already holds what they mean to say).
    plan = plan_publish(repo, chat_template_to_publish(session), session.workspace.response_template,
                        revision=(publish_revision or "").strip() or None, token=token, timeout=BUILD_TIMEOUT,
                        special_tokens=dict(session.workspace.special_tokens), suite=session_suite(session),
                        behaviour=not publish_description)  # fmt: skip
    result = publish(plan, token=token, title=publish_title or None, description=publish_description or None)
    if isinstance(result, Diagnostic):
        return {"publish_messages": diagnostics_html([result])}
    link = f'<div class="pr-link">Pull request opened: <a href="{esc(result)}" target="_blank" rel="noopener">{esc(result)}</a></div>'
    return {"publish_messages": link}


def download_zip(session: Session, chat_template: str, response_template: str, form_case: str, **form: Any) -> dict[str, Any]:
    """The zip without a repo to diff against: the files as `save_pretrained` writes them on top of
    the model's files as loaded (its tokenizer_config.json keeps every other key), or from scratch."""
    sync(session, chat_template, response_template, form_case, form)
    workspace = session.workspace
    loaded = {TOKENIZER_CONFIG: workspace.tokenizer_config.encode("utf-8")} if workspace.tokenizer_config else {}
    data, problems = templates_zip(chat_template_to_publish(session), workspace.response_template, files=loaded,
                                   timeout=BUILD_TIMEOUT)
    if data is None:
        return {"publish_zip": "", "publish_messages": diagnostics_html(problems)}
    kept = ("The files are the model's as loaded, with the templates set: every other key of tokenizer_config.json "
            "is kept." if loaded else "")
    return {"publish_zip": zip_link(data, "templates"), "publish_messages": diagnostics_html(problems, kept)}


def zip_link(data: bytes, name: str) -> str:
    """A download link carrying the zip itself (a data URL): nothing is written to the server's disk,
    so nothing is left there (a file per download used to stay forever)."""
    filename = name.replace("/", "--").strip(".") + ".zip"
    return (f'<a class="zip-link" id="publish-zip-link" download="{esc(filename)}" '
            f'href="data:application/zip;base64,{base64.b64encode(data).decode()}">⬇ {esc(filename)} '
            f"({max(1, len(data) // 1000):,} kB)</a>")


def _problem(message: str):
    return Diagnostic("error", message, "hub")


def build_publish_tab() -> dict[str, Any]:
    """The Publish tab's components, by name."""
    gr.Markdown(NOTE, elem_id="publish-note")
    with gr.Row():
        repo = gr.Textbox(label="Model repo id", placeholder="owner/model", scale=3, elem_id="publish-repo")
        revision = gr.Textbox(label="Base revision (branch)", placeholder="main", scale=1, elem_id="publish-revision")
    with gr.Row():
        if ON_SPACE:
            gr.LoginButton(scale=1)
        label = ("Your Hugging Face token with write access (this public server never uses its own)" if policy().public
                 else "Hugging Face token with write access (optional locally: HF_TOKEN or `hf auth login` is used)")
        token = gr.Textbox(label=label, type="password", scale=3, elem_id="publish-token", visible=not ON_SPACE)
    title = gr.Textbox(label="Pull request title", elem_id="publish-title")
    description = gr.Textbox(label="Description", lines=4, elem_id="publish-description")
    with gr.Row():
        preview_button = gr.Button("Show the diff", elem_id="publish-preview")
        open_pr = gr.Button("Open pull request", variant="primary", elem_id="publish-open")
        download = gr.Button("Download zip", elem_id="publish-download")
    messages = gr.HTML(elem_id="publish-messages")
    diff = gr.HTML(elem_id="publish-diff")
    zip_file = gr.HTML(elem_id="publish-zip")
    components = dict(publish_repo=repo, publish_revision=revision, publish_title=title, publish_description=description,
                      publish_token=token, publish_preview=preview_button, publish_open=open_pr, publish_download=download,
                      publish_messages=messages, publish_diff=diff, publish_zip=zip_file)
    # What changes for the model (app/behaviour_view.py): against the repo with "Show the diff", or
    # against the loaded version with its own button.
    gr.HTML('<div class="panel-title behaviour-title">What changes for the model</div>', elem_id="publish-behaviour-title")
    return {**components, **build_behaviour_section("publish")}
