"""docs/ci.md's GitHub Actions workflow does what it says: its check command, run as the job runs it
(in a model repo with the playground checked out at .playground), annotates a broken template at its
place and exits 1, passes a good folder, and needs only requirements-engine.txt (no Gradio, no torch)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
QWEN3 = ROOT / "presets" / "qwen3"


def _workflow() -> dict:
    text = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    return yaml.safe_load(re.search(r"```yaml\n(.*?)```", text, re.S).group(1))


def _model_repo(path: Path, chat_template: str) -> Path:
    """A model repo as the job checks it out: its files at the root, the playground at .playground."""
    path.mkdir()
    (path / "chat_template.jinja").write_text(chat_template)
    config = {"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
              "response_template": json.loads((QWEN3 / "response_template.json").read_text())}
    (path / "tokenizer_config.json").write_text(json.dumps(config, indent=2))
    (path / ".playground").symlink_to(ROOT)
    return path


def _run_step(command: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PLAYGROUND_ENGINES_CACHE": str(ROOT / ".cache" / "engines")}
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_the_workflow_installs_the_engine_only_and_checks_the_folder():
    workflow = _workflow()
    assert "pull_request" in workflow[True]  # `on:` (YAML reads the bare key as true)
    runs = [step["run"] for step in workflow["jobs"]["check"]["steps"] if "run" in step]
    assert runs == ["pip install -r .playground/requirements-engine.txt",
                    "PYTHONPATH=.playground python -m engine check . --format github"]
    # requirements.txt is the engine's plus the page and the local model: nothing listed twice.
    engine = [l for l in (ROOT / "requirements-engine.txt").read_text().splitlines() if l and not l.startswith("#")]
    full = [l for l in (ROOT / "requirements.txt").read_text().splitlines() if l and not l.startswith("#")]
    assert "-r requirements-engine.txt" in full and not set(engine) & set(full)
    assert not any(re.match(r"(gradio|torch)\b", l) for l in engine)


@pytest.mark.slow  # real `python -m engine check` processes
def test_the_workflows_check_annotates_a_broken_template_and_passes_a_good_one(tmp_path):
    command = _workflow()["jobs"]["check"]["steps"][-1]["run"]
    broken = (QWEN3 / "chat_template.jinja").read_text().replace("+ content +", "+ content | badfilter +", 1)
    assert broken != (QWEN3 / "chat_template.jinja").read_text()
    repo = _model_repo(tmp_path / "broken", broken)
    result = _run_step(command, repo)
    line = next(i for i, row in enumerate(broken.splitlines(), 1) if "badfilter" in row)
    assert result.returncode == 1, result.stderr
    # (inside a branch jinja2 finds the unknown filter when it runs: every conversation fails on it)
    assert re.search(rf"^::error file=chat_template\.jinja,line={line},col=\d+,.*No filter named 'badfilter'",
                     result.stdout, re.M), result.stdout
    good = _run_step(command, _model_repo(tmp_path / "good", (QWEN3 / "chat_template.jinja").read_text()))
    assert good.returncode == 0, good.stdout + good.stderr
    assert "::error" not in good.stdout and "::warning file=chat_template.jinja" in good.stdout


@pytest.mark.slow  # real `python -m engine check` processes
def test_check_needs_neither_gradio_nor_torch(tmp_path):
    repo = _model_repo(tmp_path / "model", (QWEN3 / "chat_template.jinja").read_text())
    probe = ("import runpy, sys\n"
             "sys.argv = ['engine', 'check', '.', '--format', 'github', '--random-splits', '0']\n"
             "try:\n    runpy.run_module('engine', run_name='__main__')\n"
             "except SystemExit as e:\n    code = e.code\n"
             "print('EXIT', code, sorted(m for m in ('torch', 'gradio') if m in sys.modules))\n")
    result = subprocess.run([sys.executable, "-c", probe], cwd=repo, capture_output=True, text=True, timeout=300,
                            env={**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"})
    assert result.stdout.splitlines()[-1] == "EXIT 0 []", result.stdout[-2000:] + result.stderr[-2000:]
