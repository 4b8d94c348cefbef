"""A tokenizer brings its special tokens: wherever it comes from (a folder, a Hub repo, an upload, the
local model), its `bos_token`, `eos_token`, … (AddedToken objects included) are what the templates
render with, in the page and every command; `--special-tokens` / the page's field override them.

Gemma 3's own tokenizer is not available offline, so its bug is reproduced with a folder built here
whose config carries `bos_token` as an AddedToken object (as Gemma's does) and whose template writes
`{{ bos_token }}`: `check --tokenizer FOLDER` used to render it empty and then tell the author to
write `{{ bos_token }}` first."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from transformers import AutoTokenizer

from app import token_panel as tokens
from app.workbench import build_prompt_view
from engine.tokens import TokenizerFiles, load_tokenizer_files, read_tokenizer_path, vocabularies
from tests.fake_hub import FakeHub, no_ambient_credentials  # noqa: F401 - an autouse fixture
from tests.test_app_support import session
from tests.test_app_tokens import _endpoint
from tests.token_support import tokenizer_files

GEMMA_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<start_of_turn>{{ 'model' if m.role == 'assistant' else m.role }}\n"
    "{{ m.content | trim }}<end_of_turn>\n{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)
ADDED = {"__type": "AddedToken", "content": "<bos>", "lstrip": False, "normalized": False, "rstrip": False,
         "single_word": False, "special": True}


def gemma_like(folder: Path, *, chat_template: bool = True) -> Path:
    """A tokenizer folder like Gemma 3's: BOS added by the tokenizer, `bos_token` an AddedToken object,
    `<start_of_turn>` / `<end_of_turn>` special; with the template as chat_template.jinja."""
    files = tokenizer_files(("<start_of_turn>", "<end_of_turn>"), bos="<bos>", eos="<eos>", add_bos=True)
    config = json.loads(files.config)
    config.update(bos_token=ADDED, add_bos_token=True, image_token="<start_of_turn>")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tokenizer.json").write_bytes(files.tokenizer_json)
    (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2))
    if chat_template:
        (folder / "chat_template.jinja").write_text(GEMMA_TEMPLATE)
    return folder


def test_the_special_tokens_read_from_files_are_the_ones_transformers_builds(tmp_path):
    """`TokenizerFiles.special_tokens` (read as a Hub load reads them) equals what
    AutoTokenizer.from_pretrained gives as `special_tokens_map`, on the folder built here (always)
    and on the real vocabularies installed (.ci/run installs them)."""
    folders = {"gemma-like": gemma_like(tmp_path / "gemma"), **vocabularies.available()}
    for name, folder in folders.items():
        files, problems = read_tokenizer_path(folder, allow_paths=True)
        built = AutoTokenizer.from_pretrained(folder, local_files_only=True)
        assert files.special_tokens == built.special_tokens_map, name


def test_check_with_a_tokenizer_folder_renders_its_bos(cli, tmp_path):
    folder = gemma_like(tmp_path / "gemma", chat_template=False)
    (tmp_path / "t.jinja").write_text(GEMMA_TEMPLATE)
    result = cli("check", "--chat-template", tmp_path / "t.jinja", "--tokenizer", folder, "--json")
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    bos = checks["tokens.double_bos"]["details"]
    assert "does not start with" not in bos and "writes <bos> and the tokenizer adds it too" in bos
    assert checks["tokens.stop_tokens"]["status"] == "pass"  # the playground's tokens are the tokenizer's own
    # An explicit --special-tokens wins, key by key: now the template writes another BOS.
    other = cli("check", "--chat-template", tmp_path / "t.jinja", "--tokenizer", folder, "--json",
                "--special-tokens", '{"bos_token": "<eos>"}')
    names = {c["name"]: c for c in json.loads(other.stdout)["checks"]}
    assert "renders with bos_token = '<eos>'" in " ".join(c["details"] for c in json.loads(other.stdout)["checks"])
    assert names["tokens.double_bos"]["details"].startswith("The template does not start with <bos>")


def test_render_and_draft_take_the_folders_special_tokens(cli, tmp_path):
    folder = gemma_like(tmp_path / "gemma")
    (tmp_path / "case.json").write_text(json.dumps({"messages": [{"role": "user", "content": "Hi"}]}))
    rendered = cli("render", folder, "--case", tmp_path / "case.json")
    assert rendered.returncode == 0 and rendered.stdout.startswith("<bos><start_of_turn>user\nHi")
    overridden = cli("render", folder, "--case", tmp_path / "case.json", "--special-tokens", '{"bos_token": "[B]"}')
    assert overridden.stdout.startswith("[B]<start_of_turn>")
    # A template that refuses to render without a BOS: the draft renders it with the folder's.
    (folder / "chat_template.jinja").write_text("{% if not bos_token %}{{ raise_exception('no bos') }}{% endif %}"
                                                + GEMMA_TEMPLATE)
    drafted = cli("draft", folder, "--json", "--timeout", "0")
    assert drafted.returncode == 0 and json.loads(drafted.stdout)["response_template"] is not None
    bare = cli("draft", "--chat-template", folder / "chat_template.jinja", "--json", "--timeout", "0")
    assert bare.returncode == 1 and "no bos" in bare.stdout


def test_every_way_the_page_loads_a_tokenizer_brings_its_special_tokens(tmp_path):
    folder = gemma_like(tmp_path / "gemma")
    files = TokenizerFiles((folder / "tokenizer.json").read_bytes(), (folder / "tokenizer_config.json").read_bytes())

    def ready():
        sess = session()
        sess.workspace.chat_template = GEMMA_TEMPLATE
        assert "bos_token" not in sess.workspace.special_tokens
        return sess

    def starts_with_bos(sess, out):
        assert sess.workspace.special_tokens["bos_token"] == "<bos>" and '"bos_token": "<bos>"' in out["special_tokens"]
        assert build_prompt_view(sess, show_whitespace=False).prompt.startswith("<bos><start_of_turn>user")

    upload = ready()
    starts_with_bos(upload, tokens.load_from_upload(upload, [str(folder / "tokenizer.json"), str(folder / "tokenizer_config.json")]))
    local = ready()
    starts_with_bos(local, tokens.load_from_folder(local, str(folder)))
    with FakeHub() as hub, _endpoint(hub.url):
        hub.add_repo("org/gemma-like", {"tokenizer.json": files.tokenizer_json, "tokenizer_config.json": files.config})
        from_hub = ready()
        starts_with_bos(from_hub, tokens.load_from_hub(from_hub, "org/gemma-like", ""))
    model = ready()
    model.model_tokenizer = ("org/gemma-like", load_tokenizer_files(files)[0].tokenizer)  # what a local run leaves
    starts_with_bos(model, tokens.use_model(model))
    # The page's field overrides them (until a tokenizer is loaded again).
    out = tokens.edit_special_tokens(model, '{"bos_token": "[B]", "eos_token": "<eos>"}')
    assert out["special_tokens_diagnostics"] == "" and model.workspace.special_tokens["bos_token"] == "[B]"
    assert build_prompt_view(model, show_whitespace=False).prompt.startswith("[B]<start_of_turn>")
    # Templates loaded from files afterwards: the tokenizer's tokens still win over theirs.
    from app.page import load_files

    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"chat_template": GEMMA_TEMPLATE, "bos_token": "<s>"}))
    load_files(local, [str(tmp_path / "tokenizer_config.json")])
    assert local.workspace.special_tokens["bos_token"] == "<bos>" and local.workspace.chat_template == GEMMA_TEMPLATE
    bad = tokens.edit_special_tokens(model, '{"bos_token": 1,}')
    assert "line 1" in bad["special_tokens_diagnostics"] and model.workspace.special_tokens["bos_token"] == "[B]"


def test_a_local_run_that_brings_special_tokens_shows_the_prompt_rendered_with_them(tmp_path):
    """The first run of a local model makes its tokenizer the session's: when that brings other
    special tokens, the run's last update shows them in the field and the prompt as it renders with
    them now, not the prompt from before (which the next edit would only then correct)."""
    from app.run_panel import run_callback
    from engine.workspace import RunSettings
    from tests.test_app_support import edited, settings_values
    from tests.tiny_model import build_tiny_model

    folder = build_tiny_model(tmp_path / "model")  # its tokenizer: eos <|im_end|>, pad <|endoftext|>
    sess = session()
    template = "[{{ pad_token }}]" + sess.workspace.chat_template
    assert "pad_token" not in sess.workspace.special_tokens
    settings = settings_values(RunSettings(runner="local", model=str(folder), max_new_tokens=2, tokens_per_second=0))
    updates = list(run_callback(**edited(sess, chat=template), **settings, api_key="", show_whitespace=False))
    assert sess.workspace.special_tokens["pad_token"] == "<|endoftext|>"
    assert '"pad_token": "<|endoftext|>"' in [u for u in updates if "special_tokens" in u][-1]["special_tokens"]
    before = [u["prompt"] for u in updates if "prompt" in u]
    assert len(before) == 1 and updates.index(next(u for u in updates if "prompt" in u)) == len(updates) - 1
    shown = build_prompt_view(sess, show_whitespace=False).prompt
    assert shown.startswith("[<|endoftext|>]") and "&lt;|endoftext|&gt;" in updates[-1]["prompt"]
    assert updates[-1]["run_note"] == ""  # the run stays the current one
    again = list(run_callback(**edited(sess, chat=template), **settings, api_key="", show_whitespace=False))
    assert not any("prompt" in u for u in again)  # nothing new brought: the prompt is as it was


def test_a_tokenizer_without_named_tokens_keeps_the_templates_own(tmp_path):
    bare = tokenizer_files(("<start_of_turn>",))  # no bos or eos declared
    sess = session()
    before = dict(sess.workspace.special_tokens)
    tokens._loaded(sess, *load_tokenizer_files(TokenizerFiles(bare.tokenizer_json, None)))
    assert sess.workspace.special_tokens == before and before


def test_a_special_token_missing_from_the_vocabulary_is_located(cli, tmp_path):
    folder = gemma_like(tmp_path / "gemma")
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config["eos_token"] = "<end_of_text>"  # not in tokenizer.json: transformers would add it past the vocabulary
    (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2))
    line = next(i for i, text in enumerate((folder / "tokenizer_config.json").read_text().splitlines(), 1) if '"eos_token"' in text)
    loaded, notes = load_tokenizer_files(read_tokenizer_path(folder, allow_paths=True)[0])
    [missing] = [d for d in notes if "eos_token" in d.message]
    assert (missing.severity, missing.file, missing.line, missing.column) == ("error", "tokenizer_config.json", line, 3)
    assert "'<end_of_text>' is not in tokenizer.json" in missing.message
    result = cli("check", folder, "--format", "github", "--random-splits", "0")
    assert result.returncode == 1
    assert f"::error file={folder}/tokenizer_config.json,line={line},col=3,endColumn=13,title=tokenizer::eos_token" in result.stdout


def test_malformed_tokenizer_config_in_a_folder_is_located(cli, tmp_path):
    folder = gemma_like(tmp_path / "gemma")
    (folder / "tokenizer_config.json").write_text('{\n  "bos_token": "<bos>",\n}\n')
    result = cli("check", folder, "--format", "github", "--random-splits", "0")
    assert result.returncode == 1
    assert f"::error file={folder}/tokenizer_config.json,line=3,col=1" in result.stdout
    text = cli("check", folder, "--random-splits", "0")
    assert "tokenizer_config.json is not valid JSON" in text.stderr and text.returncode == 1


def test_a_folder_without_a_chat_template_is_a_located_diagnostic(cli, tmp_path):
    folder = gemma_like(tmp_path / "gemma", chat_template=False)
    result = cli("check", folder, "--format", "github")
    assert result.returncode == 1
    assert f"::error file={folder}/tokenizer_config.json,title=chat template::No chat template in {folder}" in result.stdout
    assert cli("render", folder, "--case", folder / "tokenizer_config.json").returncode in (1, 2)


@pytest.mark.parametrize("name", sorted(vocabularies.PACKAGES))
def test_real_vocabularies_load_with_their_own_special_tokens(name):
    """Where .ci/run installed them: each real vocabulary loads, with no special token missing."""
    folder = vocabularies.folder(name)
    if folder is None:
        assert vocabularies.install() is not None  # only where npm cannot install them
        return
    loaded, notes = load_tokenizer_files(read_tokenizer_path(folder, allow_paths=True)[0])
    assert loaded is not None and not [d for d in notes if d.severity == "error"]
    assert loaded.files.special_tokens["eos_token"] == {"qwen3": "<|im_end|>", "gpt-oss": "<|return|>",
                                                       "llama3": "<|end_of_text|>"}[name]
