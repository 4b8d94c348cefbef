"""The prompt panel: special tokens, visible whitespace, the generation prompt and start_anchor
markers, prefilled regions, escaping, token counts."""

from __future__ import annotations

import html
import re

from app.highlight import prompt_html
from app.workbench import build_prompt_view
from engine.trace import Segment
from tests.test_app_support import refresh_with, session


def text_of(fragment: str) -> str:
    """The visible text of an HTML fragment, without the inline markers."""
    fragment = re.sub(r'<span class="mark[^"]*"[^>]*>.*?</span>', "", fragment)
    return html.unescape(re.sub(r"<[^>]+>", "", fragment))


def test_prompt_marks_tokens_generation_prompt_and_anchor():
    sess = session()
    view = build_prompt_view(sess, show_whitespace=False)
    prompt = "<|im_start|>user\nHi!<|im_end|>\n<|im_start|>assistant\n"
    assert view.prompt == prompt
    assert text_of(view.html) == prompt  # highlighting never changes the text
    # (each piece also carries where it came from: `pm<message>` and `data-p`, see test_app_provenance.py)
    assert re.search(r'<span class="tok pm0" data-p="\d+">&lt;\|im_start\|&gt;</span>', view.html)
    # The generation prompt is tinted and starts where the prompt without it ends.
    assert re.search(r'generation prompt ▸</span><span class="tok gen pm-" data-p="\d+">&lt;\|im_start\|&gt;</span>', view.html)
    # Parsing starts after the start anchor: the marker sits at the end of the prompt.
    assert view.html.removesuffix("</div>").endswith("▾ parsing starts</span>")
    assert "generation prompt: 22 characters" in view.info


def test_show_whitespace_draws_markers_without_changing_the_text():
    sess = session()
    plain = build_prompt_view(sess, show_whitespace=False).html
    shown = build_prompt_view(sess, show_whitespace=True).html
    assert "↵" in shown and "show-ws" in shown and "↵" not in text_of(plain).replace("↵", "")
    markers = re.sub(r'<span class="ws">[·→↵]+</span>', "", shown)
    assert text_of(markers) == text_of(plain)


def test_prefilled_think_is_shown_as_the_parser_sees_it():
    sess = session(case_name="thinking")
    view = build_prompt_view(sess, show_whitespace=False)
    assert view.prompt.endswith("<|im_start|>assistant\n<think>\n")
    assert "from-prompt" in view.html and "seg delim open f1" in view.html
    assert "the prompt opens reasoning_content" in view.info


def test_missing_start_anchor_is_a_response_template_warning():
    sess = session()
    sess.workspace.response_template = sess.workspace.response_template.replace("<|im_start|>assistant\\n", "<|assistant|>")
    view = build_prompt_view(sess, show_whitespace=False)
    assert any("start anchor does not occur" in d.message for d in view.response_diagnostics)
    assert "parsing starts" not in view.html


def test_message_text_is_escaped():
    sess = session()
    prompt = refresh_with(sess, messages='[{"role": "user", "content": "<script>alert(1)</script> & <b>"}]')["prompt"]
    assert "<script>" not in prompt and "&lt;script&gt;alert(1)&lt;/script&gt; &amp; &lt;b&gt;" in prompt


def test_overlapping_layers_keep_every_class():
    out = prompt_html("ab<|x|>cd", special_tokens=[], generation_start=2, anchor_end=7,
                      prefix_segments=[Segment(7, 9, "body", "content")], classes={"content": "f0"})  # fmt: skip
    assert '<span class="tok gen">&lt;|x|&gt;</span>' in out
    assert '<span class="gen seg body f0 from-prompt">cd</span>' in out


def test_token_count_uses_the_sessions_own_tokenizer():
    from tests.token_support import tiny

    counted = session()
    counted.tokenizer = tiny(("<|im_start|>", "<|im_end|>"))  # loaded by this visitor
    view = build_prompt_view(counted, show_whitespace=False)
    count = len(counted.tokenizer.tokenizer(view.prompt, add_special_tokens=False)["input_ids"])
    assert f"{count} tokens · 3 special" in view.info
    # Another visitor, who loaded no tokenizer, is not counted with the first visitor's.
    assert "tokens: load a tokenizer" in build_prompt_view(session(), show_whitespace=False).info


def test_every_field_gets_its_own_colour_and_known_fields_keep_theirs():
    from app.highlight import field_classes

    five = field_classes(["a", "b", "c", "d", "e"])
    assert len(set(five.values())) == 5 and not {"f0", "f1", "f2"} & set(five.values())
    mixed = field_classes(["tool_calls", "x", "content", "y"])
    assert mixed["content"] == "f0" and mixed["tool_calls"] == "f2" and mixed["x"] != mixed["y"]
    many = field_classes([f"field{i}" for i in range(9)])
    assert len(set(many.values())) == 8  # every colour is used before one repeats


def test_an_edit_asks_the_render_worker_once(monkeypatch):
    """Each edit is a new template: the worker compiles it for the prompt and for where the
    generation prompt starts in one call, not two (the slowest part of a keystroke)."""
    from engine.sandbox import shared_pool

    pool = shared_pool()
    calls = []
    original = pool.call

    def counted(function, *args, **kwargs):
        calls.append(function.__name__)
        return original(function, *args, **kwargs)

    monkeypatch.setattr(pool, "call", counted)
    sess = session()
    sess.workspace.chat_template = "{#- an edit -#}" + sess.workspace.chat_template
    view = build_prompt_view(sess, show_whitespace=False)
    assert calls == ["render"]
    assert "generation prompt: 22 characters" in view.info
