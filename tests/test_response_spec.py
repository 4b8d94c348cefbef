"""Response templates from the editor: JSON errors and transformers' validation, located in the JSON."""

from __future__ import annotations

import json

from engine.response_spec import key_offsets, load_response_spec
from tests.trace_cases import HARMONY, SMOL, dump


def test_valid_specs_load_without_diagnostics() -> None:
    for spec in (SMOL, HARMONY):
        loaded = load_response_spec(dump(spec))
        assert loaded.ok and loaded.diagnostics == [] and loaded.spec == spec
        assert set(loaded.template.fields) == set(spec["fields"])


def test_json_syntax_error_line_and_column() -> None:
    text = '{\n  "start_anchor": "x",\n  "fields": {"content": {"close": "y",}}\n}'
    loaded = load_response_spec(text)
    [d] = loaded.diagnostics
    assert not loaded.ok and loaded.spec is None
    assert (d.line, d.column) == (3, 39) and "Invalid JSON" in d.message and d.hint


def test_python_literals_get_a_hint() -> None:
    [d] = load_response_spec('{"fields": {"c": {"repeats": True}}}').diagnostics
    assert "true, false and null" in d.hint


def test_single_backslash_regex_gets_a_hint() -> None:
    [d] = load_response_spec('{"start_anchor": "a", "fields": {"c": {"close_pattern": "\\s*"}}}').diagnostics
    assert "doubled" in d.hint


def locate(text: str, needle: str) -> tuple[int, int]:
    before = text[: text.index(needle)]
    return before.count("\n") + 1, len(before) - (before.rfind("\n") + 1) + 1


def test_transformers_messages_point_at_the_key_they_name() -> None:
    spec = json.loads(dump(SMOL))
    spec["fields"]["tool_calls"]["open_pattern"] = "<tool_call("
    del spec["fields"]["tool_calls"]["open"]
    text = json.dumps(spec, indent=2)
    [d] = load_response_spec(text).diagnostics
    assert "invalid open_pattern regex" in d.message
    assert (d.line, d.column) == locate(text, '"open_pattern"')
    assert d.snippet.strip().startswith('"open_pattern"')


def test_unknown_field_key() -> None:
    spec = json.loads(dump(SMOL))
    spec["fields"]["content"]["clsoe"] = "x"
    text = json.dumps(spec, indent=2)
    [d] = load_response_spec(text).diagnostics
    assert "unknown keys ['clsoe']" in d.message and (d.line, d.column) == locate(text, '"clsoe"')


def test_named_group_without_transform_and_two_implicit_fields() -> None:
    text = json.dumps({"start_anchor": "a", "fields": {"x": {"open_pattern": "<(?P<n>\\w+)>"}}}, indent=2)
    [d] = load_response_spec(text).diagnostics
    assert "named group" in d.message and (d.line, d.column) == locate(text, '"open_pattern"')
    text = json.dumps({"start_anchor": "a", "fields": {"a": {}, "b": {"close": "x"}}}, indent=2)
    [d] = load_response_spec(text).diagnostics
    assert "At most one field" in d.message and (d.line, d.column) == locate(text, '"b"')


def test_top_level_problems() -> None:
    [d] = load_response_spec('{\n"fields": {"c": {}}\n}').diagnostics
    assert "start_anchor" in d.message
    text = '{\n "start_anchor": "a",\n "fields": {"c": {}},\n "default": {}\n}'
    [d] = load_response_spec(text).diagnostics
    assert "Unknown keys" in d.message and d.line == 4
    [d] = load_response_spec("[1, 2]").diagnostics
    assert "must be a dict" in d.message


def test_content_args_regex_checked_at_load() -> None:
    spec = {"start_anchor": "a", "fields": {"t": {"open": "<t>", "close": "</t>", "content": "xml-inline",
                                                   "content_args": {"tag_pattern": "<(?P<key>\\w+>"}}}}
    text = json.dumps(spec, indent=2)
    loaded = load_response_spec(text)
    assert loaded.ok  # transformers accepts it; it would only fail when a region closes
    [d] = loaded.diagnostics
    assert "tag_pattern" in d.message and (d.line, d.column) == locate(text, '"tag_pattern"')


def test_key_offsets_paths() -> None:
    text = '{"a": [1, {"b": "x"}], "c": {"d": null}}'
    offsets = key_offsets(text)
    assert text[offsets[("a", 1, "b")] :].startswith('"b"')
    assert text[offsets[("c", "d")] :].startswith('"d"')
    assert key_offsets("{bad") == {}
