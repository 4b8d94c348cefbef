"""Issue 25, item 1: the server process only routes. Every handler the page wires is called with a
visitor's own chat template, files and tokenizer, under `engine.server_guard`: none may parse,
compile or render a template, or build or run a tokenizer, in this process (the server's). The
handlers are found on the page itself, so an event wired tomorrow (a provenance view, a format
picker, a model folder check) is covered the day it is wired."""

from __future__ import annotations

import inspect
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from app.page import build
from app.state import LastRun, encode_workspace
from engine import server_guard
from engine.workspace import PASTED
from tests.fake_hub import FakeHub, no_ambient_credentials  # noqa: F401 - an autouse fixture
from tests.test_app_support import OUTPUT, RESPONSE, edited, session
from tests.token_support import tokenizer_files

TOKEN = "hf_server_routes_token_0123456789"
REPO = "visitor/model"


def visitor_template() -> str:
    """A chat template no process has compiled before (so no cache hides a compile)."""
    return ("{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor -%}"
            "{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif -%}{# " + uuid.uuid4().hex + " #}")


@pytest.fixture(scope="module")
def page() -> Any:
    return build()


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    tokenizer = tokenizer_files(("<|im_start|>", "<|im_end|>"))
    with FakeHub() as server:
        server.add_token(TOKEN)
        server.add_repo(REPO, {
            "tokenizer_config.json": json.dumps({"eos_token": "<|im_end|>", "chat_template": visitor_template()}).encode(),
            "tokenizer.json": tokenizer.tokenizer_json,
        })  # fmt: skip
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        yield server


@pytest.fixture
def guarded() -> Iterator[list[str]]:
    violations = server_guard.guard(strict=True)
    violations.clear()
    try:
        yield violations
    finally:
        server_guard.unguard()


def handlers(page: Any) -> list[tuple[str, Any, tuple[str, ...]]]:
    """Every handler the page wires: (its name, the callback Gradio calls, its inputs by name)."""
    found = []
    for block_fn in page.fns.values():
        names = getattr(block_fn.fn, "input_names", None)
        if names is not None:
            found.append((block_fn.name, block_fn, names))
    return found


def visitor_values(tmp_path: Path, template: str) -> dict[str, Any]:
    """What a visitor sends: their template in the editor and in uploaded files, their tokenizer."""
    tokenizer = tokenizer_files(("<|im_start|>", "<|im_end|>"))
    (tmp_path / "chat_template.jinja").write_text(template)
    (tmp_path / "tokenizer.json").write_bytes(tokenizer.tokenizer_json)
    (tmp_path / "tokenizer_config.json").write_bytes(tokenizer.config or b"{}")
    shared = session(chat_template=template)
    return {
        "chat_template": template, "response_template": RESPONSE,
        "files": [str(tmp_path / "chat_template.jinja")],
        "tokenizer_upload": [str(tmp_path / "tokenizer.json"), str(tmp_path / "tokenizer_config.json")],
        "hub_repo": REPO, "tokenizer_repo": REPO, "publish_repo": REPO, "publish_token": TOKEN,
        "publish_title": "t", "publish_description": "d", "hub_revision": "", "publish_revision": "",
        "boot": json.dumps({"hash": "#s=" + encode_workspace(shared.workspace), "saved": None}),
        "recording": PASTED, "pasted": OUTPUT, "tokens_per_second": 0, "runner": "recorded", "show_tokens": True,
        "step": 1, "intend_why": "on purpose",
    }  # fmt: skip


def prepared_session(template: str) -> Any:
    """A session as a visitor's would be mid-work: a run, a draft under review, a tokenizer, checks."""
    from engine.tokens import LoadedTokenizer

    sess = session(chat_template=template)
    sess.last_run = LastRun("p", None, json.loads(RESPONSE), [OUTPUT[:10], OUTPUT[10:]], [1, 1], [0.0, 0.1])
    sess.draft = RESPONSE
    sess.show_tokens = True
    sess.tokenizer = LoadedTokenizer(tokenizer_files(("<|im_start|>", "<|im_end|>")), None)
    return sess


def call(block_fn: Any, names: tuple[str, ...], values: dict[str, Any]) -> dict[str, Any]:
    """Call one handler as Gradio would; what it showed last, by output name (a run: every update)."""
    callback = block_fn.fn
    defaults = {name: getattr(component, "value", None) for name, component in zip(names, block_fn.inputs)}
    args = [values[name] if name in values else defaults[name] for name in names]
    # What Gradio fills in: no sign-in, the first row clicked, and (from the request) no client named.
    clicked = SimpleNamespace(index=[0, 1], value=None, _data={"index": 0})
    special = {p: clicked if p == "evt" else None for p in inspect.signature(callback).parameters
               if not p.startswith("value_")}
    result = callback(*args, **special)
    shown: dict[str, Any] = {}
    for update in (result if inspect.isgenerator(result) else [result]):
        shown.update({callback.output_names[id(component)]: value for component, value in update.items()})
    return shown


@pytest.mark.slow  # every handler of the page, each rendering, checking or tokenizing in a worker
def test_no_handler_compiles_renders_or_tokenizes_in_the_server_process(page: Any, hub: FakeHub, guarded: list[str],
                                                                         tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pygments.lexer import Lexer

    # pygments' lexers never run on a visitor's text here (docs/architecture.md, "Dependencies").
    lexed: list[str] = []
    monkeypatch.setattr(Lexer, "get_tokens", lambda self, *a, **k: lexed.append(type(self).__name__) or iter(()))
    shown, crashed = {}, []
    for name, block_fn, names in handlers(page):
        template = visitor_template()
        values = {**visitor_values(tmp_path, template), "session": prepared_session(template)}
        values.update({k: v for k, v in edited(values["session"]).items() if k not in values})
        try:
            shown[name] = call(block_fn, names, values)
        except server_guard.ServerWork:
            pass  # recorded below, with where it happened
        except Exception as e:  # noqa: BLE001 - every handler is tried; each failure is reported
            crashed.append(f"{name}: {type(e).__name__}: {e}")
    # The paths the issue names did their work (in a worker), not stop early.
    assert "zip-link" in shown["download_zip"]["publish_zip"] and "zip-link" in shown["preview"]["publish_zip"]
    assert "chat_template.jinja" in shown["preview"]["publish_diff"]
    assert "Pull request opened" in shown["open_pull_request"]["publish_messages"]
    assert "draft_report" in shown["draft_response"] and "checks_summary" in shown["run_all_checks"]
    assert "tokens" in shown["load_from_upload"]["tokenizer_status"] and "tokens" in shown["load_from_hub"]["tokenizer_status"]
    assert "tk tk" in shown["toggle_tokens"]["prompt"]  # the prompt's tokens, shown
    assert "&lt;|im_start|&gt;" in shown["restore_page"]["prompt"] or "im_start" in shown["restore_page"]["prompt"]
    assert shown["load_files"]["chat_template"].startswith("{%- for m in messages")
    assert "Hello there" in str(shown["run_callback"]["stream"])
    # What changes for the model: rendered and parsed in the worker, in both views and the preview.
    assert "The prompt changes in" in shown["compare_in_playground"]["playground_behaviour"]
    assert "The prompt changes in" in shown["compare_in_publish"]["publish_behaviour"]
    assert "The prompt changes in" in shown["preview"]["publish_behaviour"]
    assert "## What changes for the model" in shown["preview"]["publish_description"]
    assert guarded == [], "\n".join(guarded)
    assert lexed == []
    assert crashed == []
