"""Hub loading and publishing, against a local fake Hub (tests/fake_hub.py) and transformers itself.

The fake Hub speaks the HTTP API huggingface_hub calls; nothing here touches the network. The
"files save_pretrained writes" claim is checked byte for byte against a real tokenizer's
`save_pretrained`, and every load is checked against `AutoTokenizer.from_pretrained`."""

from __future__ import annotations

import io
import json
import logging
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from huggingface_hub import constants
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import AutoTokenizer, PreTrainedTokenizerFast

from engine import presets
from engine.cli import main
from engine.diagnostics import Diagnostic
from engine.hub import build_files, config_bytes, load_folder, load_templates, redact
from engine.publish import plan_publish, publish
from tests.fake_hub import FakeHub, no_ambient_credentials  # noqa: F401 - an autouse fixture

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).parent / "fixtures" / "hub"
TOKEN = "test-token-5f3a9c1e7b2d"  # not hf_-shaped: only the explicit redaction can hide it
REPO = "org/model"
RESPONSE = {"start_anchor": "<|assistant|>", "defaults": {"role": "assistant"},
            "fields": {"content": {"close": "<|end|>", "content": "text"}}}
NEW_TEMPLATE = "{% for message in messages %}<|{{ message.role }}|>\n{{ message.content }}<|end|>\n{% endfor %}"



@pytest.fixture
def hub():
    with FakeHub() as server:
        server.add_token(TOKEN)
        yield server


def fixture_files(name: str) -> dict[str, bytes]:
    folder = FIXTURES / name
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def tiny_tokenizer() -> Tokenizer:
    tok = Tokenizer(models.WordLevel({"<unk>": 0, "<s>": 1, "</s>": 2, "hi": 3}, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return tok


def writes(hub: FakeHub) -> list:
    return [r for r in hub.requests if r.method == "POST"]


# --- loading ------------------------------------------------------------------------------------
LAYOUTS = {
    # layout: (origin, chat template names or None for a single template, special tokens)
    "jinja": ("chat_template.jinja", ["default", "tool_use"],
              {"bos_token": "<s>", "eos_token": "<|end|>", "pad_token": "<pad>", "unk_token": "<unk>"}),
    "inline": ("tokenizer_config.json", None, {"bos_token": "<s>", "eos_token": "</s>"}),
    "named-list": ("tokenizer_config.json", ["default", "rag"], {"bos_token": "<s>", "eos_token": "</s>"}),
    "legacy-json": ("chat_template.json", None, {"eos_token": "<|eot|>", "unk_token": "<unk>"}),
    "shadowed": ("chat_template.jinja", None, {"bos_token": "<s>", "eos_token": "</s>"}),
}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_load_each_layout_from_folder_and_repo_alike(hub, layout):
    origin, names, special = LAYOUTS[layout]
    hub.add_repo(REPO, {**fixture_files(layout), "model.safetensors": b"weights", "tokenizer.json": b"{}"})
    from_folder = load_folder(FIXTURES / layout)
    from_repo = load_templates(REPO, endpoint=hub.url)
    for loaded in (from_folder, from_repo):
        assert loaded.ok, loaded.diagnostics
        assert loaded.origin == origin
        assert loaded.special_tokens == special
        if names is None:
            assert isinstance(loaded.chat_template, str)
        else:
            assert sorted(loaded.chat_template) == names
    assert from_repo.chat_template == from_folder.chat_template
    assert from_repo.files == fixture_files(layout)
    # Only the small template files were fetched: never the weights or the tokenizer itself.
    fetched = {r.path.split("/resolve/")[1].split("/", 1)[1] for r in hub.requests if r.kind == "resolve"}
    assert fetched == set(fixture_files(layout))
    assert from_repo.commit == hub.repos[REPO].refs["main"]


@pytest.mark.parametrize("layout", [name for name in LAYOUTS if name != "legacy-json"])
def test_load_matches_transformers(tmp_path, layout):
    """Same chat template and special tokens as AutoTokenizer.from_pretrained on the same folder."""
    folder = tmp_path / layout
    shutil.copytree(FIXTURES / layout, folder)
    tiny_tokenizer().save(str(folder / "tokenizer.json"))
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    loaded = load_folder(folder)
    assert loaded.chat_template == tokenizer.chat_template
    assert loaded.special_tokens == tokenizer.special_tokens_map


def test_load_precedence_and_contents():
    jinja = load_folder(FIXTURES / "jinja")
    assert jinja.chat_template["default"] == (FIXTURES / "jinja" / "chat_template.jinja").read_text()
    assert json.loads(jinja.response_template) == json.loads((FIXTURES / "jinja" / "tokenizer_config.json")
                                                             .read_text())["response_template"]
    legacy = load_folder(FIXTURES / "legacy-json")
    assert legacy.chat_template.startswith("{% for message in messages %}<{{ message.role }}>")
    shadowed = load_folder(FIXTURES / "shadowed")
    notes = [d.message for d in shadowed.diagnostics]
    assert shadowed.chat_template.startswith("{% for message in messages %}{{ message.role }}: ")
    assert any(n.startswith("tokenizer_config.json also holds a chat template") for n in notes)
    [legacy_note] = [d for d in shadowed.diagnostics if d.message.startswith("chat_template.json also holds a chat template")]
    assert "a processor (AutoProcessor, as multimodal models load) reads chat_template.json first" in legacy_note.message
    assert "ignores" not in legacy_note.message and legacy_note.severity in ("info", "warning")


def test_load_at_a_revision_reads_that_commit(hub):
    hub.add_repo(REPO, fixture_files("inline"))
    dev = hub.push(REPO, fixture_files("jinja"), branch="dev")
    loaded = load_templates(REPO, "dev", endpoint=hub.url)
    assert loaded.commit == dev and loaded.origin == "chat_template.jinja"
    # Every file was read pinned to the commit the repo info named, so they agree with each other.
    assert {r.path.split("/resolve/")[1].split("/")[0] for r in hub.requests if r.kind == "resolve"} == {dev}


@pytest.mark.parametrize("case, message", [
    ("missing", "Repository org/missing not found"),
    ("revision", "has no revision 'nope'"),
    ("gated", "is gated"),
    ("private", "not found"),
    ("bad-id", "is not a repo id"),
    ("server-error", "server error (500)"),
])
def test_load_errors_are_plain_messages(hub, case, message):
    hub.add_repo(REPO, fixture_files("jinja"), gated=case == "gated", private=case == "private")
    repo, revision = {"missing": ("org/missing", None), "revision": (REPO, "nope"),
                      "bad-id": ("not a/repo/id", None)}.get(case, (REPO, None))
    if case == "server-error":
        hub.fail("info", 500)  # (not on a file: hf_hub_download retries those with backoff, for seconds)
    loaded = load_templates(repo, revision, endpoint=hub.url)
    assert not loaded.ok and loaded.chat_template is None
    assert [d.severity for d in loaded.diagnostics] == ["error"]
    assert message in loaded.diagnostics[0].message


def test_load_when_the_hub_cannot_be_reached(hub, monkeypatch):
    closed = hub.url
    hub.__exit__()
    loaded = load_templates(REPO, endpoint=closed)
    assert loaded.diagnostics[0].message == f"Cannot reach the Hugging Face Hub at {closed}: the network or the " \
                                            "Hub is unavailable."
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    assert "HF_HUB_OFFLINE" in load_templates(REPO, endpoint=closed).diagnostics[0].message


def test_load_never_uses_ambient_credentials(hub, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    hub.add_repo(REPO, fixture_files("jinja"), private=True, owner_tokens={TOKEN})
    assert not load_templates(REPO, endpoint=hub.url).ok
    assert all(r.authorization is None for r in hub.requests)
    assert load_templates(REPO, token=TOKEN, endpoint=hub.url).ok


# --- the files save_pretrained writes -----------------------------------------------------------
@pytest.mark.parametrize("new_template", [NEW_TEMPLATE, {"default": "é {{ bos_token }}", "tool_use": "✓ {{ tools }}\n"}])
def test_built_files_are_byte_identical_to_save_pretrained(tmp_path, new_template):
    """Start from a save_pretrained output with a legacy inline template; set new templates on the
    same tokenizer and save again: build_files must produce exactly those files and bytes."""
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tiny_tokenizer(), bos_token="<s>", eos_token="</s>",
                                        unk_token="<unk>", model_max_length=1024,
                                        extra_special_tokens={"image_token": "<img>"})
    tokenizer.chat_template = "old {{ messages }}"
    tokenizer.save_pretrained(tmp_path / "before", save_jinja_files=False)
    tokenizer.chat_template, tokenizer.response_template = new_template, RESPONSE
    tokenizer.save_pretrained(tmp_path / "after")

    base = load_folder(tmp_path / "before")
    assert base.origin == "tokenizer_config.json" and "chat_template" in json.loads(base.files["tokenizer_config.json"])
    built = build_files(base.files, new_template, json.dumps(RESPONSE))
    after = tmp_path / "after"
    saved = {p.relative_to(after).as_posix(): p.read_bytes() for p in after.rglob("*")
             if p.is_file() and p.name != "tokenizer.json"}
    assert built.diagnostics == [] and built.deleted == []
    assert built.files == saved


def test_built_files_keep_every_other_key_and_load_back_in_transformers(tmp_path):
    """From a hand-written config (not one save_pretrained made): every other key and value is kept
    as it was, and AutoTokenizer reads the new templates back from the built files."""
    built = build_files(fixture_files("jinja"), NEW_TEMPLATE, json.dumps(RESPONSE))
    original = json.loads((FIXTURES / "jinja" / "tokenizer_config.json").read_text())
    assert json.loads(built.files["tokenizer_config.json"]) == {**original, "response_template": RESPONSE}
    assert built.deleted == []  # a single new template replaces only the default; tool_use stays

    folder = tmp_path / "published"
    shutil.copytree(FIXTURES / "jinja", folder)
    for path, data in built.files.items():
        (folder / path).write_bytes(data)
    tiny_tokenizer().save(str(folder / "tokenizer.json"))
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    assert tokenizer.chat_template == {"default": NEW_TEMPLATE,
                                       "tool_use": load_folder(FIXTURES / "jinja").chat_template["tool_use"]}
    assert tokenizer.response_template == RESPONSE
    assert load_folder(folder).special_tokens == tokenizer.special_tokens_map


def test_build_moves_legacy_templates_and_refuses_broken_ones():
    legacy = build_files(fixture_files("legacy-json"), None, None)
    assert legacy.deleted == ["chat_template.json"]
    assert legacy.files["chat_template.jinja"] == json.loads(fixture_files("legacy-json")["chat_template.json"])[
        "chat_template"].encode()
    named = build_files(fixture_files("jinja"), {"default": "a", "rag": "b"}, None)
    assert named.deleted == ["additional_chat_templates/tool_use.jinja"]
    assert set(named.files) == {"chat_template.jinja", "additional_chat_templates/rag.jinja", "tokenizer_config.json"}

    broken = build_files(fixture_files("jinja"), "line one\n{% for x in %}", None)
    assert broken.files == {} and broken.diagnostics[0].source == "chat_template"
    assert broken.diagnostics[0].line == 2
    empty = build_files(fixture_files("jinja"), {"default": "a", "tool_use": " \n"}, None)
    assert [d.message for d in empty.diagnostics] == ["The chat template named 'tool_use' is empty."]
    bad_name = build_files(fixture_files("jinja"), {"default": "a", "../escape": "b"}, None)
    assert "cannot be a template name" in bad_name.diagnostics[0].message
    bad_response = build_files(fixture_files("jinja"), None, '{"fields": ')
    assert bad_response.files == {} and bad_response.diagnostics[0].source == "response_template"
    # A config we cannot read is never overwritten; a repo without one gets a minimal one, with a warning.
    unreadable = build_files({"tokenizer_config.json": b'{"eos_token": '}, "x", None)
    assert unreadable.files == {} and "cannot be updated" in unreadable.diagnostics[-1].message
    bare = build_files({}, "x", json.dumps(RESPONSE))
    assert bare.files == {"chat_template.jinja": b"x",
                          "tokenizer_config.json": config_bytes({"response_template": RESPONSE})}
    assert [d.severity for d in bare.diagnostics] == ["warning"]


# --- diff, plan, zip ------------------------------------------------------------------------------
def test_plan_diff_shows_each_file_against_the_repo(hub):
    hub.add_repo(REPO, fixture_files("inline"))
    plan = plan_publish(REPO, "{{ messages[0].content }}\n", None, endpoint=hub.url)
    assert [(c.path, c.status) for c in plan.changes] == [("chat_template.jinja", "added"),
                                                          ("tokenizer_config.json", "modified")]
    assert plan.diff() == (
        "--- /dev/null\n+++ b/chat_template.jinja\n@@ -0,0 +1 @@\n+{{ messages[0].content }}\n"
        "--- a/tokenizer_config.json\n+++ b/tokenizer_config.json\n@@ -1,6 +1,5 @@\n {\n"
        '   "bos_token": "<s>",\n'
        '-  "chat_template": "{% for message in messages %}[{{ message.role }}] {{ message.content }}\\n{% endfor %}",\n'
        '   "eos_token": "</s>",\n   "model_max_length": 2048,\n'
        '   "tokenizer_class": "PreTrainedTokenizerFast"\n'
    )
    assert plan.title == "Update chat template"
    assert "the inline `chat_template` removed" in plan.description
    assert writes(hub) == []


def test_plan_without_changes_has_nothing_to_publish(hub):
    hub.add_repo(REPO, fixture_files("jinja"))
    base = load_templates(REPO, endpoint=hub.url)
    plan = plan_publish(base, base.chat_template, base.response_template)
    assert not plan.ok and plan.changed == []
    result = publish(plan, token=TOKEN, endpoint=hub.url)
    assert isinstance(result, Diagnostic) and result.message.startswith("Nothing to publish")
    assert writes(hub) == []


def test_zip_holds_the_built_files():
    base = load_folder(FIXTURES / "inline")
    plan = plan_publish(base, NEW_TEMPLATE, json.dumps(RESPONSE))
    data = plan.zip()
    assert data == plan.zip()  # reproducible
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert {name: archive.read(name) for name in archive.namelist()} == plan.files
    assert set(plan.files) == {"chat_template.jinja", "tokenizer_config.json"}


# --- publishing -----------------------------------------------------------------------------------
def test_publish_opens_one_pull_request_with_exactly_the_built_files(hub):
    base_sha = hub.add_repo(REPO, {**fixture_files("legacy-json"), "README.md": b"# model\n"})
    plan = plan_publish(REPO, NEW_TEMPLATE, json.dumps(RESPONSE), token=TOKEN, endpoint=hub.url)
    assert plan.ok, plan.diagnostics
    result = publish(plan, token=TOKEN, title="Template update", description="Why: tests.", endpoint=hub.url)
    assert result == f"{hub.url}/{REPO}/discussions/1"

    [commit] = hub.commits
    assert commit["create_pr"] is True and commit["revision"] == "main"
    assert commit["header"] == {"summary": "Template update", "description": "Why: tests.", "parentCommit": base_sha}
    expected = build_files(fixture_files("legacy-json"), NEW_TEMPLATE, json.dumps(RESPONSE))
    assert commit["files"] == expected.files
    assert commit["deleted"] == ["chat_template.json"]
    # The PR branch holds the result; main is untouched until someone merges.
    assert hub.files_at(REPO, "refs/pr/1") == {"README.md": b"# model\n",
                                               "special_tokens_map.json": fixture_files("legacy-json")[
                                                   "special_tokens_map.json"], **expected.files}
    assert hub.repos[REPO].refs["main"] == base_sha
    assert [r.kind for r in writes(hub)] == ["preupload", "commit"]
    assert all(r.authorization == f"Bearer {TOKEN}" for r in hub.requests if r.kind in ("whoami", "preupload", "commit"))


def test_publish_sends_only_changed_files_with_the_default_message(hub):
    hub.add_repo(REPO, fixture_files("jinja"))
    base = load_templates(REPO, endpoint=hub.url)
    changed = {**RESPONSE, "defaults": {"role": "assistant", "name": "bot"}}
    plan = plan_publish(base, base.chat_template, json.dumps(changed))
    assert publish(plan, token=TOKEN, endpoint=hub.url).endswith("/discussions/1")
    [commit] = hub.commits
    assert list(commit["files"]) == ["tokenizer_config.json"] and commit["deleted"] == []
    assert commit["header"]["summary"] == "Update response template"
    assert "`response_template` updated" in commit["header"]["description"]


def test_publish_goes_ahead_when_whoami_is_rate_limited(hub):
    hub.add_repo(REPO, fixture_files("inline"))
    plan = plan_publish(REPO, NEW_TEMPLATE, None, endpoint=hub.url)
    hub.fail("whoami", 429)
    assert publish(plan, token=TOKEN, endpoint=hub.url) == f"{hub.url}/{REPO}/discussions/1"


def _publish_after(hub, break_it) -> Diagnostic:
    hub.add_repo(REPO, fixture_files("inline"))
    plan = plan_publish(REPO, NEW_TEMPLATE, json.dumps(RESPONSE), token=TOKEN, endpoint=hub.url)
    assert plan.ok
    before = dict(hub.repos[REPO].refs) if REPO in hub.repos else None
    token = break_it(hub)
    result = publish(plan, token=token, endpoint=hub.url)
    assert isinstance(result, Diagnostic) and result.severity == "error" and result.source == "hub"
    assert hub.commits == []
    if REPO in hub.repos:
        assert hub.repos[REPO].refs == before  # nothing half-published
    return result


@pytest.mark.parametrize("case, message", [
    ("no-token", "needs you to be signed in"),
    ("invalid-token", "did not accept your token"),
    ("read-only", "token is read-only"),
    ("no-write-access", "not allowed to open a pull request on org/model"),
    ("conflict", "changed while you were publishing"),
    ("repo-gone", "Repository org/model not found"),
    ("server-error", "server error (500)"),
    ("network-down", "Cannot reach the Hugging Face Hub"),
])
def test_publish_errors_are_clear_and_send_nothing(hub, case, message):
    def break_it(server: FakeHub) -> str | None:
        if case == "invalid-token":
            return "not-a-known-token"
        if case == "read-only":
            server.add_token("read-token", role="read")
            return "read-token"
        if case == "no-write-access":
            server.add_token("fine-token", role="fineGrained", can_write=False)
            return "fine-token"
        if case == "conflict":
            server.fail("commit", 409, None, "A commit has happened since")
        if case == "repo-gone":
            del server.repos[REPO]
        if case == "server-error":
            server.fail("commit", 500)
        if case == "network-down":
            server.__exit__()
        return None if case == "no-token" else TOKEN

    result = _publish_after(hub, break_it)
    assert message in result.message
    if case not in ("no-token", "read-only", "invalid-token"):
        assert result.message.endswith("Nothing was published.")


def test_publish_refuses_folders_commits_and_broken_templates(hub):
    folder_plan = plan_publish(str(FIXTURES / "inline"), NEW_TEMPLATE, None)
    assert folder_plan.ok
    assert "needs a Hub repo id" in publish(folder_plan, token=TOKEN, endpoint=hub.url).message
    # A server open to visitors does not let them name folders on its disk.
    no_folders = plan_publish(str(FIXTURES / "inline"), NEW_TEMPLATE, None, allow_folders=False, endpoint=hub.url)
    assert "is not a repo id" in no_folders.diagnostics[0].message
    sha = hub.add_repo(REPO, fixture_files("inline"))
    at_commit = plan_publish(REPO, NEW_TEMPLATE, None, revision=sha, endpoint=hub.url)
    assert at_commit.ok
    assert "targets a branch" in publish(at_commit, token=TOKEN, endpoint=hub.url).message
    broken = plan_publish(REPO, "{% if %}", None, endpoint=hub.url)
    result = publish(broken, token=TOKEN, endpoint=hub.url)
    assert result.source == "chat_template" and result.line == 1
    assert writes(hub) == [] and not any(r.kind == "whoami" for r in hub.requests)


def test_token_never_appears_in_logs_messages_or_output(hub, caplog, capsys, monkeypatch):
    hub.add_repo(REPO, fixture_files("inline"), private=True, owner_tokens={TOKEN})
    # A server that echoes the token in its error: our message is our own words, never its text.
    # (Checked apart from the logs: httpcore's DEBUG log prints response headers, whatever they hold.)
    hub.fail("commit", 403, None, f"echoing your token {TOKEN} back")
    echoed = publish(plan_publish(REPO, "x", None, token=TOKEN, endpoint=hub.url), token=TOKEN, endpoint=hub.url)
    assert "not allowed to open a pull request" in echoed.message and TOKEN not in str(echoed)

    caplog.set_level(logging.DEBUG)
    seen: list[str] = []
    plan = plan_publish(REPO, NEW_TEMPLATE, json.dumps(RESPONSE), token=TOKEN, endpoint=hub.url)
    seen += [plan.diff(), plan.title, plan.description, *map(str, plan.diagnostics)]
    seen.append(str(publish(plan, token=TOKEN, endpoint=hub.url)))
    hub.fail("commit", 409)
    seen.append(str(publish(plan_publish(REPO, "y", None, token=TOKEN, endpoint=hub.url), token=TOKEN, endpoint=hub.url)))
    seen.append(str(publish(plan, token="not-a-known-token-123", endpoint=hub.url)))
    seen.append(str(load_templates("org/missing", token=TOKEN, endpoint=hub.url).diagnostics))
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    assert main(["publish", "--repo", REPO, "--chat-template", str(FIXTURES / "jinja" / "chat_template.jinja")]) == 0
    out = capsys.readouterr()
    seen += [out.out, out.err, caplog.text]
    assert any(r.authorization == f"Bearer {TOKEN}" for r in hub.requests)  # it was really used
    assert len(hub.commits) == 2 and "/discussions/" in out.out
    assert "DEBUG" in caplog.text and len(seen) == 10
    for text in seen:
        assert TOKEN not in text
    assert redact(f"token={TOKEN} and hf_abcdefghijklmnop", TOKEN) == "token=hf_*** and hf_***"


# --- command line ---------------------------------------------------------------------------------
def test_cli_dry_run_prints_the_diff_and_sends_nothing(hub, monkeypatch, capsys, tmp_path):
    hub.add_repo(REPO, fixture_files("inline"))
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    template = tmp_path / "chat_template.jinja"
    template.write_text(NEW_TEMPLATE)
    response = tmp_path / "response_template.json"
    response.write_text(json.dumps(RESPONSE))
    args = ["publish", "--repo", REPO, "--chat-template", str(template), "--response-template", str(response)]
    assert main([*args, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert out == plan_publish(REPO, NEW_TEMPLATE, json.dumps(RESPONSE), endpoint=hub.url).diff()
    assert writes(hub) == [] and not any(r.kind == "whoami" for r in hub.requests)

    archive = tmp_path / "templates.zip"
    assert main([*args, "--zip", str(archive)]) == 0
    with zipfile.ZipFile(archive) as z:
        assert set(z.namelist()) == {"chat_template.jinja", "tokenizer_config.json"}
    assert writes(hub) == []

    assert main([*args, "--title", "New templates", "--description", "Details."]) == 0
    assert capsys.readouterr().out.endswith(f"Pull request: {hub.url}/{REPO}/discussions/1\n")
    assert hub.commits[0]["header"]["summary"] == "New templates"


def test_cli_preset_usage_and_errors(hub, monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    hub.add_repo(REPO, fixture_files("inline"))
    preset = tmp_path / "presets" / "tiny"
    preset.mkdir(parents=True)
    (preset / "preset.json").write_text(json.dumps({"display_name": "Tiny"}))
    (preset / "cases.json").write_text(json.dumps({"cases": []}))
    (preset / "chat_template.jinja").write_text(NEW_TEMPLATE)
    (preset / "response_template.json").write_text(json.dumps(RESPONSE))
    monkeypatch.setattr(presets, "PRESETS_DIR", tmp_path / "presets")
    presets.load_preset.cache_clear()
    try:
        assert main(["publish", "--repo", REPO, "--preset", "tiny"]) == 0
        assert hub.commits[0]["files"] == build_files(fixture_files("inline"), NEW_TEMPLATE,
                                                      json.dumps(RESPONSE)).files
        assert main(["publish", "--repo", REPO, "--preset", "nope"]) == 2
        assert main(["publish", "--repo", REPO, "--preset", "tiny", "--chat-template", "x.jinja"]) == 2
    finally:
        presets.load_preset.cache_clear()
    assert main(["publish", "--repo", REPO]) == 2
    assert main(["publish", "--repo", "org/missing", "--chat-template", str(preset / "chat_template.jinja")]) == 1
    assert "Repository org/missing not found" in capsys.readouterr().err


def test_cli_runs_as_a_module(hub, tmp_path):
    """The real entry point, in a fresh process pointed at the fake Hub through HF_ENDPOINT."""
    hub.add_repo(REPO, fixture_files("inline"))
    template = tmp_path / "t.jinja"
    template.write_text(NEW_TEMPLATE)
    env = {"PATH": "/usr/bin:/bin", "HF_ENDPOINT": hub.url, "HF_HOME": str(tmp_path / "hf"), "HF_TOKEN": TOKEN}
    done = subprocess.run([sys.executable, "-m", "engine", "publish", "--repo", REPO, "--chat-template", str(template),
                           "--dry-run"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("--- /dev/null\n+++ b/chat_template.jinja\n")
    assert TOKEN not in done.stdout + done.stderr
    assert writes(hub) == []


# --- files handed over one by one (an upload) -----------------------------------------------------


def test_uploaded_files_are_classified_and_read_with_the_repo_precedence():
    from engine.hub import read_uploads

    config = json.dumps({"eos_token": "<|end|>", "chat_template": "inline {{ x }}"}).encode()
    found = read_uploads({"chat_template.jinja": b"main", "tool_use.jinja": b"tools", "tokenizer_config.json": config,
                          "response_template.json": json.dumps(RESPONSE).encode(), "notes.txt": b"hi"})
    assert found.chat_template == {"default": "main", "tool_use": "tools"}
    assert json.loads(found.response_template) == RESPONSE and found.special_tokens["eos_token"] == "<|end|>"
    messages = [d.message for d in found.diagnostics]
    assert any("notes.txt" in m and "ignored" in m for m in messages)
    assert any("transformers ignores it" in m for m in messages)  # the inline template is shadowed
    # A single .jinja of any name is the main template; a response template alone is enough (no
    # "no chat template" warning for what was never uploaded).
    assert read_uploads({"mine.jinja": b"only"}).chat_template == "only"
    alone = read_uploads({"response_template.json": json.dumps(RESPONSE).encode()})
    assert alone.chat_template is None and alone.response_template and alone.diagnostics == []
    broken = read_uploads({"broken.json": b"{"})
    assert broken.chat_template is None and broken.response_template is None
    assert [d.severity for d in broken.diagnostics] == ["error", "error"]
    assert "not valid JSON" in broken.diagnostics[0].message and "No template found" in broken.diagnostics[1].message
