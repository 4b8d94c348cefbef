"""What one visitor may hold, and which sessions let go first when memory runs short.

Every input has a size limit of its own (`engine.limits`); a workspace also has one as a whole,
checked when it arrives (an edit, a new case, a preset, a share link, files, a Hub load), so a
session cannot grow past it by adding many inputs that are each within their limit. Sessions are
released when idle past `limits.IDLE_SECONDS`, and before that when one client's sessions together,
or all sessions, hold more than their budget: the longest-idle first, never one with a request in
flight. A released session's work is not lost: the browser keeps a saved copy and a share link
holds it (the page says to reload)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from . import limits
from .diagnostics import Diagnostic, Source

# Bytes a JSON-like item costs beyond its characters (a dict, a list slot, a small string object).
ITEM_BYTES = 60


def data_size(value: Any, stop_past: int | None = None) -> int:
    """About how many bytes `value` (JSON-like data) takes in memory: its characters, plus a little
    for each item. Iterative (a share link's data may be nested deep), and it stops counting past
    `stop_past`, so a million small items cost no more to refuse than the budget to count."""
    total, stack = 0, [value]
    while stack:
        item = stack.pop()
        total += ITEM_BYTES
        if stop_past is not None and total > stop_past:
            return total
        if isinstance(item, str):
            total += len(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return total


def workspace_size(workspace: Any) -> int:
    """About how many bytes a workspace holds (templates, cases, recordings, a pasted output, the
    model's tokenizer_config.json)."""
    texts = (workspace.chat_template, workspace.response_template, workspace.run.pasted,
             *workspace.other_templates.values(), workspace.tokenizer_config, *workspace.model_tokens)  # fmt: skip
    size = sum(len(t) for t in texts if isinstance(t, str))
    size += sum(data_size(case.to_dict()) for case in workspace.cases)
    size += sum(data_size([r.output, r.expected, r.description, r.name]) for r in workspace.recordings)
    return size


def check_workspace(workspace: Any, source: Source = "preset") -> list[Diagnostic]:
    """Why a workspace cannot be held (too many cases or recordings, or more than
    `limits.MAX_WORKSPACE_CHARS` in all), as one diagnostic; [] when it fits."""
    hint = too_large().hint
    templates = [("chat template", workspace.chat_template, limits.MAX_CHAT_TEMPLATE_CHARS),
                 ("response template", workspace.response_template, limits.MAX_RESPONSE_TEMPLATE_CHARS),
                 *((f"chat template {name!r}", text, limits.MAX_CHAT_TEMPLATE_CHARS)
                   for name, text in workspace.other_templates.items())]
    for what, text, limit in templates:
        if isinstance(text, str) and len(text) > limit:
            return [Diagnostic("error", f"Too long ({what}): {len(text):,} characters, over the {limit:,} limit.", source,
                               hint="Real templates are far smaller; check that these are the right files.")]
    for count, what in ((len(workspace.cases), "cases"), (len(workspace.recordings), "recordings")):
        if count > limits.MAX_CASES:
            return [Diagnostic("error", f"Too many {what}: {count:,}, over the {limits.MAX_CASES:,} a workspace may hold.",
                               source, hint=hint)]
    if workspace_size(workspace) > limits.MAX_WORKSPACE_CHARS:
        return [too_large(source)]
    return []


def too_large(source: Source = "preset") -> Diagnostic:
    """More than one session may hold (`limits.MAX_WORKSPACE_CHARS`, items counted as characters too)."""
    return Diagnostic("error", f"Too large: it holds more than the {limits.MAX_WORKSPACE_CHARS:,} characters one "
                      "session may hold.", source,
                      hint="Split the work over several share links, or remove cases you no longer need.")


def keep_text(current: str, new: Any, limit: int, source: Source, what: str) -> tuple[str, Diagnostic | None]:
    """What the server keeps of a text a visitor sent (a template, a pasted output): `new` when it is
    text within `limit`, else `current`, with why (the editor still holds what was typed)."""
    if not isinstance(new, str):
        new = ""
    if len(new) <= limit:
        return new, None
    return current, Diagnostic("error", f"Too long ({what}): {len(new):,} characters, over the {limit:,} limit, so the "
                               "server did not keep it; it works on the last text within the limit.", source,
                               hint="Real ones are far smaller; check that the right text was pasted.")


def summarised(problems: list[Diagnostic], limit: int | None = None) -> list[Diagnostic]:
    """At most `limit` diagnostics (`limits.MAX_DIAGNOSTICS`), the rest said in one line: a case
    with a million malformed messages gets twenty messages and a count, not a million."""
    limit = limits.MAX_DIAGNOSTICS if limit is None else limit
    if len(problems) <= limit:
        return problems
    rest = problems[limit:]
    return [*problems[:limit], Diagnostic(rest[0].severity, f"… and {len(rest):,} more like these.", rest[0].source)]


@dataclass(frozen=True)
class Held:
    """What the sweep knows of a session: whose it is, how much it holds, when it was last used,
    and whether a request of it is in flight (then it is never released)."""

    id: str
    client: str
    bytes: int
    idle: float
    busy: bool = False


def to_release(sessions: Iterable[Held], *, idle_seconds: float | None = None, client_bytes: int | None = None,
               total_bytes: int | None = None) -> list[str]:
    """The ids of the sessions to release: every one idle past `idle_seconds`; then, while a client
    holds more than `client_bytes`, its longest-idle sessions; then, while all hold more than
    `total_bytes`, the longest-idle sessions of anyone. Sessions in flight are kept."""
    idle_seconds = limits.IDLE_SECONDS if idle_seconds is None else idle_seconds
    client_bytes = limits.CLIENT_BYTES if client_bytes is None else client_bytes
    total_bytes = limits.SESSIONS_BYTES if total_bytes is None else total_bytes
    kept = sorted(sessions, key=lambda s: -s.idle)  # longest idle first
    released = [s for s in kept if s.idle > idle_seconds and not s.busy]
    kept = [s for s in kept if s not in released]
    per_client: dict[str, int] = defaultdict(int)
    for s in kept:
        per_client[s.client] += s.bytes
    for s in list(kept):
        if per_client[s.client] > client_bytes and not s.busy:
            per_client[s.client] -= s.bytes
            released.append(s)
            kept.remove(s)
    total = sum(s.bytes for s in kept)
    for s in list(kept):
        if total <= total_bytes:
            break
        if not s.busy:
            total -= s.bytes
            released.append(s)
    return [s.id for s in released]
