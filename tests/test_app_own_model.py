"""Issue 35: loading your own files is a clean start, and nothing is lost. A files or Hub load starts
a workspace of that model (the preset's recordings go, its cases give way to neutral cases fitted to
the chat template, its response template goes unless kept); what the author wrote stays; a second
load, a failed load and a reload keep the last edit; Undo brings the previous workspace back.

The model is tests/fixtures/own_model: a small tool format written for these tests in the style of
Mistral's (9-character tool-call ids, content dropped before calls), which no preset covers."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from gradio.utils import get_upload_folder

from app import draft_panel as drafts
from app import page
from app.checks_panel import run_all_checks
from app.state import Session, decode_workspace
from app.workbench import build_prompt_view
from engine.presets import load_preset
from tests.test_app_support import edited

MODEL = Path(__file__).parent / "fixtures" / "own_model"
TEMPLATE = (MODEL / "chat_template.jinja").read_text(encoding="utf-8")
CONFIG = json.loads((MODEL / "tokenizer_config.json").read_text(encoding="utf-8"))


def uploaded(*names: str) -> list[str]:
    """The model's files as Gradio hands an upload over: copies in its upload folder (read once, then deleted)."""
    folder = Path(get_upload_folder()) / f"own-model-test-{len(list(Path(get_upload_folder()).glob('own-model-test-*')))}"
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in names or ("chat_template.jinja", "tokenizer_config.json"):
        shutil.copy(MODEL / name, folder / name)
        paths.append(str(folder / name))
    return paths


def load(sess: Session, files: list[str], **options) -> dict:
    """What the page sends with an upload: the files, the editors and the case form, the options."""
    sent = {k: v for k, v in edited(sess).items() if k != "session"}
    return page.load_files(sess, files, **{**sent, **options})


def test_a_second_files_load_reads_only_its_own_files():
    """Gradio's file list kept the first upload's files, whose copies were already read and deleted:
    the second load raised FileNotFoundError and every control showed "Error"."""
    sess = Session.empty()
    first = uploaded()
    out = load(sess, first)
    assert out["files"] is None  # the list is emptied: the next upload holds only its own files
    assert not any(Path(p).exists() for p in first)
    edited_template = TEMPLATE.replace("[INST]", "[INST] ", 1)
    second = load(sess, [*first, *uploaded("chat_template.jinja")], **{"chat_template": edited_template})
    assert "Loaded your files" in second["status"] and second["chat_template"] == TEMPLATE
    assert sess.workspace.chat_template == TEMPLATE and sess.workspace.special_tokens["eos_token"] == "</s>"
    # What the second load replaced (the edit included) is what Undo brings back.
    back = page.undo_load(sess)
    assert back["chat_template"] == edited_template and "back as it was" in back["status"]
    again = page.load_files(sess, first)  # only files already read: said so, nothing changes
    assert "No files uploaded" in again["status"] and sess.workspace.chat_template == edited_template


def test_loading_files_into_a_preset_starts_a_workspace_of_that_model():
    sess = Session.empty()
    preset = load_preset("smollm3")
    out = load(sess, uploaded())
    workspace = sess.workspace
    assert workspace.preset == "" and workspace.recordings == []
    assert [c.name for c in workspace.cases] == ["conversation", "tools offered", "tool call"]
    assert all(c.description.startswith("Built in:") for c in workspace.cases)  # none of the preset's
    # The template needs 9-character ids: the neutral cases carry them, and every one renders.
    ids = [c["id"] for case in workspace.cases for m in case.messages for c in m.get("tool_calls") or []]
    assert ids and all(len(i) == 9 and i.isalnum() for i in ids)
    for case in workspace.cases:
        workspace.case_name = case.name
        assert build_prompt_view(sess, False).prompt is not None, case.name
    assert workspace.response_template == "" and out["response_template"] == ""
    assert workspace.special_tokens == {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}
    assert workspace.stop_tokens == ["</s>"] and workspace.run.model == "" and workspace.round_trip_differences == {}
    status = out["status"]
    assert "3 neutral cases replace SmolLM3&#x27;s 19 cases and 10 recordings" in status
    assert "response template is gone" in status and "Draft from the chat template" in status
    assert "9 alphanumerics" in status and "↶ Undo" in status
    # The checks are about this model: no preset case or recording, no SmolLM3 token, in any result.
    run_all_checks(**edited(sess))
    names = {c.name for c in preset.cases} - {c.name for c in workspace.cases} | {r.name for r in preset.recordings}
    for result in sess.checks:
        assert not any(repr(n) in (result.subject or "") for n in names), result
        assert "<|im_start|>" not in result.details and "<|im_end|>" not in result.details, result


def test_what_the_author_wrote_stays_and_the_preset_s_can_be_kept():
    sess = Session.empty()
    sess.workspace.cases[0].messages[0]["content"] = "My own question"
    mine = sess.workspace.cases[0].name
    edited_response = sess.workspace.response_template.replace('"<think>"', '"<reason>"')
    load(sess, uploaded(), response_template=edited_response)
    workspace = sess.workspace
    assert [c.name for c in workspace.cases] == ["conversation", "tools offered", "tool call", mine]
    assert workspace.case_name == mine and workspace.response_template == edited_response
    assert all(r.case == mine for r in workspace.recordings)  # the preset's other recordings went
    kept = Session.empty()
    out = load(kept, uploaded(), keep_cases=True, keep_response=True)
    assert [c.name for c in kept.workspace.cases] == [c.name for c in load_preset("smollm3").cases]
    assert kept.workspace.response_template == load_preset("smollm3").response_template
    assert "kept the preset&#x27;s response template" in out["status"]


def test_a_failed_load_and_a_reload_keep_the_last_edit(tmp_path):
    sess = Session.empty()
    load(sess, uploaded())
    mine = TEMPLATE + "{# my edit #}"
    broken = tmp_path / "tokenizer_config.json"
    broken.write_text('{"eos_token": ')
    out = load(sess, [str(broken)], chat_template=mine)
    assert set(out) == {"status", "saved_code", "files"} and "not valid JSON" in out["status"]
    assert sess.workspace.chat_template == mine
    # The browser's saved copy holds the edit: a reload brings it back.
    saved, _ = decode_workspace(out["saved_code"])
    assert saved.chat_template == mine
    restored = page.restore_page(Session.empty(), json.dumps({"hash": "", "saved": out["saved_code"]}))
    assert restored["chat_template"] == mine and "Restored" in restored["status"]
    # Loading again replaces the edited template; Undo brings it back.
    load(sess, uploaded(), chat_template=mine)
    assert sess.workspace.chat_template == TEMPLATE
    assert page.undo_load(sess)["chat_template"] == mine


def boxed(html: str) -> set[str]:
    """The texts the prompt view boxes as special tokens."""
    return {re.sub(r"<[^>]+>", "", m).replace("&lt;", "<").replace("&gt;", ">")
            for m in re.findall(r'<span class="tok[^"]*"[^>]*>(.*?)</span>', html)}


def test_no_preset_anchor_and_the_model_s_own_tokens_boxed_before_and_after_a_draft():
    """The preset's start_anchor stayed until a draft was applied (the whole prompt boxed as a region
    the prompt opened), and the boxed tokens changed when the draft was applied."""
    sess = Session.empty()
    load(sess, uploaded())
    sess.workspace.case_name = "tools offered"
    before = build_prompt_view(sess, False)
    assert "anchor-mark" not in before.html and "from-prompt" not in before.html
    assert boxed(before.html) == {"<s>", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]", "[INST]", "[/INST]"}
    drafts.draft_response(**edited(sess))
    applied = drafts.apply_draft(sess, sess.workspace.response_template)
    assert '"[TOOL_CALLS]"' in applied["response_template"]
    after = build_prompt_view(sess, False)
    assert "anchor-mark" in after.html and boxed(after.html) == boxed(before.html)
