"""The token view in the app: loading a tokenizer (upload, folder, Hub stand-in, the model run), the
prompt with its tokens, the token checks in the Checks tab, and token ids in the step-through.
Handlers are called by name, as the page calls them."""

from __future__ import annotations

import html
import re

from app import token_panel as tokens
from app.checks_panel import run_all_checks
from app.step_panel import step_view
from app.workbench import build_prompt_view, toggle_tokens
from engine.presets import load_preset
from engine.workspace import RunSettings, Workspace
from app.state import Session
from tests.fake_hub import FakeHub, no_ambient_credentials  # noqa: F401 - an autouse fixture
from tests.test_app_support import edited, session
from tests.token_support import format_tokenizer, tiny, tokenizer_files

CHATML = ("<|im_start|>", "<|im_end|>")


def smollm3() -> Session:
    """A session on the SmolLM3 preset (its template has {% generation %} blocks) and a case with
    an assistant turn, with a tokenizer that mimics SmolLM3's."""
    sess = Session(Workspace.from_preset(load_preset("smollm3")))
    sess.workspace.case_name = next(c.name for c in sess.workspace.cases
                                    if any(m["role"] == "assistant" for m in c.messages) and not c.continue_final_message)
    ws = sess.workspace
    sess.tokenizer = format_tokenizer(ws.chat_template, ws.special_tokens, ws.stop_tokens)
    return sess


def test_token_view_shows_boundaries_ids_special_tokens_and_the_mask():
    sess = smollm3()
    sess.show_tokens = True  # the "Tokens" toggle (app.workbench.toggle_tokens)
    view = build_prompt_view(sess, show_whitespace=False)
    spans = re.findall(r'<span class="(tk [^"]*)" data-ids="([^"]*)" title="([^"]*)">(.*?)</span>(?=<span class="tk|</div>|\n|$)',
                       view.html, flags=re.S)
    assert len(spans) > 20 and "token-legend" in view.html
    ids = [int(i) for _, group, _, _ in spans for i in group.split()]
    expected = sess.tokenizer.tokenizer(view.prompt, add_special_tokens=False)["input_ids"]
    assert ids == expected  # every token, in order, with its id
    assert any("sp" in cls.split() and "&lt;|im_start|&gt;" in text for cls, _, _, text in spans)
    masked = "".join(html.unescape(re.sub(r"<[^>]+>", "", text)) for cls, _, _, text in spans if "am" in cls.split())
    assistant = next(m for m in sess.workspace.case.messages if m["role"] == "assistant")["content"]
    assert assistant.strip()[:20] in masked.replace("↵", "")
    assert any("gp" in cls.split() for cls, _, _, _ in spans)
    assert "assistant mask:" in view.info and "tokens · " in view.info
    # Off: the plain prompt view, still counted.
    sess.show_tokens = False
    plain = build_prompt_view(sess, show_whitespace=False)
    assert 'class="tk ' not in plain.html and f"{len(expected):,} tokens" in plain.info


def test_tokens_on_without_a_tokenizer_says_how_to_load_one():
    bare = session()
    out = toggle_tokens(bare, True, False)
    view = build_prompt_view(bare, show_whitespace=False)
    assert tokens.NO_TOKENIZER in html.unescape(out["prompt"])
    assert tokens.NO_TOKENIZER in html.unescape(view.html) and "prompt-text" in view.html


def test_loading_a_tokenizer_by_upload_folder_hub_and_from_the_model(tmp_path):
    files = tokenizer_files(CHATML, eos="<|im_end|>")
    (tmp_path / "tokenizer.json").write_bytes(files.tokenizer_json)
    (tmp_path / "tokenizer_config.json").write_bytes(files.config)
    sess = session()
    out = tokens.load_from_upload(sess, [str(tmp_path / "tokenizer.json"), str(tmp_path / "tokenizer_config.json")])
    assert "uploaded tokenizer.json" in out["tokenizer_status"] and " tokens" in out["tokenizer_status"]
    # Built in the worker (issue 25): the session holds the files (with their config), never the tokenizer.
    assert sess.tokenizer.tokenizer is None and sess.tokenizer.files.config == files.config
    other = session()
    assert other.tokenizer is None  # one visitor's tokenizer is never another's
    out = tokens.load_from_folder(other, str(tmp_path))
    assert other.tokenizer is not None and str(tmp_path) in out["tokenizer_status"]
    bad = tokens.load_from_upload(session(), [str(tmp_path / "tokenizer_config.json")])
    assert "Upload a tokenizer.json" in bad["tokenizer_status"]
    with FakeHub() as hub, _endpoint(hub.url):
        hub.add_repo("org/model", {"tokenizer.json": files.tokenizer_json, "tokenizer_config.json": files.config})
        third = session()
        third.workspace.source_repo = "org/model"  # the templates came from there
        out = tokens.load_from_hub(third, "", "")
        assert "org/model" in out["tokenizer_status"] and third.tokenizer is not None
    fourth = session()
    assert "Run a local model first" in tokens.use_model(fourth)["tokenizer_status"]
    fourth.model_tokenizer = ("tiny/model", tiny(CHATML).tokenizer)  # what a local run leaves
    assert "tiny/model" in tokens.use_model(fourth)["tokenizer_status"]


class _endpoint:
    def __init__(self, url):
        self.url = url

    def __enter__(self):
        import os

        os.environ["HF_ENDPOINT"] = self.url

    def __exit__(self, *exc):
        import os

        os.environ.pop("HF_ENDPOINT", None)


def test_checks_tab_runs_the_token_checks_with_the_sessions_tokenizer():
    sess = smollm3()
    out = run_all_checks(**edited(sess))
    results = {r.name: r.status for r in sess.checks if r.name.startswith("tokens")}
    # SmolLM3 with a tokenizer like its own: BOS, special tokens, stop tokens and its {% generation %} blocks pass.
    assert results["tokens.stop_tokens"] == results["tokens.training_mask"] == results["tokens.double_bos"] == "pass"
    assert "tokens.training_mask" in html.unescape(str(out["checks_list"]))
    bare = session()
    run_all_checks(**edited(bare))
    assert [r.status for r in bare.checks if r.name == "tokens"] == ["info"]


def test_step_through_shows_the_token_ids_of_each_chunk():
    from tests.test_app_run import run_all

    sess = session()
    sess.tokenizer = tiny(CHATML, ("<think>", "</think>"), eos="<|im_end|>")
    run_all(sess, RunSettings(recording="think then answer", tokens_per_second=0))
    first = sess.last_run.chunk_ids(0)
    assert first == [sess.tokenizer.tokenizer.convert_tokens_to_ids("<think>")]
    shown = step_view(sess, 1)
    assert f'token id <code class="token-ids">{first[0]}</code>' in shown
