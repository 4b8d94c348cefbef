"""`diff --format html`: a standalone page of a behaviour diff, to open in a browser or attach to a
review. Each changed conversation shows both prompts with the changed characters marked, and the
template lines that wrote them, highlighted as Jinja by pygments.

pygments runs here only: the command line, on the author's own files, on the author's machine. The
server never imports this module, nor runs pygments (docs/architecture.md, "Dependencies"): its lexers
are regex state machines with ReDoS advisories, and on a public server they would run on strangers'
text."""

from __future__ import annotations

import html
import json

from ..behaviour import BehaviourDiff, ConversationDiff, Site, Version
from ..behaviour.report import site_text
from ..behaviour.text_diff import marked
from ..text import visible

# Lines of template shown around each line that wrote a change.
AROUND = 1

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #1e293b; }
h1 { font-size: 1.3em; } .summary { font-weight: 600; margin-bottom: 1em; }
details { border: 1px solid #cbd5e1; border-radius: 6px; margin: .6em 0; padding: .3em .8em; }
summary { cursor: pointer; } .same { color: #475569; }
.sides { display: grid; grid-template-columns: 1fr 1fr; gap: .8em; }
.side h3 { font-size: .85em; margin: .4em 0; color: #475569; }
pre.prompt { white-space: pre-wrap; word-break: break-all; background: #f8fafc; padding: .5em; border-radius: 4px;
             font: 12.5px/1.4 ui-monospace, monospace; max-height: 30em; overflow: auto; }
del { background: #fecaca; text-decoration: line-through; } ins { background: #bbf7d0; text-decoration: none; }
.gap { text-decoration: none; font-weight: bold; }
.site { margin: .4em 0; } .site .where { font-size: .85em; color: #475569; }
.hl { border-radius: 4px; font-size: 12.5px; } .hl .hll { background: #fef08a; }
.error { color: #b91c1c; } table { border-collapse: collapse; } td, th { border: 1px solid #cbd5e1; padding: .2em .5em; }
"""


def html_report(diff: BehaviourDiff, base: Version, new: Version) -> str:
    """The whole report as one HTML document (its own styles; nothing fetched)."""
    from pygments.formatters import HtmlFormatter

    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>What changes for the model</title>"
             f"<style>{STYLE}{HtmlFormatter(cssclass='hl').get_style_defs('.hl')}</style></head><body>",
             f"<h1>What changes for the model: {_e(diff.base)} → {_e(diff.new)}</h1>",
             f"<div class='summary'>{_e(diff.summary())}</div>"]
    for conversation in diff.changed:
        parts.append(_conversation(conversation, base, new))
    same = [c.name for c in diff.conversations if not c.changed]
    if same:
        parts.append(f"<p class='same'>Unchanged: {_e(', '.join(same))}.</p>")
    if diff.messages:
        parts.append(f"<h2>Model outputs parsed by both response templates ({len(diff.changed_messages)} of "
                     f"{len(diff.messages)} change)</h2><table><tr><th>output</th><th>fields</th><th>before</th><th>after</th></tr>")
        for m in diff.changed_messages:
            parts.append(f"<tr><td>{_e(m.source)} {_e(m.name)}</td><td>{_e(', '.join(m.fields))}</td>"
                         f"<td><code>{_e(_message(m.before, m.before_error))}</code></td>"
                         f"<td><code>{_e(_message(m.after, m.after_error))}</code></td></tr>")
        parts.append("</table>")
    parts += [f"<p class='error'>{_e(d.message)}</p>" for d in diff.diagnostics]
    return "".join(parts) + "</body></html>\n"


def _conversation(c: ConversationDiff, base: Version, new: Version) -> str:
    out = [f"<details open><summary><b>{_e(c.name)}</b> — {_e(c.description)}</summary>"]
    for side, error in (("before", c.before_error), ("after", c.after_error)):
        if error:
            out.append(f"<p class='error'>{side}: {_e(error)}</p>")
    for change in c.changes:
        out.append("<div class='site'>")
        for label, sites, version in (("before", change.before_sites, base), ("after", change.after_sites, new)):
            out.append(f"<div class='where'>{label}: {_e(site_text(sites))}</div>")
            out += [_snippet(version, site) for site in sites[:2]]
        out.append("</div>")
    if c.before is not None and c.after is not None:
        before = [(ch.before_start, ch.before_end) for ch in c.changes]
        after = [(ch.after_start, ch.after_end) for ch in c.changes]
        out.append("<div class='sides'>"
                   f"<div class='side'><h3>Before{_tokens(c.before_tokens)}</h3><pre class='prompt'>{_marked(c.before, before, 'del')}</pre></div>"
                   f"<div class='side'><h3>After{_tokens(c.after_tokens)}</h3><pre class='prompt'>{_marked(c.after, after, 'ins')}</pre></div>"
                   "</div>")  # fmt: skip
    out += [f"<p class='same'>{_e(note)}</p>" for note in c.notes]
    return "".join(out) + "</details>"


def _snippet(version: Version, site: Site) -> str:
    """The template lines around `site`, highlighted as Jinja, its own line marked."""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import DjangoLexer

    text = version.template_text(site.template) or ""
    lines = text.splitlines()
    first = max(1, site.line - AROUND)
    shown = "\n".join(lines[first - 1 : site.line + AROUND])
    formatter = HtmlFormatter(cssclass="hl", linenos="inline", linenostart=first, hl_lines=[site.line - first + 1])
    return highlight(shown, DjangoLexer(), formatter)


def _marked(text: str, spans: list[tuple[int, int]], tag: str) -> str:
    out = []
    for piece, changed in marked(text, spans):
        if changed and not piece:  # where the other side has text this one does not
            out.append(f"<{tag} class='gap' title='the other version has text here'>▏</{tag}>")
        elif changed:  # whitespace drawn where it changed, so a lost newline shows
            shown = "".join(visible(c) + ("\n" if c == "\n" else "") for c in piece)
            out.append(f"<{tag}>{_e(shown)}</{tag}>")
        else:
            out.append(_e(piece))
    return "".join(out)


def _tokens(count: int | None) -> str:
    return "" if count is None else f" · {count:,} tokens"


def _message(message: dict | str | None, error: str | None) -> str:
    if message is None:
        return f"({error})"
    return message if isinstance(message, str) else json.dumps(message, ensure_ascii=False)


def _e(text: str) -> str:
    return html.escape(text, quote=True)
