"""Presets: the one loader for `presets/<name>/` (chat template, response template, metadata, cases,
recordings). Presets are data only; everything else reads them through here."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from .cases import Case, Recording

PRESETS_DIR = Path(__file__).resolve().parent.parent / "presets"


@dataclass
class Preset:
    """Everything the playground knows about one model's format.

    `special_tokens` holds bos/eos/pad (what templates read as `bos_token`, …); `stop_tokens` the
    strings that end generation; `template_kwargs` maps each kwarg the chat template understands to
    `{"default": …, "type": "bool" | "choice" | "string", "choices": [...], "help": "…"}`."""

    name: str
    display_name: str
    checkpoints: list[str]
    chat_template: str
    response_template: str
    special_tokens: dict[str, str]
    stop_tokens: list[str]
    template_kwargs: dict[str, dict]
    generation: dict[str, Any]
    notes: list[str]
    # Fields the chat template does not render back when the message is in history, each with why
    # (e.g. SmolLM3 drops reasoning). Round-trip checks expect exactly these to be lost.
    round_trip_differences: dict[str, str]
    # Fields the chat template drops only from earlier turns (e.g. Qwen3 keeps reasoning only after
    # the last user query): they survive as the last message, but not deeper in the history.
    history_differences: dict[str, str]
    cases: list[Case]
    recordings: list[Recording]
    path: Path = field(repr=False, default=PRESETS_DIR)

    def case(self, name: str) -> Case:
        for case in self.cases:
            if case.name == name:
                return case
        raise KeyError(f"Preset {self.name!r} has no case {name!r}. Cases: {[c.name for c in self.cases]}")

    def recording(self, name: str) -> Recording:
        for recording in self.recordings:
            if recording.name == name:
                return recording
        raise KeyError(f"Preset {self.name!r} has no recording {name!r}. Recordings: {[r.name for r in self.recordings]}")

    def default_kwargs(self) -> dict[str, Any]:
        """The template kwargs at their defaults (what the preset's controls start at)."""
        return {name: spec.get("default") for name, spec in self.template_kwargs.items()}

    @property
    def response_spec(self) -> dict:
        return json.loads(self.response_template)


def preset_names() -> list[str]:
    """Names of the presets on disk (folder names), in display order."""
    order = ["smollm3", "qwen3", "gpt-oss", "command-r7b", "blank"]
    found = sorted(p.name for p in PRESETS_DIR.iterdir() if (p / "preset.json").is_file())
    return sorted(found, key=lambda n: (order.index(n) if n in order else len(order), n))


@cache
def load_preset(name: str) -> Preset:
    """Load `presets/<name>/`. Raises KeyError for an unknown preset, ValueError for a broken one."""
    folder = PRESETS_DIR / name
    if not (folder / "preset.json").is_file():
        raise KeyError(f"No preset {name!r}. Presets: {preset_names()}")
    meta = _read_json(folder / "preset.json")
    cases = [Case.from_dict(c) for c in _read_json(folder / "cases.json")["cases"]]
    recordings_file = folder / "recordings.json"
    recordings = [Recording.from_dict(r) for r in _read_json(recordings_file)["recordings"]] if recordings_file.is_file() else []
    return Preset(
        name=name,
        display_name=meta["display_name"],
        checkpoints=meta.get("checkpoints", []),
        chat_template=(folder / "chat_template.jinja").read_text(encoding="utf-8"),
        response_template=(folder / "response_template.json").read_text(encoding="utf-8"),
        special_tokens=meta.get("special_tokens", {}),
        stop_tokens=meta.get("stop_tokens", []),
        template_kwargs=meta.get("template_kwargs", {}),
        generation=meta.get("generation", {}),
        notes=meta.get("notes", []),
        round_trip_differences=meta.get("round_trip_differences", {}),
        history_differences=meta.get("history_differences", {}),
        cases=cases,
        recordings=recordings,
        path=folder,
    )


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: invalid JSON at line {e.lineno}, column {e.colno}: {e.msg}") from e
