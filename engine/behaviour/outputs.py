"""The response-template side of a behaviour diff: the same model outputs parsed by both versions
(transformers' `parse_response`, each after the prompt its own chat template renders), and which
messages change. The outputs are the author's recordings and the examples of the library formats
the templates are: a format whose response template is one of the two, else the formats whose every
signature text the chat template writes (at most a few)."""

from __future__ import annotations

import json
from collections.abc import Callable

from transformers.utils.chat_parsing import parse_response

from .. import limits
from ..cases import Case, Recording
from ..diagnostics import Diagnostic
from ..formats import Format, format_index, load_format
from ..presets import thawed
from ..regex_bounds import regex_budget
from ..response_spec import LoadedSpec, load_response_spec
from .result import MessageDiff, Version

# Formats whose examples are parsed when neither response template is one of the library's.
MAX_FORMATS = 3

Prompt = Callable[[Version, Case], "str | None"]


def compare_outputs(base: Version, new: Version, recordings: list[Recording], cases: dict[str, Case],
                    formats: bool, prompt: Prompt) -> tuple[list[MessageDiff], list[Diagnostic]]:
    """Every output parsed by both response templates (none when neither version has one)."""
    if base.response_template is None and new.response_template is None:
        return [], []
    specs = [_load(v) for v in (base, new)]
    problems = [Diagnostic("warning", f"{v.label}: the response template does not load: {s.diagnostics[0].message}",
                           "response_template") for v, s in zip((base, new), specs)
                if s is not None and not s.ok and s.diagnostics]  # fmt: skip
    out = []
    for recording in recordings:
        case = cases.get(recording.case)
        if case is None:
            continue
        parsed = [_parse(spec, recording.output, prompt(version, case), case.tools)
                  for version, spec in zip((base, new), specs)]  # fmt: skip
        out.append(_diff(recording.name, "recording", recording.output, parsed))
    if formats:
        for fmt in library_formats(base, new):
            for example in fmt.examples:
                parsed = [_parse(spec, example.output, example.prefix or "", example.tool_list()) for spec in specs]
                out.append(_diff(f"{fmt.name}: {example.name}", "example", example.output, parsed))
    return out, problems


def library_formats(base: Version, new: Version) -> list[Format]:
    """The library formats whose examples both versions parse: one whose response template is either
    version's, else those whose every signature text either chat template writes (at most a few)."""
    specs = []
    for version in (base, new):
        try:
            specs.append(json.loads(version.response_template) if version.response_template else None)
        except ValueError:
            specs.append(None)
    index = format_index()
    names = [name for name, (spec, _) in index.items() if thawed(spec) in specs]
    if not names:
        texts = " ".join(_texts(base) + _texts(new))
        names = [name for name, (_, signature) in index.items()
                 if signature and all(s in texts for s in signature)][:MAX_FORMATS]
    return [load_format(name) for name in names]


def _texts(version: Version) -> list[str]:
    chat = version.chat_template
    return list(chat.values()) if isinstance(chat, dict) else [chat or ""]


def _load(version: Version) -> LoadedSpec | None:
    return None if version.response_template is None else load_response_spec(version.response_template)


def _parse(spec: LoadedSpec | None, output: str, prefix: str | None, tools: list | None) -> tuple[dict | None, str | None]:
    """The message `output` parses to, or why there is none."""
    if spec is None:
        return None, "no response template"
    if not spec.ok:
        return None, "the response template does not load"
    if prefix is None:
        return None, "the conversation does not render"
    with regex_budget(limits.REGEX_SECONDS):
        try:
            return parse_response(output, spec.template, prefix=prefix, tools=tools), None
        except Exception as e:  # noqa: BLE001 - the parser's message is what changed
            return None, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]


def _diff(name: str, source: str, output: str, parsed: list[tuple[dict | None, str | None]]) -> MessageDiff:
    (before, before_error), (after, after_error) = parsed
    fields = []
    if before is not None and after is not None:
        fields = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    changed = bool(fields) or (before is None) != (after is None) or before_error != after_error
    return MessageDiff(name, source, output, changed, before, after, before_error, after_error, fields)
