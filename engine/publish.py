"""Publish edited templates to a model repo as one pull request.

Two steps, so the author always sees what is sent: `plan_publish` reads the repo, builds the files
`save_pretrained` would write and diffs them (nothing is written); `publish` sends exactly that
plan as a single commit with `create_pr=True`, based on the commit the diff was made against.
A commit is atomic on the Hub, so a failure leaves the repo untouched: nothing is half-published.

The token is an argument, never read from the environment here: locally the caller passes
`local_token()` or a pasted token; on a Space, the visitor's OAuth token. It is never logged,
stored, or put in a message (see `errors.redact`)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi
from huggingface_hub.errors import HfHubHTTPError

from . import limits
from .behaviour import BehaviourDiff, Suite, Version, compare_bounded
from .behaviour.report import markdown_report
from .diagnostics import Diagnostic
from .sandbox import bounded_or_why
from .hub.errors import hub_error, redact
from .hub.files import (
    CHAT_TEMPLATE_FILE,
    LEGACY_CHAT_TEMPLATE_JSON,
    TOKENIZER_CONFIG,
    ChatTemplate,
    FileChange,
    build_files,
    config_bytes,
    diff_files,
    zip_files,
)
from .hub.load import HubTemplates, hub_endpoint, load_templates

APP_NAME = "template playground"
_COMMIT = re.compile(r"[0-9a-f]{40}")
# What changes for the model takes this long at most to work out (its own bound: a slow template
# leaves the files to publish, with a sentence in the description, rather than no plan at all).
BEHAVIOUR_SECONDS = 3 * limits.RENDER_SECONDS
# The behaviour section of a description stays within this many characters (a Hub discussion's
# text is meant to be read; `python -m engine diff` shows every change).
MAX_BEHAVIOUR_MARKDOWN = 20_000
BEHAVIOUR_HEADING = "## What changes for the model"


@dataclass
class PublishPlan:
    """What a publish would send: every file written or deleted with its current version, and a
    default title and description saying what changed. `base` is what was loaded from the repo."""

    base: HubTemplates
    changes: list[FileChange] = field(default_factory=list)
    title: str = ""
    description: str = ""
    diagnostics: list[Diagnostic] = field(default_factory=list)
    # What changes for the model (engine.behaviour), when it was worked out: its summary and each
    # change are in the description too.
    behaviour: BehaviourDiff | None = None

    @property
    def repo_id(self) -> str:
        return self.base.source

    @property
    def changed(self) -> list[FileChange]:
        """The files the pull request touches (unchanged ones are left out of the commit)."""
        return [c for c in self.changes if c.status != "unchanged"]

    @property
    def ok(self) -> bool:
        """Whether there is something to publish and nothing stands in the way."""
        return bool(self.changed) and not any(d.severity == "error" for d in self.diagnostics)

    @property
    def files(self) -> dict[str, bytes]:
        """All files as they will be after the publish (changed or not): what the zip holds."""
        return {c.path: c.new for c in self.changes if c.new is not None}

    def diff(self) -> str:
        """The unified diff of every changed file."""
        return "".join(c.diff for c in self.changed)

    def zip(self) -> bytes:
        """The files as a zip download, for authors who upload by hand."""
        return zip_files(self.files)


def plan_publish(
    source: str | HubTemplates,
    chat_template: ChatTemplate | None,
    response_template: str | None,
    *,
    revision: str | None = None,
    token: str | None = None,
    endpoint: str | None = None,
    allow_folders: bool | None = None,
    timeout: float | None = None,
    special_tokens: dict | None = None,
    suite: Suite | None = None,
    behaviour: bool = True,
) -> PublishPlan:
    """Build and diff the files for these templates against the repo (or folder) as it is now.
    `source` is a repo id or folder (loaded fresh), or templates already loaded. Never raises.
    Folders only where public mode allows them (see `load_templates`). With `timeout`, the files
    are built and diffed in a bounded worker (engine.sandbox): building compiles the chat template,
    and Jinja runs constant expressions while it compiles.

    With `behaviour` (the default), what changes for the model is worked out too, in the worker
    (`engine.behaviour`: the repo's templates and its special tokens against these, rendered with
    `special_tokens`, default the repo's, on the standard conversations and `suite`'s), and the
    description says it: how many conversations' prompts change, each change in a `<details>`."""
    base = source if isinstance(source, HubTemplates) else load_templates(
        source, revision, token=token, endpoint=endpoint, allow_folders=allow_folders)
    if not base.ok:
        return PublishPlan(base, diagnostics=[d for d in base.diagnostics if d.severity == "error"])
    if timeout is None:
        plan = _plan(base, chat_template, response_template)
    else:
        plan, problem = bounded_or_why(_plan, {"base": base, "chat_template": chat_template,
                                               "response_template": response_template}, timeout,
                                       doing="Building the files", hint="Look for expressions that make huge numbers or strings.")
        if problem is not None:
            return PublishPlan(base, diagnostics=[problem])
    if behaviour and plan.changed and not any(d.severity == "error" for d in plan.diagnostics):
        _add_behaviour(plan, chat_template, response_template, special_tokens, suite)
    return plan


def _add_behaviour(plan: PublishPlan, chat_template: ChatTemplate | None, response_template: str | None,
                   special_tokens: dict | None, suite: Suite | None) -> None:
    """What changes for the model, into the plan and its description."""
    base = plan.base
    if base.chat_template is None:  # nothing rendered before: every prompt is new
        return
    old = Version(base.source + (f"@{base.revision}" if base.revision else ""), base.chat_template,
                  base.response_template, dict(base.special_tokens))
    new = Version("this pull request", chat_template if chat_template is not None else base.chat_template,
                  response_template if response_template is not None else base.response_template,
                  dict(base.special_tokens if special_tokens is None else special_tokens))
    plan.behaviour, problem = compare_bounded(old, new, suite, timeout=BEHAVIOUR_SECONDS)
    if plan.behaviour is not None:
        section = markdown_report(plan.behaviour, heading=BEHAVIOUR_HEADING, max_chars=MAX_BEHAVIOUR_MARKDOWN,
                                  changes_shown=3)
    else:
        section = f"{BEHAVIOUR_HEADING}\n\nNot worked out: {problem.message if problem else 'unknown problem'}\n"
    plan.description = plan.description.rstrip() + "\n\n" + section


def templates_zip(chat_template: ChatTemplate, response_template: str | None, *, files: dict[str, bytes] | None = None,
                  timeout: float | None = None) -> tuple[bytes | None, list[Diagnostic]]:
    """The files `save_pretrained` writes for these templates, as a zip (None when they cannot be
    built, with why): on top of the model's own `files` as loaded (its tokenizer_config.json keeps
    every other key), or from scratch. With `timeout`, built in a bounded worker (see `plan_publish`)."""
    if timeout is not None:
        made, problem = bounded_or_why(templates_zip, {"chat_template": chat_template, "response_template":
                                                       response_template, "files": files}, timeout,
                                       doing="Building the files",
                                       hint="Look for expressions that make huge numbers or strings.")  # fmt: skip
        return made if problem is None else (None, [problem])
    built = build_files(dict(files or {}), chat_template, response_template)
    if any(d.severity == "error" for d in built.diagnostics):
        return None, built.diagnostics
    return zip_files(built.files), built.diagnostics


def _plan(base: HubTemplates, chat_template: ChatTemplate | None, response_template: str | None) -> PublishPlan:
    built = build_files(base.files, chat_template, response_template)
    plan = PublishPlan(base, diagnostics=built.diagnostics)
    if any(d.severity == "error" for d in built.diagnostics):
        return plan
    plan.changes = diff_files(base.files, built)
    for change in plan.changes:
        change.diff  # noqa: B018 - made here (in the worker), kept with the plan
    plan.title, plan.description = default_message(base, plan.changes)
    if not plan.changed:
        plan.diagnostics.append(Diagnostic("info", f"Nothing to publish: {base.source} already has these templates.",
                                           "hub"))
    return plan


def publish(
    plan: PublishPlan,
    *,
    token: str | None,
    title: str | None = None,
    description: str | None = None,
    endpoint: str | None = None,
) -> str | Diagnostic:
    """Open the pull request for `plan`: one commit holding every changed file. Returns the pull
    request's URL, or a Diagnostic saying why nothing was published."""
    endpoint = hub_endpoint(endpoint)
    errors = [d for d in plan.diagnostics if d.severity == "error"]
    if errors:
        return errors[0]
    if not plan.base.is_repo or plan.base.commit is None:
        return Diagnostic("error", "Publishing needs a Hub repo id; this was loaded from a local folder.", "hub",
                          hint="Download the zip and upload its files, or load the templates from the repo.")
    if not plan.changed:
        return Diagnostic("info", f"Nothing to publish: {plan.repo_id} already has these templates.", "hub")
    revision = plan.base.revision
    if revision and (_COMMIT.fullmatch(revision) or revision.startswith("refs/pr/")):
        return Diagnostic("error", f"A pull request targets a branch, and {revision!r} is not one.", "hub",
                          hint="Load the repo at a branch (e.g. main) and publish again.")
    token = (token or "").strip()
    if not token:
        return Diagnostic("error", "Publishing needs you to be signed in to Hugging Face.", "hub",
                          hint="On a Space, use 'Sign in with Hugging Face'. Locally, set HF_TOKEN, run "
                               "`hf auth login`, or paste a write token.")
    title = " ".join((title or plan.title).split()) or plan.title  # a commit summary is one line
    description = plan.description if description is None else description

    api = HfApi(endpoint=endpoint, token=token, library_name="template-playground")
    refusal = _check_token(api, plan.repo_id, endpoint, token)
    if refusal is not None:
        return refusal
    operations: list = [
        CommitOperationDelete(c.path) if c.new is None else CommitOperationAdd(c.path, c.new) for c in plan.changed
    ]
    try:
        info = api.create_commit(
            plan.repo_id,
            operations,
            commit_message=title,
            commit_description=description,
            revision=plan.base.revision,
            create_pr=True,
            # The PR starts from the commit the diff was made against: it holds exactly what was shown.
            parent_commit=plan.base.commit,
        )
    except Exception as e:  # noqa: BLE001 - every Hub failure becomes a message
        return hub_error(e, plan.repo_id, endpoint=endpoint, revision=plan.base.revision, publishing=True, token=token)
    if not info.pr_url:
        return Diagnostic("error", "The Hub accepted the commit but returned no pull request link.", "hub",
                          hint=f"Look for it under {endpoint}/{plan.repo_id}/discussions.")
    return redact(info.pr_url, token)


def _check_token(api: HfApi, repo_id: str, endpoint: str, token: str) -> Diagnostic | None:
    """Catch an invalid or read-only token before anything is sent (clearer than the commit's 403)."""
    try:
        me = api.whoami()
    except HfHubHTTPError as e:
        if e.response is not None and e.response.status_code == 401:
            return hub_error(e, repo_id, endpoint=endpoint, publishing=True, token=token)
        return None  # whoami is rate-limited on the Hub: let the commit itself decide
    except Exception as e:  # noqa: BLE001 - network down: the commit could not be sent either
        return hub_error(e, repo_id, endpoint=endpoint, publishing=True, token=token)
    role = ((me.get("auth") or {}).get("accessToken") or {}).get("role")
    if role == "read":
        return Diagnostic("error", f"Your token is read-only, so it cannot open a pull request on {repo_id}. "
                          "Nothing was published.", "hub",
                          hint="Create a token with write access at https://huggingface.co/settings/tokens.")
    return None


def default_message(base: HubTemplates, changes: list[FileChange]) -> tuple[str, str]:
    """A title and description that say what the pull request changes, file by file."""
    changed = {c.path: c for c in changes if c.status != "unchanged"}
    templates = [p for p in changed if p.endswith(".jinja")]
    response = _response_change(changed.get(TOKENIZER_CONFIG))
    what = []
    if templates or LEGACY_CHAT_TEMPLATE_JSON in changed:
        what.append("chat template")
    if response:
        what.append("response template")
    verb = "Add" if response == "added" and not templates else "Update"
    title = f"{verb} {' and '.join(what)}" if what else "Update tokenizer_config.json"

    lines = [f"This pull request was prepared with the {APP_NAME}.", ""]
    for path, change in sorted(changed.items()):
        lines.append(f"- `{path}`: {_describe_change(base, change, response)}")
    if TOKENIZER_CONFIG in changed:
        lines.append("")
        lines.append("Every other key of tokenizer_config.json keeps its value.")
    lines.append("")
    lines.append("The files are the ones transformers' `save_pretrained` writes for these templates.")
    return title, "\n".join(lines)


def _response_change(config: FileChange | None) -> str | None:
    """"added", "updated" or None: what happened to `response_template` in tokenizer_config.json."""
    if config is None or config.new is None:
        return None
    old = _json_or_none(config.old)
    new = json.loads(config.new)
    if old is None or "response_template" not in old:
        return "added" if "response_template" in new else None
    return "updated" if old.get("response_template") != new.get("response_template") else None


def _describe_change(base: HubTemplates, change: FileChange, response: str | None) -> str:
    if change.status == "deleted":
        if change.path == LEGACY_CHAT_TEMPLATE_JSON:
            return "removed: the chat template now lives in chat_template.jinja (processors read this legacy " \
                   "file first, so keeping it would keep the old template)."
        return "removed: this named template is no longer part of the set."
    if change.path == TOKENIZER_CONFIG:
        parts = []
        if response:
            parts.append(f"`response_template` {response}")
        old = _json_or_none(change.old)
        if old is not None and "chat_template" in old:
            parts.append("the inline `chat_template` removed (it moved to chat_template.jinja)")
        if old is not None and config_bytes(old) != change.old:
            parts.append("rewritten in save_pretrained's format (sorted keys, 2-space indent)")
        return "; ".join(parts) or "updated"
    name = "chat template" if change.path == CHAT_TEMPLATE_FILE else f"chat template {change.path.rsplit('/', 1)[-1]!r}"
    if change.status == "added" and base.origin in ("tokenizer_config.json", "chat_template.json"):
        return f"{name}, moved out of {base.origin} and edited" if _moved_and_edited(base, change) \
            else f"{name}, moved out of {base.origin}"
    return f"{name} {'added' if change.status == 'added' else 'updated'}"


def _moved_and_edited(base: HubTemplates, change: FileChange) -> bool:
    old = base.chat_template
    if isinstance(old, dict):
        old = old.get("default" if change.path == CHAT_TEMPLATE_FILE else change.path.rsplit("/", 1)[-1][:-6])
    return old is None or old.encode("utf-8") != change.new


def _json_or_none(data: bytes | None) -> dict | None:
    if data is None:
        return None
    try:
        value = json.loads(data)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
