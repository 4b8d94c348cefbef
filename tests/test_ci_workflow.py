"""docs/ci.md's GitHub Actions workflows do what they say: the check command, run as the job runs it
(in a model repo with the playground checked out at .playground), annotates a broken template at its
place and exits 1, passes a good folder, and needs only requirements-engine.txt (no Gradio, no torch);
the behaviour diff's steps, run with the pull request's base checked out at .base, annotate the line
that changes the prompt and write the markdown the comment step posts."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from engine import npm_packages

ROOT = Path(__file__).resolve().parent.parent
QWEN3 = ROOT / "presets" / "qwen3"


def _workflows() -> list[dict]:
    text = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    return [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", text, re.S)]


def _workflow() -> dict:
    """The check's workflow (the page's first)."""
    return _workflows()[0]


def _behaviour_workflow() -> dict:
    """The workflow that posts what changes for the model."""
    return next(w for w in _workflows() if isinstance(w, dict) and w.get("name") == "what changes for the model")


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
    # The engines already installed for this run (.ci/run may keep them outside the clone), not a new install.
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PLAYGROUND_ENGINES_CACHE": str(npm_packages.cache_dir())}
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


def test_the_behaviour_workflow_checks_out_the_base_beside_the_head_and_posts_the_markdown():
    workflow = _behaviour_workflow()
    assert "pull_request" in workflow[True] and workflow["permissions"]["pull-requests"] == "write"
    steps = workflow["jobs"]["diff"]["steps"]
    base = next(s for s in steps if s.get("with", {}).get("path") == ".base")
    assert base["uses"].startswith("actions/checkout@") and base["with"]["ref"] == "${{ github.event.pull_request.base.sha }}"
    runs = [step["run"] for step in steps if "run" in step]
    assert runs[:3] == ["pip install -r .playground/requirements-engine.txt",
                        "PYTHONPATH=.playground python -m engine diff .base . --format github",
                        "PYTHONPATH=.playground python -m engine diff .base . --format markdown "
                        '--base-label base --new-label "this pull request" > behaviour.md\n']
    assert re.fullmatch(r"gh pr comment \$\{\{ github\.event\.pull_request\.number \}\} --body-file behaviour\.md", runs[3])
    assert steps[-1]["env"]["GH_TOKEN"] == "${{ github.token }}"


def test_the_behaviour_workflows_diff_annotates_the_changed_line_and_writes_the_comment(tmp_path):
    template = (QWEN3 / "chat_template.jinja").read_text()
    head, found, tail = template.rpartition('{{- "<|im_start|>assistant\\n" -}}')  # the generation prompt
    assert found
    changed = head + '{{- "<|im_start|>assistant\\n\\n" -}}' + tail
    repo = _model_repo(tmp_path / "head", changed)  # the pull request's head at the root …
    _model_repo(repo / ".base", template).joinpath(".playground").unlink()  # … its base at .base
    github, markdown, _ = (step["run"] for step in _behaviour_workflow()["jobs"]["diff"]["steps"][-3:])
    annotations = _run_step(github, repo)
    assert annotations.returncode == 0, annotations.stderr
    line = head.count("\n") + 1
    assert re.search(rf"^::notice file=chat_template\.jinja,line={line},col=\d+,title=what changes for the model::"
                     r"The prompt changes here in \d+ conversations", annotations.stdout, re.M), annotations.stdout
    written = _run_step(markdown, repo)
    assert written.returncode == 0, written.stderr
    comment = (repo / "behaviour.md").read_text()
    assert comment.startswith("### What changes for the model\n\nbase → this pull request: **The prompt changes in 8 of 10")
    assert "<details><summary><b>plain chat</b>" in comment
    assert "assistant⏎{+⏎+}" in comment and "Unchanged: plain chat, no generation prompt" in comment
