"""The format library: the one loader of `formats/<name>/` (data only), like `engine.presets`.

A format is a tool-call output format models write: its response template, what it is and which
models write it, and real examples (raw outputs exactly as models write them, each with the message
it must parse to). The draft, the page's "Start from a format" picker and `python -m engine formats`
all read the library through here.

A folder holds `format.json` (title, description, models, signature, limits, stream_safe),
`response_template.json` and `examples.json`. A preset's format names the preset instead of
repeating it (`"preset": "qwen3"`): its response template is the preset's, and its examples are the
preset's recordings (each with its case's tools and rendered prompt) plus any in `examples.json`.
What the response-template spec cannot express is written once, in `formats/limits.json`, and each
format names the limits it meets by id.

Loaded formats are shared by every caller (cached), so they are immutable: frozen dataclasses of
strings, tuples and read-only mappings (`to_dict` gives a caller plain data of its own)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

from .cases import passed_kwargs, render_case
from .regex_portability import scan, spec_patterns
from .presets import frozen, load_preset, read_json_file, thawed
from .response_spec import compile_spec

FORMATS_DIR = Path(__file__).resolve().parent.parent / "formats"
LIMITS_FILE = FORMATS_DIR / "limits.json"
_FORMAT_KEYS = {"title", "description", "models", "signature", "limits", "stream_safe", "preset", "variations", "sources"}
_EXAMPLE_KEYS = {"name", "output", "message", "tools", "prefix", "description"}


@dataclass(frozen=True)
class Limit:
    """Something a format needs that the response-template spec cannot say: the missing feature, a
    minimal output that needs it, and the portable workaround (empty when there is none)."""

    id: str
    feature: str
    example: str
    workaround: str = ""

    def __str__(self) -> str:
        workaround = f" Workaround: {self.workaround}" if self.workaround else " No portable workaround."
        return f"{self.feature} Example: {self.example}.{workaround}"


@dataclass(frozen=True)
class FormatExample:
    """A raw model output and the message it must parse to."""

    name: str
    output: str  # the raw model output exactly as the model writes it
    message: Mapping  # the expected parsed message (role, content, reasoning_content, tool_calls…)
    tools: tuple | None = None  # tools offered (when the example needs them, e.g. typed arguments)
    prefix: str | None = None  # the end of the prompt when the format needs it (start anchor, prefill)
    description: str = ""

    def expected(self) -> dict:
        """The expected message as plain data the caller owns."""
        return thawed(self.message)

    def tool_list(self) -> list | None:
        """The tools as plain data (what `parse_response(tools=…)` takes)."""
        return None if self.tools is None else thawed(self.tools)

    def to_dict(self) -> dict:
        data: dict[str, Any] = {"name": self.name, "output": self.output, "message": self.expected()}
        if self.tools is not None:
            data["tools"] = self.tool_list()
        if self.prefix is not None:
            data["prefix"] = self.prefix
        if self.description:
            data["description"] = self.description
        return data


@dataclass(frozen=True)
class Format:
    """One tool-call output format: its response template and the examples it is verified on."""

    name: str  # folder name, e.g. "hermes", "llama3-json", "pythonic", …
    title: str  # e.g. "Hermes / Qwen <tool_call>{json}</tool_call>"
    description: str
    models: tuple[str, ...]  # Hub ids known to use it
    response_template: Mapping  # the response template as a JSON object (read-only)
    response_template_text: str  # … as the JSON text an editor shows
    examples: tuple[FormatExample, ...]
    limits: tuple[str, ...]  # what the spec cannot express here (each: the feature + a minimal example)
    portable: bool  # no regex construct only Python's `regex` runs
    stream_safe: bool  # every example streams (any chunking) to the one-shot message
    signature: tuple[str, ...]  # literal texts that identify the format in a prompt/output (e.g. "<tool_call>")
    limit_ids: tuple[str, ...] = ()  # the ids of `limits` in formats/limits.json
    preset: str = ""  # the preset whose response template and recordings this format is
    # What its models write beyond the examples (the robustness check's claims): {variation: true |
    # false | a limit id, "optional": [texts a model may leave out]} (engine.checks.robustness).
    variations: Mapping = field(default_factory=lambda: MappingProxyType({}))
    # Where the claims come from: serving engines' parsers and tests, model cards, in our own words.
    sources: tuple[str, ...] = ()

    def spec(self) -> dict:
        """The response template as plain data the caller owns."""
        return thawed(self.response_template)

    def matches(self, query: str) -> bool:
        """Whether a search for `query` finds this format: every word of it is in the name, title,
        description, a model id or a signature text (case-insensitive)."""
        haystack = " ".join((self.name, self.title, self.description, *self.models, *self.signature)).lower()
        return all(word in haystack for word in query.lower().split())

    def to_dict(self) -> dict:
        """The format as JSON-ready data (what `python -m engine formats --json` prints)."""
        return {
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "models": list(self.models),
            "preset": self.preset or None,
            "signature": list(self.signature),
            "portable": self.portable,
            "stream_safe": self.stream_safe,
            "limits": list(self.limits),
            "variations": thawed(self.variations),
            "sources": list(self.sources),
            "response_template": self.spec(),
            "examples": [example.to_dict() for example in self.examples],
        }


def format_names() -> list[str]:
    """Names of the formats on disk (folder names), sorted."""
    return sorted(p.name for p in FORMATS_DIR.iterdir() if (p / "format.json").is_file())


@cache
def load_formats() -> tuple[Format, ...]:
    """Every format of the library, by name (once; the result is immutable)."""
    return tuple(load_format(name) for name in format_names())


@cache
def format_index() -> Mapping[str, tuple[Mapping, tuple[str, ...]]]:
    """Each format's response template (as data) and signature, by name, read without its examples:
    what finding the formats a pair of templates is needs, before loading only those (loading a
    preset's format renders its recordings' prompts)."""
    index = {}
    for name in format_names():
        meta = read_json_file(FORMATS_DIR / name / "format.json")
        text = load_preset(meta["preset"]).response_template if meta.get("preset") else \
            (FORMATS_DIR / name / "response_template.json").read_text(encoding="utf-8")
        index[name] = (frozen(json.loads(text)), tuple(meta.get("signature", [])))
    return MappingProxyType(index)


@cache
def load_format(name: str) -> Format:
    """Load `formats/<name>/` (once). An unknown name or a broken folder is a ValueError that says
    which formats exist or what is wrong, and where."""
    names = format_names()
    if name not in names:
        raise ValueError(f"No format {name!r}. Formats: {', '.join(names)}")
    folder = FORMATS_DIR / name
    meta = read_json_file(folder / "format.json")
    _known_keys(meta, _FORMAT_KEYS, folder / "format.json")
    examples: list[FormatExample] = []
    if meta.get("preset"):
        preset = load_preset(meta["preset"])
        text = preset.response_template
        examples += _preset_examples(meta["preset"])
    else:
        text = (folder / "response_template.json").read_text(encoding="utf-8")
    loaded = compile_spec(json.loads(text), text)
    if not loaded.ok:
        raise ValueError(f"{folder}: the response template does not load: {loaded.diagnostics[0].message}")
    examples_file = folder / "examples.json"
    if examples_file.is_file():
        for item in read_json_file(examples_file)["examples"]:
            _known_keys(item, _EXAMPLE_KEYS, examples_file)
            examples.append(_example(item))
    if not examples:
        raise ValueError(f"{folder}: a format needs examples (examples.json, or a preset's recordings).")
    catalogue = load_limits()
    unknown = [i for i in meta.get("limits", []) if i not in catalogue]
    if unknown:
        raise ValueError(f"{folder / 'format.json'}: unknown limits {unknown}. Known: {sorted(catalogue)}")
    spec = loaded.spec or {}
    return Format(
        name=name,
        title=meta["title"],
        description=meta["description"],
        models=tuple(meta.get("models", [])),
        response_template=frozen(spec),
        response_template_text=text,
        examples=tuple(examples),
        limits=tuple(str(catalogue[i]) for i in meta.get("limits", [])),
        portable=not any(scan(pattern) for _, pattern in spec_patterns(spec)),
        stream_safe=bool(meta.get("stream_safe", True)),
        signature=tuple(meta.get("signature", [])),
        limit_ids=tuple(meta.get("limits", [])),
        preset=meta.get("preset", ""),
        variations=frozen(meta.get("variations", {})),
        sources=tuple(meta.get("sources", [])),
    )


def claims_for_template(spec: Mapping) -> tuple[str, dict] | None:
    """The library format whose response template `spec` is (equal as data), with what it claims its
    models write (`variations`); None when it is none of them."""
    wanted = json.dumps(thawed(spec), sort_keys=True)
    for name, (template, _) in format_index().items():
        if json.dumps(thawed(template), sort_keys=True) == wanted:
            return name, thawed(read_json_file(FORMATS_DIR / name / "format.json").get("variations", {}))
    return None


@cache
def load_limits() -> Mapping[str, Limit]:
    """What the response-template spec cannot express, by id (`formats/limits.json`), in file order."""
    data = read_json_file(LIMITS_FILE)["limits"]
    return frozen({item["id"]: Limit(**item) for item in data})


def _example(item: Mapping) -> FormatExample:
    return FormatExample(
        name=item["name"],
        output=item["output"],
        message=frozen(item["message"]),
        tools=None if item.get("tools") is None else frozen(item["tools"]),
        prefix=item.get("prefix"),
        description=item.get("description", ""),
    )


def _preset_examples(name: str) -> list[FormatExample]:
    """A preset's recordings as examples: each with its case's tools, and the case rendered as the
    preset renders it as the prefix (the start anchor and any prefill are in the prompt)."""
    preset = load_preset(name)
    cases = {case.name: case for case in reversed(preset.cases)}  # the first of a name, as a workspace finds it
    kwargs = passed_kwargs(preset.kwarg_specs())
    out = []
    for recording in preset.recordings:
        case = cases.get(recording.case)
        if recording.expected is None or case is None:
            continue
        rendered = render_case(preset.chat_template, case, dict(preset.special_tokens), kwargs)
        if not rendered.ok:
            raise ValueError(f"Preset {name!r}: case {case.name!r} does not render: {rendered.diagnostics[0].message}")
        out.append(FormatExample(
            name=recording.name, output=recording.output, message=frozen(recording.expected),
            tools=None if case.tools is None else frozen(case.tools), prefix=rendered.prompt,
            description=recording.description,
        ))  # fmt: skip
    return out


def _known_keys(data: Any, known: set[str], path: Path) -> None:
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object")
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"{path}: unknown keys {unknown}. Known: {sorted(known)}")
