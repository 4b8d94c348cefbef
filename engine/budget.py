"""What one visitor may hold, and which sessions let go first when memory runs short.

Every input has a size limit of its own (`engine.limits`); a workspace also has one as a whole,
checked when it arrives (an edit, a new case, a preset, a share link, files, a Hub load), so a
session cannot grow past it by adding many inputs that are each within their limit. Sessions are
released when idle past `limits.IDLE_SECONDS`, and before that when one client's sessions together,
or all sessions, hold more than their budget: the longest-idle first, never one with a request in
flight. A released session's work is not lost: the browser keeps a saved copy and a share link
holds it (the page says to reload)."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from . import limits
from .diagnostics import Diagnostic, Source

# Bytes a JSON-like item costs beyond its characters (a dict, a list slot, a small string object).
ITEM_BYTES = 60
# Lists whose items a person counts (what a refusal names when they fill a workspace), by their key.
COUNTED = {"messages": "messages", "tool_calls": "tool calls", "cases": "cases", "recordings": "recordings"}


@dataclass
class Size:
    """What some JSON-like data holds: its characters, its items (each costs `ITEM_BYTES` more in
    memory), and how many of the things a person counts (messages, tool calls…) it has. `complete`
    is False when counting stopped early (then each number is at least what is said)."""

    chars: int = 0
    items: int = 0
    counts: Counter = field(default_factory=Counter)  # "tool calls" -> how many
    items_in: Counter = field(default_factory=Counter)  # "tool calls" -> items inside them
    complete: bool = True

    @property
    def bytes(self) -> int:
        """About how many bytes it takes in memory (what the budgets count)."""
        return self.chars + ITEM_BYTES * self.items

    def described(self, limit: int | None = None) -> str:
        """What fills it, in a person's terms: "6,000 tool calls", "3,200,000 characters", or both
        when both count (each item costs memory of its own: a million empty messages are 2 MB of
        text). Its characters alone are named only when they alone are past `limit`."""
        least = "" if self.complete else "at least "
        texts = f"{self.chars:,} characters"
        if limit is not None and self.chars > limit:
            return least + texts
        kinds = [kind for kind in ("tool calls", "messages") if 2 * self.items_in[kind] >= self.items]
        values = f"{self.counts[kinds[0]]:,} {kinds[0]}" if kinds else f"{self.items:,} separate values (messages, fields, list items)"
        return least + (values if self.chars * 10 <= self.bytes else f"{texts} in {values}")


def measure(value: Any, stop_past: int | None = None) -> Size:
    """What `value` (JSON-like data) holds. Iterative (a share link's data may be nested deep), and
    it stops counting past `stop_past` bytes, so a million small items cost no more to refuse than
    the budget to count (a list's length is counted when it is met, without walking it)."""
    size = Size()
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        item, inside = stack.pop()
        size.items += 1
        size.items_in[inside] += 1
        if stop_past is not None and size.bytes > stop_past:
            size.complete = False
            return size
        if isinstance(item, str):
            size.chars += len(item)
        elif isinstance(item, dict):
            for key, child in item.items():
                stack.append((key, inside))
                kind = COUNTED.get(key) if isinstance(child, list) else None
                if kind is not None:
                    size.counts[kind] += len(child)
                    stack.extend((element, kind if kind in ("messages", "tool calls") else inside) for element in child)
                    size.items += 1  # the list itself
                else:
                    stack.append((child, inside))
        elif isinstance(item, (list, tuple)):
            stack.extend((element, inside) for element in item)
    return size


def data_size(value: Any, stop_past: int | None = None) -> int:
    """About how many bytes `value` (JSON-like data) takes in memory (see `measure`)."""
    return measure(value, stop_past).bytes


def measure_workspace(workspace: Any) -> Size:
    """What a workspace holds: everything it would save (templates, cases, recordings, a pasted
    output, the model's files, run settings, names, notes), as its share link carries it."""
    return measure(workspace.to_dict())


def workspace_size(workspace: Any) -> int:
    """About how many bytes a workspace holds (see `measure_workspace`)."""
    return measure_workspace(workspace).bytes


def check_workspace(workspace: Any, source: Source = "preset") -> list[Diagnostic]:
    """Whether a workspace can be held: [] when it fits, else why, as one diagnostic (a template over
    its own limit, too many cases or recordings, or more than `limits.MAX_WORKSPACE_CHARS` in all).
    The one function every change that adds to a workspace (cases, recordings, text) goes through:
    the change is made, checked here, and undone when it does not fit."""
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
    size = measure_workspace(workspace)
    return [too_large(source, size)] if size.bytes > limits.MAX_WORKSPACE_CHARS else []


def too_large(source: Source = "preset", size: Size | None = None) -> Diagnostic:
    """More than one session may hold (`limits.MAX_WORKSPACE_CHARS`), saying what fills it."""
    what = f"it holds {size.described(limits.MAX_WORKSPACE_CHARS)}, more" if size is not None else "it holds more"
    return Diagnostic("error", f"Too large: {what} than one session may hold.", source,
                      hint=f"A session holds about {limits.MAX_WORKSPACE_CHARS:,} characters, each message, tool call "
                           f"or other value counting as {ITEM_BYTES} more. Split the work over several share links, "
                           "or remove cases you no longer need.")


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
