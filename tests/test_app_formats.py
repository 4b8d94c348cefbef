""""Start from a format" at the callback level: the search filters the picker, a pick is shown as a
diff with what the format is, applying puts it in the editor and Undo gives the previous text back
byte for byte, a format's examples become recordings that parse to their messages under the
author's chat template, and anything an API caller sends becomes a message, not a crash."""

from __future__ import annotations

from transformers.utils.chat_parsing import parse_response

from app.draft_panel import undo_draft
from app.format_panel import add_examples, apply_format, discard_format, format_choices, pick_format, search_formats
from app.page import pick_preset
from app.state import Session
from engine.formats import load_format, load_formats
from tests.test_app_support import edited, plain


def smollm3() -> Session:
    sess = Session.empty()
    pick_preset(sess, "smollm3")
    return sess


def test_the_search_finds_formats_by_model_delimiter_and_family() -> None:
    assert [name for _, name in format_choices("")] == [f.name for f in load_formats()]
    assert [name for _, name in format_choices("Qwen2.5")] == ["hermes"]  # a model id in the description and models
    assert {"hermes", "qwen3", "smollm3"} <= {name for _, name in format_choices("<tool_call>")}
    assert [name for _, name in format_choices("MISTRAL call_id")] == ["mistral-small-3.2"]  # every word, any case
    empty = search_formats("no such format anywhere")
    assert empty["format_picker"]["choices"] == [] and "No format matches" in empty["format_status"]
    found = search_formats("Qwen2.5")
    assert found["format_picker"]["choices"] == format_choices("Qwen2.5")
    assert f"1 of {len(load_formats())} formats match" in found["format_status"]
    assert search_formats("")["format_status"] == "" and search_formats(42)["format_status"] == ""  # type: ignore[arg-type]
    assert len(format_choices(None)) == len(load_formats()) and format_choices("x" * 10_000) == []  # type: ignore[arg-type]


def test_a_pick_is_shown_as_a_diff_with_what_the_format_is_and_changes_nothing() -> None:
    sess = smollm3()
    before = sess.workspace.response_template
    shown = pick_format(**edited(sess), format_picker="hermes")
    assert shown["format_box"]["visible"] is True and shown["format_apply"]["interactive"] is True
    # SmolLM3's reasoning field is not in the Hermes format: the diff removes it.
    assert '<div class="del">-    &quot;reasoning_content&quot;: {</div>' in shown["format_diff"]
    info = shown["format_info"]
    assert "Hermes / Qwen2.5: &lt;tool_call&gt;{json}&lt;/tool_call&gt;" in info and "<code>Qwen/Qwen2.5-7B-Instruct</code>" in info
    assert "5 examples" in info and "portable regexes" in info
    assert sess.workspace.response_template == before and "response_template" not in shown


def test_a_format_with_limits_says_them_and_one_equal_to_the_editor_cannot_be_applied() -> None:
    sess = smollm3()
    info = pick_format(**edited(sess), format_picker="pythonic")["format_info"]
    assert "not portable" in info and "What the response-template spec cannot say here" in info
    assert "An opening delimiter that is also the first character of the value" in info
    # What its models write, as the robustness check holds it to it.
    claims = pick_format(**edited(sess), format_picker="mistral-args")["format_info"]
    assert "What its models write (the robustness check holds it to this)" in claims
    assert "<li>text after the calls: written, and the spec cannot read it (json-without-delimiters)</li>" in claims
    # … and where that comes from: the format's sources, escaped.
    assert "Where this comes from:" in claims and "mistral-common (tools.py): content is what comes before the first [TOOL_CALLS]" in claims
    hermes = pick_format(**edited(sess), format_picker="hermes")["format_info"]
    assert "inside &lt;function_call&gt;…&lt;/function_call&gt;" in hermes and "<function_call>" not in hermes
    assert "<li>text before the calls: written (demanded)</li>" in claims
    assert "<li>string arguments holding the format&#x27;s own delimiters: not written (only noted)</li>" in claims \
        or "<li>string arguments holding the format&#39;s own delimiters: not written (only noted)</li>" in claims
    same = pick_format(**edited(sess), format_picker="smollm3")  # the preset's own format
    assert same["format_apply"]["interactive"] is False and "No changes: the smollm3 format is your response template" in same["format_diff"]


def test_apply_then_undo_gives_back_the_previous_text_byte_for_byte() -> None:
    sess = smollm3()
    previous = sess.workspace.response_template + "\n\n"  # what the editor held, trailing whitespace included
    applied = apply_format(sess, previous, "kimi-k2")
    assert applied["response_template"] == load_format("kimi-k2").response_template_text == sess.workspace.response_template
    assert applied["draft_undo"]["visible"] is True and applied["format_box"]["visible"] is False
    assert "kimi-k2 format is in the editor" in applied["draft_status"]
    undone = undo_draft(sess)
    assert undone["response_template"] == previous == sess.workspace.response_template


def test_unknown_or_malformed_picks_are_messages_not_crashes() -> None:
    sess = smollm3()
    before = sess.workspace.response_template
    for value in ("<script>alert(1)</script>", "", None, 42, ["hermes"]):
        shown = pick_format(**edited(sess), format_picker=value)
        assert plain(shown["format_box"]) is None and "format" in shown["format_status"]
        assert "<script>" not in shown["format_status"]
        assert "format_status" in apply_format(sess, before, value) and sess.workspace.response_template == before
        assert "format_status" in add_examples(**edited(sess), format_picker=value)
    assert discard_format()["format_box"]["visible"] is False


def test_examples_become_recordings_that_parse_to_their_messages_under_the_chat_template() -> None:
    """Hermes under SmolLM3's chat template (both ChatML): apply the format, add its examples, and
    each recording, parsed after the new case's prompt, gives its expected message."""
    sess = smollm3()
    apply_format(sess, sess.workspace.response_template, "hermes")
    shown = add_examples(**edited(sess), format_picker="hermes")
    workspace = sess.workspace
    fmt = load_format("hermes")
    assert shown["case_picker"]["value"] == workspace.case_name == "hermes examples"
    assert shown["runner"] == "recorded" and plain(shown["recording"]) == "hermes: one call after text"
    assert "Added the case <b>hermes examples</b> and 5 recordings" in shown["format_status"]
    added = [r for r in workspace.recordings if r.case == "hermes examples"]
    assert [r.name for r in added] == [f"hermes: {e.name}" for e in fmt.examples]
    prompt = workspace.render().prompt
    assert prompt is not None and prompt.endswith("<|im_start|>assistant\n")
    for recording in added:
        assert parse_response(recording.output, fmt.spec(), prefix=prompt) == recording.expected, recording.name
    # Adding them again keeps every name unique.
    add_examples(**edited(sess), format_picker="hermes")
    assert len({r.name for r in workspace.recordings}) == len(workspace.recordings)
    assert workspace.case_names().count("hermes examples 2") == 1


def test_a_response_template_too_deep_or_long_to_read_still_gets_a_diff() -> None:
    """The editor's text is the visitor's: nested beyond what Python parses, or over the size
    limit, it is compared as text (no crash), and the format can be applied over it."""
    sess = smollm3()
    for text in ("[" * 40_000 + "]" * 40_000, 5):
        shown = pick_format(**edited(sess, response=text), format_picker="hermes")  # type: ignore[arg-type]
        assert shown["format_box"]["visible"] is True and shown["format_apply"]["interactive"] is True
        assert '<div class="add">+{</div>' in shown["format_diff"]
    shown = pick_format(**edited(sess, response="x\n" * 200_000), format_picker="hermes")
    assert "too long to compare: applying the hermes format replaces it" in shown["format_diff"]
    assert shown["format_apply"]["interactive"] is True
