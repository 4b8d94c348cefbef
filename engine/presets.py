"""Presets: the one loader for `presets/<name>/` (chat template, response template, metadata, cases,
recordings). Presets are data only; everything else reads them through here.

A loaded preset is shared by every caller (it is cached), so it is immutable: a frozen dataclass of
strings, tuples and read-only mappings, and `cases` / `recordings` hand each caller fresh copies.
No caller can change what another sees."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

from .cases import Case, Recording

PRESETS_DIR = Path(__file__).resolve().parent.parent / "presets"
ORDER = ["smollm3", "qwen3", "gpt-oss", "command-r7b", "blank"]


def frozen(value: Any) -> Any:
    """`value` with every dict read-only and every list a tuple, all the way down."""
    if isinstance(value, dict):
        return MappingProxyType({k: frozen(v) for k, v in value.items()})
    if isinstance(value, list):
        return tuple(frozen(v) for v in value)
    return value


def thawed(value: Any) -> Any:
    """A plain, mutable copy of `frozen` data (what a caller may edit)."""
    if isinstance(value, Mapping):
        return {k: thawed(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [thawed(v) for v in value]
    return value


@dataclass(frozen=True)
class Preset:
    """Everything the playground knows about one model's format.

    `special_tokens` holds bos/eos/pad (what templates read as `bos_token`, …); `stop_tokens` the
    strings that end generation; `template_kwargs` maps each kwarg the chat template understands to
    `{"default": …, "type": "bool" | "choice" | "string", "choices": [...], "help": "…"}`."""

    name: str
    display_name: str
    checkpoints: tuple[str, ...]
    chat_template: str
    response_template: str
    special_tokens: Mapping[str, str]
    stop_tokens: tuple[str, ...]
    template_kwargs: Mapping[str, Mapping[str, Any]]
    generation: Mapping[str, Any]
    notes: tuple[str, ...]
    # Fields the chat template does not render back when the message is in history, each with why
    # (e.g. SmolLM3 drops reasoning). Round-trip checks expect exactly these to be lost.
    round_trip_differences: Mapping[str, str]
    # Fields the chat template drops only from earlier turns (e.g. Qwen3 keeps reasoning only after
    # the last user query): they survive as the last message, but not deeper in the history.
    history_differences: Mapping[str, str]
    # A checkpoint of this format small enough for a laptop CPU (what the local runner suggests),
    # and a sentence on it (or on why there is none).
    laptop_checkpoint: str = ""
    laptop_note: str = ""
    _cases: tuple = field(default=(), repr=False)
    _recordings: tuple = field(default=(), repr=False)
    path: Path = field(repr=False, default=PRESETS_DIR)

    @property
    def cases(self) -> list[Case]:
        """The preset's cases, as fresh objects the caller owns."""
        return [Case.from_dict(thawed(c)) for c in self._cases]

    @property
    def recordings(self) -> list[Recording]:
        """The preset's recordings, as fresh objects the caller owns."""
        return [Recording.from_dict(thawed(r)) for r in self._recordings]

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

    def kwarg_specs(self) -> dict[str, dict]:
        """The declared template kwargs, as plain data the caller owns."""
        return thawed(self.template_kwargs)

    def intended_differences(self) -> dict[str, str]:
        """Every field the chat template drops on purpose (from the last turn or only from earlier
        ones), each with why: what the round trip reports as intended rather than as a failure."""
        return {**self.history_differences, **self.round_trip_differences}

    def suggested_model(self) -> str:
        """The checkpoint the local runner starts with: one of this format that runs on a laptop CPU
        (none when no checkpoint of the format fits: `laptop_note` says why)."""
        return self.laptop_checkpoint

    @property
    def response_spec(self) -> dict:
        return json.loads(self.response_template)


def preset_names() -> list[str]:
    """Names of the presets on disk (folder names), in display order."""
    found = sorted(p.name for p in PRESETS_DIR.iterdir() if (p / "preset.json").is_file())
    return sorted(found, key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n))


@cache
def load_preset(name: str) -> Preset:
    """Load `presets/<name>/` (once; the result is immutable). Raises KeyError for an unknown
    preset, ValueError for a broken one."""
    folder = PRESETS_DIR / name
    if name not in preset_names():
        raise KeyError(f"No preset {name!r}. Presets: {preset_names()}")
    meta = read_json_file(folder / "preset.json")
    cases = read_json_file(folder / "cases.json")["cases"]
    recordings_file = folder / "recordings.json"
    recordings = read_json_file(recordings_file)["recordings"] if recordings_file.is_file() else []
    # Build each once now, so a broken case or recording fails the load, not a later caller.
    for item in cases:
        Case.from_dict(copy.deepcopy(item))
    for item in recordings:
        Recording.from_dict(copy.deepcopy(item))
    return Preset(
        name=name,
        display_name=meta["display_name"],
        checkpoints=tuple(meta.get("checkpoints", [])),
        chat_template=(folder / "chat_template.jinja").read_text(encoding="utf-8"),
        response_template=(folder / "response_template.json").read_text(encoding="utf-8"),
        special_tokens=frozen(meta.get("special_tokens", {})),
        stop_tokens=tuple(meta.get("stop_tokens", [])),
        template_kwargs=frozen(meta.get("template_kwargs", {})),
        generation=frozen(meta.get("generation", {})),
        notes=tuple(meta.get("notes", [])),
        round_trip_differences=frozen(meta.get("round_trip_differences", {})),
        history_differences=frozen(meta.get("history_differences", {})),
        laptop_checkpoint=meta.get("laptop_checkpoint", ""),
        laptop_note=meta.get("laptop_note", ""),
        _cases=frozen(cases),
        _recordings=frozen(recordings),
        path=folder,
    )


def read_json_file(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: invalid JSON at line {e.lineno}, column {e.colno}: {e.msg}") from e
