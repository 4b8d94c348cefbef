"""The local runner and a model on the Hub (a local stand-in on 127.0.0.1, tests/fake_hub.py): its
size known before any weights are downloaded, a cap refused before the download, the download's
progress as it arrives, then loading and generating."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.runners import Activity, LocalRunner, RunnerError, inspect_checkpoint, load_model, unload_model
from tests.fake_hub import FakeHub, no_ambient_credentials  # noqa: F401 - an autouse fixture
from tests.tiny_model import CHATML_STOP_TOKENS, build_tiny_model

REPO = "tiny/chat"


@pytest.fixture(scope="module")
def model_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    folder = build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")
    files = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    files["pytorch_model.bin"] = b"pickled weights are never fetched"
    return files


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, model_files: dict[str, bytes]):
    from huggingface_hub import constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "cache"))
    unload_model()
    with FakeHub() as server:
        server.add_repo(REPO, model_files)
        monkeypatch.setenv("HF_ENDPOINT", server.url)  # read at each call (engine.hub.hub_endpoint)
        yield server
    unload_model()


def blobs(tmp_path: Path) -> list[Path]:
    folder = tmp_path / "cache" / "models--tiny--chat" / "blobs"
    return list(folder.iterdir()) if folder.is_dir() else []


def test_the_size_is_known_before_any_weights_are_downloaded(hub: FakeHub, tmp_path: Path, model_files: dict) -> None:
    checkpoint = inspect_checkpoint(REPO)
    assert checkpoint.size_gb == len(model_files["model.safetensors"]) / 1e9
    assert set(checkpoint.files) == set(model_files) - {"pytorch_model.bin"}  # never pickled weights
    assert checkpoint.download_bytes == sum(len(model_files[name]) for name in checkpoint.files)
    assert "within the 8 GB limit" in checkpoint.describe() and "over the 0 GB" in checkpoint.describe(0)
    assert blobs(tmp_path) == [] and not any(r.kind == "resolve" for r in hub.requests)


def test_a_model_over_the_cap_is_refused_before_its_download(hub: FakeHub, tmp_path: Path) -> None:
    with pytest.raises(RunnerError, match="over the 0.0001 GB limit"):
        load_model(REPO, max_size_gb=0.0001)
    assert blobs(tmp_path) == []


def test_a_download_reports_its_progress_then_loading(hub: FakeHub, tmp_path: Path, model_files: dict) -> None:
    hub.download_rate = 400_000  # bytes a second: the weights take about half a second
    seen: list[Activity] = []
    loaded = load_model(REPO, on_progress=seen.append)
    phases = [a.phase for a in seen]
    assert phases[0] == "checking" and phases[-1] == "loading" and "downloading" in phases
    downloads = [a for a in seen if a.phase == "downloading"]
    total = sum(len(data) for name, data in model_files.items() if name != "pytorch_model.bin")
    assert {a.total for a in downloads} == {total} and downloads[-1].done == total
    assert any(0 < a.done < total for a in downloads)  # progress seen while the bytes arrived
    assert [a.done for a in downloads] == sorted(a.done for a in downloads)
    assert downloads[-1].describe() == f"downloading tiny/chat: {total / 1e3:.0f} kB of {total / 1e3:.0f} kB"
    assert downloads[-1].fraction == 1.0
    assert not (Path(loaded.source) / "pytorch_model.bin").exists()
    # Held now: a second run neither checks nor downloads again.
    requests = len(hub.requests)
    assert load_model(REPO, on_progress=seen.append) is loaded and len(hub.requests) == requests


def test_a_run_says_what_it_is_doing_before_its_first_token(hub: FakeHub) -> None:
    runner = LocalRunner(REPO, max_new_tokens=3, temperature=0, stop_tokens=CHATML_STOP_TOKENS)
    shown = []
    chunks = []
    for chunk in runner.stream("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"):
        shown.append(runner.activity)
        chunks.append(chunk)
    assert chunks and all(a is not None and a.phase == "generating" for a in shown)
    assert runner.tokenizer is not None


# ----- what the page shows -----------------------------------------------------------------------


def test_the_run_panel_shows_the_download_and_a_failed_run_shows_no_message(hub: FakeHub) -> None:
    from app.run_stream import stream_run
    from engine.workspace import RunSettings
    from tests.test_app_support import session

    hub.download_rate = 400_000
    sess = session()
    updates = list(stream_run(sess, RunSettings(runner="local", model=REPO, max_new_tokens=3, temperature=0), interval=0))
    stats = [u.stats for u in updates if u.stats]
    assert any("downloading tiny/chat" in s and "<progress" in s for s in stats)
    assert "done" in stats[-1] and sess.tokenizer is not None
    updates = list(stream_run(session(), RunSettings(runner="local", model="tiny/missing", max_new_tokens=3), interval=0))
    assert "failed" in updates[-1].stats and "no model tiny/missing" in updates[-1].diagnostics
    shown = [u.message for u in updates if u.message is not None]
    assert shown[-1] == ""  # not an empty {"role": "assistant"} as if the model had answered nothing


def test_the_size_check_and_the_advice_for_each_format(hub: FakeHub) -> None:
    from app.run_panel import check_model, model_advice
    from engine.presets import load_preset
    from engine.workspace import Workspace

    assert "within the 8 GB limit" in check_model(REPO)["model_note"]
    assert "no model tiny/missing" in check_model("tiny/missing")["model_note"]
    qwen = Workspace.from_preset(load_preset("qwen3"))
    assert qwen.run.model == "Qwen/Qwen3-0.6B" and "runs on a laptop CPU" in model_advice(qwen)
    gpt_oss = Workspace.from_preset(load_preset("gpt-oss"))
    assert gpt_oss.run.model == "" and "No checkpoint of this format fits a laptop CPU" in model_advice(gpt_oss)
    assert "8 GB limit" in model_advice(gpt_oss)
