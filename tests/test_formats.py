"""The format library: every format loads, every example parses to its expected message with
transformers' `parse_response` and streams (in many chunkings) to the same, the loader refuses
broken folders with clear messages, and `python -m engine formats` lists, prints and checks it."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
from transformers.utils.chat_parsing import parse_response

from engine import formats as library
from engine.checks.examples import check_examples
from engine.formats import FormatExample, load_format, load_formats, load_limits
from engine.presets import load_preset
from tests.conftest import ROOT, engine_process

FORMATS = [f.name for f in load_formats()]
# Random chunkings per example: the 1-character, fixed-size and delimiter-aimed splits find what
# streaming breaks; 20 seeded random ones on top keep the whole library under a few seconds.
RANDOM_SPLITS = 20


def test_the_library_is_in_a_stable_order_with_unique_names() -> None:
    assert FORMATS == sorted(FORMATS) and len(set(FORMATS)) == len(FORMATS)
    assert load_formats() is load_formats()  # cached: one library shared by every caller


@pytest.mark.parametrize("name", FORMATS)
def test_every_example_parses_and_streams_to_its_message(name: str) -> None:
    fmt = load_format(name)
    results = check_examples(fmt.response_template, fmt.examples, random_splits=RANDOM_SPLITS)
    assert len(results) == 2 * len(fmt.examples)
    failed = [f"{r.name} {r.subject}: {r.details}" for r in results if r.status != "pass" and r.name == "example.parse"]
    assert not failed, "\n".join(failed)
    # stream_safe is what streaming measures: every example streams to its one-shot message, or one does not.
    unsafe = [f"{r.subject}: {r.details}" for r in results if r.status != "pass" and r.name == "example.streaming"]
    assert fmt.stream_safe == (not unsafe), "\n".join(unsafe) or f"{name} says it is not stream-safe, but every example streams"


@pytest.mark.parametrize("name", FORMATS)
def test_every_format_is_described_with_models_and_a_signature_its_examples_show(name: str) -> None:
    fmt = load_format(name)
    assert fmt.title and len(fmt.description) > 40 and fmt.models
    assert all(re.fullmatch(r"[\w.-]+/[\w.-]+", model) for model in fmt.models), fmt.models
    texts = [example.output + (example.prefix or "") for example in fmt.examples]
    for literal in fmt.signature:
        assert any(literal in text for text in texts), f"{literal!r} is in no example of {name}"
    # A format calls tools: at least one example has a tool call.
    assert any(example.message.get("tool_calls") for example in fmt.examples)
    # What the spec cannot express is said where it applies: a format without the portable subset says why.
    if not fmt.portable:
        assert "regex" in fmt.description.lower() or "python" in fmt.description.lower()


def test_a_format_is_immutable_and_hands_out_copies() -> None:
    fmt = load_format(FORMATS[0])
    with pytest.raises(dataclasses.FrozenInstanceError):
        fmt.name = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        fmt.response_template["fields"] = {}  # type: ignore[index]
    spec = fmt.spec()
    spec["fields"].clear()
    assert fmt.spec()["fields"] and json.loads(fmt.response_template_text) == fmt.spec()
    message = fmt.examples[0].expected()
    message.clear()
    assert fmt.examples[0].expected()


def test_a_presets_format_is_the_preset_itself() -> None:
    """Data has one home: the qwen3 format is the preset's response template and recordings."""
    fmt, preset = load_format("qwen3"), load_preset("qwen3")
    assert fmt.preset == "qwen3" and fmt.response_template_text == preset.response_template
    recorded = [r for r in preset.recordings if r.expected is not None]
    assert [e.name for e in fmt.examples[: len(recorded)]] == [r.name for r in recorded]
    first = fmt.examples[0]
    assert first.output == recorded[0].output and first.expected() == recorded[0].expected
    # The prefix is the case as the preset renders it: the generation prompt is at its end.
    assert first.prefix is not None and first.prefix.endswith("<|im_start|>assistant\n")


def test_the_examples_check_fails_on_a_wrong_message_and_a_broken_template() -> None:
    fmt = load_format("hermes")
    good = fmt.examples[0]
    wrong = dataclasses.replace(good, message={**good.expected(), "content": "something else"})
    results = check_examples(fmt.response_template_text, [wrong], random_splits=0)
    parse = next(r for r in results if r.name == "example.parse")
    assert parse.status == "fail" and "in content:" in parse.details and "something·else" in parse.details
    broken = check_examples('{"fields": {}}', [good])
    assert [r.status for r in broken] == ["fail"] and "does not load" in broken[0].details


def test_the_examples_check_finds_a_template_that_streams_differently() -> None:
    """One field's open literals overlap ("call" ends inside "<tool_call>"): in one piece the parse
    succeeds; cut after "<tool_call", "call" opens the region first and the JSON no longer parses."""
    spec = {
        "defaults": {"role": "assistant"},
        "start_anchor": "<|im_start|>assistant\n",
        "fields": {
            "tool_calls": {"open": ["<tool_call>", "call"], "close": "</tool_call>", "content": "json", "repeats": True},
            "content": {"content": "text", "repeats": True, "join": ""},
        },
    }
    example = FormatExample("overlap", 'Hi <tool_call>{"a": 1}</tool_call>',
                            {"role": "assistant", "content": "Hi", "tool_calls": [{"a": 1}]})
    results = {r.name: r for r in check_examples(json.dumps(spec), [example], random_splits=0)}
    assert results["example.parse"].status == "pass"
    streaming = results["example.streaming"]
    assert streaming.status == "fail" and "'Hi·<tool_call' | '>{" in streaming.details


def test_portable_is_read_off_the_regexes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _format_folder(tmp_path, monkeypatch, "lookbehind")
    spec = json.loads((folder / "response_template.json").read_text())
    spec["fields"]["tool_calls"]["close_pattern"] = r"(?<=\})</tool_call>"
    del spec["fields"]["tool_calls"]["close"]
    (folder / "response_template.json").write_text(json.dumps(spec))
    assert load_format("lookbehind").portable is False
    assert load_format("hermes").portable is True


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda f: (f / "format.json").write_text(json.dumps({**_meta(f), "colour": "red"})), "unknown keys ['colour']"),
        (lambda f: (f / "format.json").write_text(json.dumps({**_meta(f), "limits": ["no-such-limit"]})), "unknown limits"),
        (lambda f: (f / "examples.json").write_text('{"examples": []}'), "needs examples"),
        (lambda f: (f / "examples.json").write_text('{"examples": [}'), "invalid JSON at line 1"),
        (lambda f: (f / "response_template.json").write_text('{"fields": {}}'), "does not load"),
    ],
)
def test_a_broken_folder_is_refused_saying_what_and_where(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change, message) -> None:
    folder = _format_folder(tmp_path, monkeypatch, "broken")
    change(folder)
    with pytest.raises(ValueError, match=re.escape(message)):
        load_format("broken")


def test_an_unknown_format_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="No format 'nope'. Formats: .*hermes"):
        load_format("nope")


def test_every_limit_is_documented_with_its_example() -> None:
    page = (ROOT / "docs" / "spec-limits.md").read_text(encoding="utf-8")
    headings = re.findall(r"^## (\S+)$", page, flags=re.MULTILINE)
    assert [h for h in headings if h in load_limits()] == list(load_limits()), "one section per limit, in file order"
    for limit in load_limits().values():
        section = page.split(f"## {limit.id}\n", 1)[1].split("\n## ", 1)[0]
        assert "```" in section, f"the section on {limit.id} shows no minimal example"
        assert limit.feature and limit.example


def test_the_docs_table_is_the_library() -> None:
    """docs/presets-and-formats.md's table says, for each format, what the loader says."""
    page = (ROOT / "docs" / "presets-and-formats.md").read_text(encoding="utf-8")
    rows = {m[0]: m[1] for m in re.findall(r"^\| `([\w.-]+)` \|(.*)$", page, flags=re.MULTILINE)}
    assert sorted(rows) == FORMATS
    for fmt in load_formats():
        models, examples, stream_safe, portable, limits = [cell.strip() for cell in rows[fmt.name].split("|")[:5]]
        assert models.split(", ") == [m.split("/")[1] for m in fmt.models]
        assert int(examples) == len(fmt.examples)
        assert (stream_safe, portable) == ("yes" if fmt.stream_safe else "no", "yes" if fmt.portable else "no")
        assert re.findall(r"\[`([\w-]+)`\]", limits) == list(fmt.limit_ids)


# Each limit, shown on its minimal example: the straightforward template gets it wrong (or fails),
# so the limit is real; the library's workaround for it is verified by that format's examples.
LIMIT_DEMOS = {
    "json-without-delimiters": (
        {"tool_calls": {"content": "json", "transform": {"function": "{content}"}}},
        'It is sunny.<|eot_id|>'),
    "delimiter-in-value": (
        {"tool_calls": {"open": "[", "close": "<|eot_id|>", "content": "python-call-list"}},
        "[get_weather(city='Paris')]<|eot_id|>"),
    "call-list-without-brackets": (
        {"tool_calls": {"open": "<function_calls>", "close": "</function_calls>", "content": "python-call-list"}},
        "<function_calls>\nget_weather(city='Paris')\nget_time()\n</function_calls>"),
    "python-literals": (
        {"tool_calls": {"open": "<call>", "close": "</call>", "content": "xml-inline",
                        "content_args": {"tag_pattern": "(?P<key>\\w+)=(?P<value>'[^']*'|\\S+)",
                                         "value_parser": {"name": "json", "args": {"string_delims": [["'", "'"]], "allow_non_json": True}}}}},
        "<call>label=None note='it\\'s'</call>"),
    "transform-fallback": (
        {"tool_calls": {"open": "[TOOL_CALLS]", "content": "json", "transform_each": True,
                        "transform": {"id": "{id}", "function": {"name": "{name}", "arguments": "{arguments}"}}}},
        '[TOOL_CALLS][{"name": "get_time", "arguments": {}}]'),
    "shared-delimiter": (
        {"tool_calls": {"open_pattern": "\\[TOOL_CALLS\\](?P<name>\\w+)\\[ARGS\\]", "close": ["[TOOL_CALLS]", "</s>"],
                        "content": "json", "repeats": True, "transform": {"function": {"name": "{name}", "arguments": "{content}"}}},
         "content": {"close": "</s>", "content": "text", "repeats": True, "join": ""}},
        '[TOOL_CALLS]a[ARGS]{}[TOOL_CALLS]b[ARGS]{}</s>'),
    "drop-text": (
        {"content": {"close": "<|end_of_text|>", "content": "text"}},
        "<response>Hello!</response><|end_of_text|>"),
    "json-per-line": (
        {"tool_calls": {"open": "<tool_calls>", "close": "</tool_calls>", "content": "json"}},
        '<tool_calls>\n{"name": "a", "arguments": {}}\n{"name": "b", "arguments": {}}\n</tool_calls>'),
    "map-to-list": (
        {"tool_calls": {"open": "<|tools_prefix|>", "close": "<|tools_suffix|>", "content": "json", "transform_each": True,
                        "transform": {"function": {"name": "{name}", "arguments": "{arguments}"}}}},
        '<|tools_prefix|>[{"get_weather": {"city": "Bern"}}]<|tools_suffix|>'),
    "json-string-arguments": (
        {"tool_calls": {"open": "<tool_call>", "close": "</tool_call>", "content": "json", "repeats": True,
                        "transform": {"function": "{content}"}}},
        '<tool_call>{"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}</tool_call>'),
}


def test_every_limit_has_a_demonstration() -> None:
    assert sorted(LIMIT_DEMOS) == sorted(load_limits())


@pytest.mark.parametrize("limit", sorted(LIMIT_DEMOS))
def test_a_limit_is_real(limit: str) -> None:
    """The plain template cannot read the limit's minimal example as it means: it fails, or it
    gives something other than the intended calls and content."""
    fields, output = LIMIT_DEMOS[limit]
    spec = {"start_anchor": "<|im_start|>assistant\n", "fields": fields}
    try:
        message = parse_response(output, spec, prefix="")
    except (ValueError, KeyError):
        return  # the parse fails: the spec cannot say it this way
    calls = message.get("tool_calls") or []
    if limit == "python-literals":
        assert calls == {"label": "None", "note": "it\\"}
    elif limit == "shared-delimiter":
        assert [c["function"]["name"] for c in calls] == ["a"] and message["content"] == "b[ARGS]{}"
    elif limit == "drop-text":
        assert message["content"] == "<response>Hello!</response>"
    elif limit == "json-string-arguments":
        assert calls[0]["function"]["arguments"] == '{"city": "Paris"}'
    else:
        pytest.fail(f"{limit}: the plain template parsed {message}")


def test_cli_lists_the_library(cli) -> None:
    result = cli("formats")
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert lines[0].split()[:5] == ["name", "examples", "portable", "stream-safe", "limits"]
    assert [line.split()[0] for line in lines[1:]] == FORMATS


def test_cli_json_has_the_agreed_keys(cli) -> None:
    result = cli("formats", "--json")
    assert result.returncode == 0
    data = json.loads(result.stdout)
    assert [item["name"] for item in data] == FORMATS
    for item in data:
        assert {"name", "description", "response_template", "examples"} <= set(item)
        assert item["response_template"] == load_format(item["name"]).spec()
        assert all({"output", "message"} <= set(example) for example in item["examples"])


def test_cli_prints_one_format_and_searches(cli) -> None:
    result = cli("formats", "hermes")
    assert result.returncode == 0 and json.loads(result.stdout) == load_format("hermes").spec()
    assert "Hermes" in result.stderr
    searched = cli("formats", "--search", "think qwen3")
    assert "qwen3" in searched.stdout and "hermes" not in searched.stdout
    unknown = cli("formats", "nope")
    assert unknown.returncode == 2 and "Formats: " in unknown.stderr


def test_cli_check_passes_on_the_library_and_fails_on_a_wrong_example(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = cli("formats", "hermes", "--check", "--random-splits", "2")
    assert result.returncode == 0 and "hermes: 5 examples, 10 of 10 checks passed" in result.stderr
    folder = _format_folder(tmp_path, monkeypatch, "wrong")
    examples = json.loads((folder / "examples.json").read_text())
    examples["examples"][0]["message"]["content"] = "not what it says"
    (folder / "examples.json").write_text(json.dumps(examples))
    failed = cli("formats", "wrong", "--check", "--random-splits", "0")
    assert failed.returncode == 1 and "not·what·it·says" in failed.stderr


def test_cli_formats_runs_as_a_real_process() -> None:
    result = engine_process("formats", "--json")
    assert result.returncode == 0 and len(json.loads(result.stdout)) == len(FORMATS)


def _format_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> Path:
    """A library in `tmp_path`: the real limits, hermes, and a copy of hermes named `name`."""
    source = library.FORMATS_DIR
    (tmp_path / "limits.json").write_bytes((source / "limits.json").read_bytes())
    for folder in {"hermes", name}:
        (tmp_path / folder).mkdir()
        for file in (source / "hermes").iterdir():
            (tmp_path / folder / file.name).write_bytes(file.read_bytes())
    monkeypatch.setattr(library, "FORMATS_DIR", tmp_path)
    monkeypatch.setattr(library, "LIMITS_FILE", tmp_path / "limits.json")
    for cached in (library.load_format, library.load_formats, library.load_limits):
        cached.cache_clear()
    return tmp_path / name


@pytest.fixture(autouse=True)
def _fresh_caches():
    """Tests that point the loader at another folder must not leave its formats in the cache."""
    yield
    for cached in (library.load_format, library.load_formats, library.load_limits):
        cached.cache_clear()


def _meta(folder: Path) -> dict:
    return json.loads((folder / "format.json").read_text())
