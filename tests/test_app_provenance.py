"""Provenance on the page, server side: the prompt view carries each piece's template place and
message (what the page's script reads), the response template's key sites by colour, and the title
of held-back output (what it may still become). The browser side is tests/browser/test_provenance.py."""

from __future__ import annotations

import html
import json
import re

import pytest

from app.highlight import field_classes, output_html
from app.live_views import StreamView, view_html
from app.provenance_view import held_back
from app.workbench import build_prompt_view, edit_chat_template, explain_view
from engine import limits
from engine.response_spec import load_response_spec
from engine.trace import Trace
from tests.test_app_support import CHATML, session

SPAN = re.compile(r'<span class="([^"]*)" data-p="(\d+)">(.*?)</span>', re.DOTALL)


def table(fragment: str, name: str):
    found = re.search(rf'data-{name}="([^"]*)"', fragment)
    return json.loads(html.unescape(found.group(1))) if found else None


def text_of(fragment: str) -> str:
    """The prompt's text in the view (tags and the inline markers left out)."""
    fragment = re.sub(r'<span class="mark[^"]*"[^>]*>.*?</span>', "", fragment)
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


def texts_by_piece(fragment: str) -> dict[int, str]:
    out: dict[int, str] = {}
    for _, index, inner in SPAN.findall(re.sub(r'<span class="mark[^"]*"[^>]*>.*?</span>', "", fragment)):
        out[int(index)] = out.get(int(index), "") + html.unescape(re.sub(r"<[^>]+>", "", inner))
    return out


def test_the_prompt_view_carries_each_pieces_line_and_message() -> None:
    sess = session()
    view = build_prompt_view(sess, show_whitespace=False)
    rows = table(view.html, "pieces")
    texts = texts_by_piece(view.html)
    assert "".join(texts[i] for i in sorted(texts)) == view.prompt  # the pieces tile the prompt, in order
    assert len(rows) == len(texts)
    by_text = {texts[i]: rows[i] for i in texts}
    # [line, column, end line, end column, message, kind, call chain]: CHATML's line 2 writes the turn.
    assert by_text["user"] == [2, 22, 2, 37, 0, 2, -1]  # message['role']
    assert by_text["<|im_start|>assistant\n"][4:6] == [-1, 1]
    classes = dict((index, cls) for cls, index, _ in SPAN.findall(view.html))
    assert "pm0" in classes[str(rows.index(by_text["user"]))] and "pm-" in classes[str(len(rows) - 1)]


def test_a_keystroke_is_answered_first_and_explained_once_the_author_pauses() -> None:
    sess = session()
    edited = CHATML.replace("'<|im_start|>' + message['role']", "'<|im_start|>' ~ message['role']")
    answered = edit_chat_template(sess, edited, False)
    assert "im_start" in answered["prompt"] and table(answered["prompt"], "pieces") is None
    assert 'data-explain="later-' in answered["prompt"]  # the page asks for it when the author pauses
    explained = explain_view(sess, False)  # what the page asks for then (the hidden Explain button)
    assert set(explained) == {"prompt", "prompt_info"} and "data-explain" not in explained["prompt"]
    assert text_of(explained["prompt"]) == text_of(answered["prompt"])  # the same prompt, now explained
    assert [row[:2] for row in table(explained["prompt"], "pieces")][:2] == [[2, 5], [2, 22]]


def test_no_explanation_while_a_newer_edit_renders_or_another_explains() -> None:
    sess = session()
    assert sess.claim("refresh")  # an edit is being rendered: its own explanation follows it
    assert explain_view(sess, False) == {}
    sess.done("refresh")
    assert sess.claim("explain")
    assert explain_view(sess, False) == {}  # one at a time (the running one explains the latest edit)
    sess.done("explain")
    assert "prompt" in explain_view(sess, False)


def test_a_prompt_without_an_explanation_says_why() -> None:
    sess = session()
    sess.workspace.cases[0].messages[0]["content"] = "odd \ufdd0 text"
    view = build_prompt_view(sess, show_whitespace=False)
    assert view.prompt is not None and table(view.html, "pieces") is None
    assert "U+FDD0" in view.info


def test_too_many_pieces_for_the_page(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_PAGE_PIECES", 3)  # (checked where the render runs: here, in process)
    view = build_prompt_view(session(), show_whitespace=False, in_process=True)
    assert table(view.html, "pieces") is None and "more than 3 pieces, the most the page shows" in view.info


def test_response_template_keys_by_colour_and_segment_kind() -> None:
    sess = session()
    view = build_prompt_view(sess, show_whitespace=False)
    fields = table(view.html, "fields")
    text = sess.workspace.response_template
    lines = text.splitlines()
    classes = field_classes(load_response_spec(text).template.fields)
    reasoning = fields[classes["reasoning_content"]]
    assert lines[reasoning["open"][0] - 1].strip().startswith('"open"')
    assert lines[reasoning["close"][0] - 1].strip().startswith('"close"')


def test_held_back_output_says_what_it_may_become() -> None:
    sess = session()
    loaded = load_response_spec(sess.workspace.response_template)
    trace = Trace(loaded.template, prompt="<|im_start|>assistant\n")
    trace.feed("Hello <thi")
    classes = field_classes(trace.template.fields)
    title = held_back(trace.template, sess.regex.active)
    assert title("<thi", "content") == "held back: may still become open of reasoning_content: '<think>'"
    whole = output_html(trace.output, trace.segments(), classes, pending_title=title)
    assert "held back: may still become open of reasoning_content" in whole
    streamed = view_html(StreamView("r", classes, "", title).update(trace.output, trace.segments()))
    assert 'title="held back: may still become open of reasoning_content: &#x27;&lt;think&gt;&#x27;"' in streamed
