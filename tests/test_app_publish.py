"""The Publish tab against a local stand-in for the Hub (tests/fake_hub.py): the diff, the pull
request, the zip, and failures as messages; the token never shows."""

from __future__ import annotations

import base64
import io
import json
import re
import tempfile
import zipfile

import pytest

from app.publish_panel import diff_html, download_zip, open_pull_request, preview
from engine.behaviour import standard_conversations
from tests.fake_hub import FakeHub, no_ambient_credentials  # noqa: F401 - an autouse fixture
from tests.test_app_support import CHATML, RESPONSE, edited, session

TOKEN = "hf_app_publish_secret_token_0123"
REPO = "author/tiny-chat"



@pytest.fixture
def hub(monkeypatch):
    with FakeHub() as server:
        server.add_token(TOKEN)
        server.add_repo(REPO, {
            "tokenizer_config.json": json.dumps({"eos_token": "<|im_end|>", "chat_template": "old {{ x }}"}, indent=2).encode(),
            "config.json": b"{}",
        })  # fmt: skip
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        yield server


def publish_inputs(sess, repo: str = REPO, token: str = "", **more):
    return dict(edited(sess), publish_repo=repo, publish_revision="", publish_token=token, oauth=None, **more)


def test_preview_shows_the_diff_title_and_a_zip(hub):
    sess = session()
    out = preview(**publish_inputs(sess))
    diff, title, messages, archive = out["publish_diff"], out["publish_title"], out["publish_messages"], out["publish_zip"]
    assert "chat_template.jinja" in diff and "tokenizer_config.json" in diff
    assert '<div class="add">+' in diff and "&lt;|im_start|&gt;" in diff  # escaped template text
    assert isinstance(title, str) and title and "Ready" in messages
    with zipfile.ZipFile(zip_in(archive, "author--tiny-chat-templates.zip")) as z:
        assert z.read("chat_template.jinja").decode() == CHATML
        assert json.loads(z.read("tokenizer_config.json"))["response_template"] == json.loads(RESPONSE)


def test_open_pull_request_with_a_pasted_token(hub):
    sess = session()
    out = open_pull_request(**publish_inputs(sess, token=TOKEN, publish_title="Update templates",
                                             publish_description="From the playground"))["publish_messages"]
    assert "Pull request opened" in out and f"/{REPO}/discussions/1" in out
    assert "refs/pr/1" in hub.repos[REPO].refs
    assert hub.files_at(REPO, "refs/pr/1")["chat_template.jinja"].decode() == CHATML
    assert hub.files_at(REPO, "main")["config.json"] == b"{}"  # main untouched
    assert TOKEN not in out
    assert TOKEN not in json.dumps(sess.workspace.to_dict())


def test_publishing_without_a_token_or_to_a_missing_repo_is_a_message(hub):
    sess = session()
    out = open_pull_request(**publish_inputs(sess, publish_title="t", publish_description="d"))["publish_messages"]
    assert 'class="diag error"' in out and "signed in" in out
    out = open_pull_request(**publish_inputs(sess, "author/nope", TOKEN, publish_title="t", publish_description="d"))["publish_messages"]
    assert 'class="diag error"' in out and TOKEN not in out
    out = preview(**publish_inputs(sess, ""))
    assert "Enter the model repo id" in out["publish_messages"] and out["publish_zip"] == ""


def zip_in(link: str, name: str) -> io.BytesIO:
    """The zip a download link carries (a data URL: nothing is written on the server), named `name`."""
    found = re.fullmatch(r'<a class="zip-link" id="publish-zip-link" download="([^"]+)" '
                         r'href="data:application/zip;base64,([A-Za-z0-9+/=]+)">.*</a>', link)
    assert found is not None and found.group(1) == name, link[:200]
    return io.BytesIO(base64.b64decode(found.group(2)))


def test_download_zip_without_a_repo(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # nothing is written for a download (issue 25, item 4)
    sess = session()
    link = download_zip(**edited(sess))["publish_zip"]
    with zipfile.ZipFile(zip_in(link, "templates.zip")) as z:  # not "templates-templates.zip"
        assert sorted(z.namelist()) == ["chat_template.jinja", "tokenizer_config.json"]
    assert list(tmp_path.iterdir()) == []


def test_diff_html_classes():
    out = diff_html("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+<new>\n")
    assert '<div class="del">-old</div>' in out and '<div class="add">+&lt;new&gt;</div>' in out
    assert diff_html("") == '<div class="diff-empty">No changes.</div>'
    assert "No changes" not in diff_html("", computed=False)


def test_a_diff_that_could_not_be_computed_is_not_an_empty_diff(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = preview(**publish_inputs(session(), token=TOKEN))
    assert "No changes" not in out["publish_diff"] and "could not be read" in out["publish_diff"]
    assert 'class="diag error"' in out["publish_messages"] and out["publish_zip"] == ""


def test_preview_shows_what_changes_for_the_model_and_the_description_says_it(hub):
    sess = session()
    out = preview(**publish_inputs(sess))
    view = out["publish_behaviour"]
    # The repo renders "old " for every conversation, the edit renders ChatML: every prompt changes.
    found = re.search(r"The prompt changes in (\d+) of (\d+) conversations", view)
    assert found and found.group(1) == found.group(2) and int(found.group(2)) == len(standard_conversations()) + 2
    assert f"{REPO} → this pull request" in view and "&lt;|im_start|&gt;" in view and "<|im_start|>" not in view
    assert view.count('<details class="behaviour-item"') >= 12 and "<ins>" in view
    description = out["publish_description"]
    assert "## What changes for the model" in description and "<details><summary>" in description


def test_compare_with_the_loaded_version_marks_the_changed_characters(hub):
    from app.behaviour_view import compare_in_playground, compare_in_publish, loaded_version

    sess = session()
    sess.loaded = loaded_version(sess.workspace)  # what the page keeps when it shows a loaded workspace
    same = compare_in_publish(**edited(sess))["publish_behaviour"]
    assert "The prompt changes in 0 of" in same and "Unchanged: plain chat" in same
    # An edit of one character in the generation prompt, and a visitor's markup in a message.
    chat = CHATML.replace("'<|im_start|>assistant\\n'", "'<|im_start|>assistant \\n'")
    assert chat != CHATML
    view = compare_in_playground(**edited(sess, chat=chat))["playground_behaviour"]
    # (This ChatML adds `content` to a string, so content parts render with neither version: no change.)
    changed = [c.name for c in standard_conversations() if c.add_generation_prompt and c.name != "content parts"]
    assert f"The prompt changes in {len(changed) + 2} of" in view  # the two cases of the workspace render it too
    assert '<details class="behaviour-item" data-conversation="plain chat">' in view
    assert 'data-conversation="plain chat, no generation prompt"' not in view
    assert "<ins>·</ins>" in view and "now line 5" in view and "the templates as loaded → your edit" in view
    hostile = edited(sess, chat=chat.replace("message['content']", "'<img src=x onerror=alert(1)>' + message['content']"))
    view = compare_in_playground(**hostile)["playground_behaviour"]
    assert "<img" not in view and "&lt;img src=x onerror=alert(1)&gt;" in view


def test_the_loaded_version_is_what_the_page_last_loaded_whole(hub):
    from app.behaviour_view import compare_in_playground
    from app.page import load_hub, pick_preset

    sess = session()
    load_hub(sess, REPO, "")
    assert sess.loaded is not None and sess.loaded.label == f"{REPO} as loaded" and sess.loaded.chat_template == "old {{ x }}"
    unchanged = compare_in_playground(**edited(sess))["playground_behaviour"]
    assert "The prompt changes in 0 of" in unchanged and f"{REPO} as loaded → your edit" in unchanged
    edited_view = compare_in_playground(**edited(sess, chat="new {{ x }}"))["playground_behaviour"]
    assert re.search(r"The prompt changes in (\d+) of \1 conversations", edited_view)  # "old " became "new " everywhere
    assert "<del>old</del><ins>new</ins>" in edited_view
    pick_preset(sess, "qwen3")
    assert sess.loaded is None  # a preset is its own loaded version
    assert "the Qwen3 preset as loaded → your edit" in compare_in_playground(**edited(sess))["playground_behaviour"]


# --- issue 35: the zip holds the model's own files, every key kept ---------------------------------
EDITED_TEMPLATE = "{% for m in messages %}[{{ m.role }}] {{ m.content }}{{ eos_token }}{% endfor %}"
SPEC = {"version": 1, "defaults": {"role": "assistant"}, "start_anchor": "[assistant] ",
        "fields": {"content": {"close": "</s>", "content": "text"}}}


def saved_model(folder):
    """A real tokenizer saved by transformers, with keys of its own, and what `save_pretrained` writes
    once the edited templates are set on it (the files a zip and a pull request must hold)."""
    from tests.test_hub import tiny_tokenizer
    from transformers import PreTrainedTokenizerFast

    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tiny_tokenizer(), bos_token="<s>", eos_token="</s>",
                                        unk_token="<unk>", model_max_length=4096, padding_side="left",
                                        extra_special_tokens={"image_token": "<img>"})  # fmt: skip
    tokenizer.chat_template = "{% for m in messages %}{{ m.content }}{% endfor %}"
    tokenizer.save_pretrained(folder / "model")
    tokenizer.chat_template, tokenizer.response_template = EDITED_TEMPLATE, SPEC
    tokenizer.save_pretrained(folder / "after")
    expected = {p.name: p.read_bytes() for p in (folder / "after").iterdir() if p.name != "tokenizer.json"}
    return folder / "model", expected


def zip_files_of(link: str, name: str) -> dict[str, bytes]:
    with zipfile.ZipFile(zip_in(link, name)) as z:
        return {n: z.read(n) for n in z.namelist()}


@pytest.mark.parametrize("source", ["folder", "upload", "hub"])
def test_the_zip_holds_exactly_what_save_pretrained_writes_for_the_loaded_model(tmp_path, hub, source):
    """An uploaded tokenizer_config.json lost every key but response_template in the zip."""
    from app import page
    from app.state import Session, encode_workspace
    from tests.test_app_own_model import load

    model, expected = saved_model(tmp_path)
    assert {"model_max_length", "padding_side", "extra_special_tokens", "backend"} <= set(
        json.loads(expected["tokenizer_config.json"]))
    sess = Session.empty()
    if source == "upload":
        load(sess, [str(model / "chat_template.jinja"), str(model / "tokenizer_config.json")])
    else:
        if source == "hub":
            hub.add_repo("author/saved", {p.name: p.read_bytes() for p in model.iterdir()})
        page.load_hub(sess, str(model) if source == "folder" else "author/saved", "")
    assert sess.workspace.special_tokens["image_token"] == "<img>"
    out = download_zip(**edited(sess, EDITED_TEMPLATE, json.dumps(SPEC, indent=2)))
    assert zip_files_of(out["publish_zip"], "templates.zip") == expected
    assert "every other key of tokenizer_config.json is kept" in out["publish_messages"]
    if source == "hub":  # the pull request's files, and the zip the diff offers, are the same
        shown = preview(**publish_inputs(sess, "author/saved"))
        assert zip_files_of(shown["publish_zip"], "author--saved-templates.zip") == expected
    # ... after a reload too: the browser's saved copy carries the model's tokenizer_config.json.
    restored = Session.empty()
    page.restore_page(restored, json.dumps({"hash": "", "saved": encode_workspace(sess.workspace)}))
    again = download_zip(**edited(restored, EDITED_TEMPLATE, json.dumps(SPEC, indent=2)))
    assert zip_files_of(again["publish_zip"], "templates.zip") == expected
