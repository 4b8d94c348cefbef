"""Share links and browser storage: the workspace survives the trip byte for byte, a broken or
hostile link is a message, and secrets never travel."""

from __future__ import annotations

import base64
import json
import zlib

from app.run_stream import stream_run
from app.share import BOOT_JS, LINK_JS, SAVE_JS, STORAGE_KEY, save_settings, share_code
from app.sources import restore
from app.state import decode_workspace, encode_workspace
from engine.workspace import RunSettings
from tests.test_app_support import CHATML, edited, session, settings_values


def test_share_code_round_trips_templates_cases_and_settings_exactly():
    sess = session()
    sess.workspace.chat_template = "\n  " + CHATML + "\n\n"  # whitespace at both ends survives
    ws = sess.workspace
    settings = settings_values(RunSettings(runner="simulated", recording="think then answer", tokens_per_second=12,
                                           temperature=0.3))
    code = share_code(**edited(sess, messages='[{"role": "user", "content": "Shared ünïcode ✓"}]'), **settings)["share_code"]
    assert set(code) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    restored, problem = decode_workspace(code)
    assert problem is None
    assert restored.chat_template == "\n  " + CHATML + "\n\n"
    assert restored.response_template == ws.response_template
    assert restored.case.messages == [{"role": "user", "content": "Shared ünïcode ✓"}]
    assert [c.name for c in restored.cases] == ["greeting", "thinking"]
    assert restored.cases[1].template_kwargs == {"enable_thinking": True}
    assert restored.run == sess.workspace.run and restored.run.runner == "simulated" and restored.run.tokens_per_second == 12
    assert restored.recordings == ws.recordings and restored.kwarg_specs == ws.kwarg_specs
    assert restored.to_dict() == ws.to_dict()


def test_a_token_never_enters_the_share_code():
    sess = session()
    secret = "hf_SECRETsecretSECRET123"
    list(stream_run(sess, RunSettings(runner="remote", remote_url="http://127.0.0.1:1", remote_model="m"), api_key=secret, interval=0))
    settings = settings_values(RunSettings(runner="remote", remote_url="http://127.0.0.1:1", remote_model="m"))
    code = share_code(**edited(sess), **settings)["share_code"]
    raw = zlib.decompress(base64.urlsafe_b64decode(code + "=" * (-len(code) % 4))).decode()
    assert secret not in raw and "api_key" not in raw
    assert sess.workspace.run.remote_url == "http://127.0.0.1:1"  # settings do travel


def test_broken_and_hostile_links_become_messages():
    for code in ["", "!!!", "abc", base64.urlsafe_b64encode(zlib.compress(b"[1, 2]")).decode()]:
        workspace, problem = decode_workspace(code)
        assert workspace is None and "cannot be opened" in problem.message
    bomb = base64.urlsafe_b64encode(zlib.compress(b'{"a": "' + b"x" * 20_000_000 + b'"}')).decode()
    workspace, problem = decode_workspace(bomb)
    assert workspace is None and "more than" in problem.message
    future = base64.urlsafe_b64encode(zlib.compress(json.dumps({"v": 99}).encode())).decode()
    assert "newer version" in decode_workspace(future)[1].message


def test_restore_prefers_the_link_then_the_saved_copy():
    linked, saved = session().workspace, session().workspace
    linked.chat_template, saved.chat_template = "LINK", "SAVED"
    both = json.dumps({"hash": "#s=" + encode_workspace(linked), "saved": encode_workspace(saved)})
    workspace, note = restore(both)
    assert workspace.chat_template == "LINK" and "share link" in note
    workspace, note = restore(json.dumps({"hash": "", "saved": encode_workspace(saved)}))
    assert workspace.chat_template == "SAVED" and "Restored" in note
    workspace, note = restore(json.dumps({"hash": "#s=garbage", "saved": None}))
    assert workspace is None and "cannot be opened" in note
    assert restore("not json") == (None, "")


def test_run_settings_are_saved_when_they_change():
    sess = session()
    settings = settings_values(RunSettings(runner="local", model="my/model", max_new_tokens=64, seed=7))
    code = save_settings(sess, **settings)["saved_code"]
    restored, _ = decode_workspace(code)
    assert restored.run.runner == "local" and restored.run.model == "my/model" and restored.run.seed == 7


def test_the_page_scripts_use_one_storage_key_and_the_fragment():
    assert STORAGE_KEY in BOOT_JS and STORAGE_KEY in SAVE_JS
    assert "location.hash" in BOOT_JS and "'#s='" in LINK_JS
