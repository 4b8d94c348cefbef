"""A behaviour diff as a person reads it: on a terminal (`text_report`), and as markdown for a pull
request (`markdown_report`: a comment CI posts, the description of a pull request the playground
opens), where each change is one line with its whitespace visible (`·` space, `⏎` newline, `→` tab)
and the changed characters marked as `git diff --word-diff` marks them: `[-removed-]{+added+}`."""

from __future__ import annotations

import html
import json
import re
from dataclasses import replace

from ..text import visible
from .result import BehaviourDiff, Change, ConversationDiff, MessageDiff, Site

# A changed text longer than this is shown as its start and end.
SHOWN = 120


def change_line(change: Change, width: int = SHOWN) -> str:
    """`…lead[-removed-]{+added+}trail…` on one line, whitespace visible."""
    removed = f"[-{_middle(visible(change.removed), width)}-]" if change.removed else ""
    added = f"{{+{_middle(visible(change.added), width)}+}}" if change.added else ""
    lead = visible(change.lead[-30:])
    trail = visible(change.trail[:30])
    return ("…" if change.before_start > len(change.lead[-30:]) else "") + lead + removed + added + trail + ("…" if trail else "")


def _middle(text: str, width: int) -> str:
    if len(text) <= width:
        return text
    half = width // 2
    return f"{text[:half]}…({len(text) - 2 * half} more)…{text[-half:]}"


def site_text(sites: list[Site]) -> str:
    """`line 12` / `lines 12, 14` (and the named template), or `no template line` when unexplained."""
    if not sites:
        return "no template line"
    names = {s.template for s in sites}
    lines = ", ".join(str(s.line) for s in sites)
    where = f"line{'s' if len(sites) > 1 else ''} {lines}"
    named = next(iter(names)) if len(names) == 1 else None
    return f"{where} of template {named!r}" if named else where


def _counts(conversation: ConversationDiff) -> str:
    parts = [f"{len(conversation.changes) + conversation.more_changes} change"
             + ("s" if len(conversation.changes) + conversation.more_changes != 1 else "")] if conversation.changes else []
    if conversation.before_error and not conversation.after_error:
        parts.append("renders now (it failed before)")
    elif conversation.after_error and not conversation.before_error:
        parts.append("fails now")
    elif conversation.before_error and conversation.after_error:
        parts.append("fails differently")
    if conversation.token_change is not None:
        parts.append(f"{conversation.before_tokens} → {conversation.after_tokens} tokens")
    return ", ".join(parts)


def text_report(diff: BehaviourDiff) -> str:
    """The whole diff for a terminal: every conversation, its changes and the template lines."""
    lines = [f"{diff.base} → {diff.new}: {diff.summary()}", ""]
    for c in diff.conversations:
        if not c.changed:
            lines.append(f"= {c.name}")
            continue
        lines.append(f"~ {c.name}: {_counts(c)}")
        for side, error in (("before", c.before_error), ("after", c.after_error)):
            if error:
                lines.append(f"    {side}: {error}")
        for change in c.changes:
            lines.append(f"    before {site_text(change.before_sites)}; after {site_text(change.after_sites)}")
            shown = [("before", s) for s in change.before_sites[:1]] + [("after", s) for s in change.after_sites[:1]]
            if len({s.text for _, s in shown}) == 1:
                shown = shown[-1:]
            for side, site in shown:
                lines.append(f"      {side if len(shown) > 1 else '':>6} {site.line:>5} | {site.text}")
            lines.append(f"      {change_line(change)}")
        if c.more_changes:
            lines.append(f"    … and {c.more_changes} more changes")
        lines += [f"    note: {note}" for note in c.notes]
    if diff.messages:
        changed = diff.changed_messages
        lines += ["", f"Outputs parsed by both response templates: {len(changed)} of {len(diff.messages)} parse to "
                      "another message" + (":" if changed else ".")]
        for m in changed:
            lines.append(f"~ {m.source} {m.name!r}: {_message_counts(m)}")
            lines.append(f"    before: {_message_text(m.before, m.before_error)}")
            lines.append(f"    after:  {_message_text(m.after, m.after_error)}")
    return "\n".join(lines) + "\n"


def _message_counts(m: MessageDiff) -> str:
    if m.fields:
        return "`" + "`, `".join(m.fields) + "` differ"
    return m.after_error and "no longer parses" or m.before_error and "parses now" or "parses differently"


def _message_text(message: dict | str | None, error: str | None) -> str:
    if message is None:
        return f"({error})"
    return message if isinstance(message, str) else json.dumps(message, ensure_ascii=False)


def _fence(text: str) -> str:
    """A fence longer than any run of backticks in `text`."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def _code(text: str) -> str:
    """`text` as inline markdown code on one line, whatever backticks it holds."""
    text = " ".join(text.splitlines())
    if not text:
        return ""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * (longest + 1)
    return f"{ticks} {text} {ticks}" if text.startswith("`") or text.endswith("`") else f"{ticks}{text}{ticks}"


def markdown_report(diff: BehaviourDiff, *, heading: str = "### What changes for the model", max_chars: int | None = None,
                    changes_shown: int = 10) -> str:
    """The diff as markdown: a summary, then each changed conversation in a collapsible `<details>`
    (its changes, the template lines that wrote them), the unchanged ones named, and the outputs that
    parse to another message. `max_chars` keeps it within a pull request description's room (the
    conversations past it are counted, not shown)."""
    out = [heading, "", f"{html.escape(diff.base)} → {html.escape(diff.new)}: **{diff.summary()}**", ""]
    left_out = 0
    for group in _groups(diff.changed):
        block = _conversation_markdown(group, changes_shown)
        if max_chars is not None and sum(map(len, out)) + len(block) > max_chars:
            left_out += len(group)
            continue
        out.append(block)
    if left_out:
        out += [f"… and {left_out} more conversation{'s' if left_out != 1 else ''} change (`python -m engine diff` "
                "shows every change).", ""]
    same = [c.name for c in diff.conversations if not c.changed]
    if same:
        out += [f"Unchanged: {html.escape(', '.join(same))}.", ""]
    if diff.changed_messages:
        out += [f"**{len(diff.changed_messages)} of {len(diff.messages)} model outputs parse to another message.**", ""]
        for m in diff.changed_messages:
            block = _message_markdown(m)
            if max_chars is not None and sum(map(len, out)) + len(block) > max_chars:
                break
            out.append(block)
    for d in diff.diagnostics:
        out += [f"> {html.escape(d.message)}", ""]
    return "\n".join(out).rstrip() + "\n"


def _groups(conversations: list[ConversationDiff]) -> list[list[ConversationDiff]]:
    """Conversations that change the same way (the same texts, written by the same lines), together:
    a one-character change to the generation prompt is one entry naming every conversation it
    changes, not eight copies of it."""
    groups: dict[tuple, list[ConversationDiff]] = {}
    for c in conversations:
        key = (c.before_error, c.after_error, c.more_changes, tuple(
            (ch.removed, ch.added, tuple(s.line for s in ch.before_sites), tuple(s.line for s in ch.after_sites))
            for ch in c.changes))  # fmt: skip
        groups.setdefault(key, []).append(c)
    return list(groups.values())


def _conversation_markdown(group: list[ConversationDiff], changes_shown: int) -> str:
    c = group[0]
    names = ", ".join(f"<b>{html.escape(g.name)}</b>" for g in group)
    tokens = {g.token_change for g in group}
    counts = _counts(c) if len(group) == 1 or len(tokens) == 1 else _counts(replace(c, before_tokens=None))
    summary = f"{names}: {html.escape(counts)}"
    body = []
    for side, error in (("Before", c.before_error), ("After", c.after_error)):
        if error:
            body.append(f"{side}: {_code(error[:300])}")
    rows = []
    for change in c.changes[:changes_shown]:
        after = change.after_sites[0].text if change.after_sites else ""
        before = change.before_sites[0].text if change.before_sites else ""
        body.append(f"- now {site_text(change.after_sites)}" + (f": {_code(after[:160])}" if after else "")
                    + (f"; before {site_text(change.before_sites)}" + (f": {_code(before[:160])}" if before != after else "")))
        rows.append(change_line(change))
    hidden = len(c.changes) - min(len(c.changes), changes_shown) + c.more_changes
    if rows:
        text = "\n".join(rows)
        fence = _fence(text)
        body += ["", f"{fence}text", text, fence]
    if hidden:
        body.append(f"\n… and {hidden} more change{'s' if hidden != 1 else ''}.")
    return f"<details><summary>{summary}</summary>\n\n" + "\n".join(body) + "\n\n</details>\n"


def _message_markdown(m: MessageDiff) -> str:
    text = f"before: {_message_text(m.before, m.before_error)}\nafter:  {_message_text(m.after, m.after_error)}"
    fence = _fence(text)
    summary = f"<b>{html.escape(m.source)} {html.escape(m.name)}</b>: {html.escape(_message_counts(m))}"
    return f"<details><summary>{summary}</summary>\n\n{fence}text\n{text}\n{fence}\n\n</details>\n"
