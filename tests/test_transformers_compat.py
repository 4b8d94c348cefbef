"""Every private transformers name the engine relies on (engine/transformers_compat.py), pinned to
what it means today. When an upgrade changes one, the failing test names it."""

from __future__ import annotations

import jinja2
import jinja2.sandbox
import pytest
from transformers.utils.chat_parsing import ResponseParser

from engine import transformers_compat as compat
from tests.trace_cases import CHATML_PROMPT, SMOL


def test_normalize_messages_drops_none_values_as_apply_chat_template_does() -> None:
    messages = [{"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "f"}}]}]
    assert compat.normalize_messages(messages) == [{"role": "assistant", "tool_calls": [{"function": {"name": "f"}}]}]


def test_compile_template_is_the_sandboxed_environment_with_trim_and_lstrip_blocks() -> None:
    template = compat.compile_template("{% if true %}\n  x{% endif %}")
    environment = template.environment
    assert environment.trim_blocks and environment.lstrip_blocks
    assert isinstance(environment, jinja2.sandbox.ImmutableSandboxedEnvironment)
    assert any("AssistantTracker" in name for name in environment.extensions)  # the {% generation %} tag
    with pytest.raises(jinja2.TemplateSyntaxError):
        compat.compile_template("{% if %}")


def test_template_variables_are_the_undeclared_names() -> None:
    assert compat.template_variables("{{ bos_token }}{% set x = 1 %}{{ x }}{% if enable_thinking %}{% endif %}") == {
        "bos_token", "enable_thinking",
    }  # fmt: skip


def test_template_literal_text_is_the_literals_joined_by_nul() -> None:
    text = compat.template_literal_text("<s>{{ '<|im_start|>' + role }}{% if x %}</s>{% endif %}")
    assert set(text.split("\0")) >= {"<s>", "<|im_start|>", "</s>"}
    assert "<s></s>" not in text  # two literals never join into one match


def test_template_inputs_alias_reasoning_and_keep_plain_data() -> None:
    messages, kwargs = compat.template_inputs([{"role": "assistant", "reasoning": "hmm", "content": "hi"}], {"flag": True})
    assert messages[0]["reasoning_content"] == messages[0]["thinking"] == "hmm"
    assert kwargs == {"flag": True}
    assert set(compat.REASONING_FIELDS) == {"reasoning_content", "thinking", "reasoning"}

    class Rich(str):  # a subclass could carry methods the sandbox does not know about
        def write(self) -> None: ...

    assert type(compat.plain_data({"a": Rich("x")})["a"]) is str


def test_transform_placeholder_matches_whole_string_paths() -> None:
    assert compat.TRANSFORM_PLACEHOLDER.fullmatch("{content.args}").group(1) == "content.args"
    assert compat.TRANSFORM_PLACEHOLDER.fullmatch("a {name}") is None


def test_consumed_position_is_how_far_the_parser_committed() -> None:
    """If transformers changes what `ResponseParser._pos` means, this fails loudly rather than
    letting highlighting drift."""
    parser = ResponseParser(SMOL, prefix="")
    parser.feed("Hello <thi")
    assert compat.consumed_position(parser) == len("Hello ")
    parser.feed("nk>abc")
    assert compat.consumed_position(parser) == len("Hello <think>abc")
    parser = ResponseParser(SMOL, prefix=CHATML_PROMPT + "<think>")
    assert compat.consumed_position(parser) == len("<think>")  # the buffer starts after the anchor


def test_a_missing_private_attribute_is_named() -> None:
    with pytest.raises(compat.TransformersChanged, match="_pos"):
        compat.consumed_position(object())


def test_every_private_name_listed_exists() -> None:
    import importlib

    for dotted in compat.PRIVATE_NAMES:
        module_name, _, name = dotted.rpartition(".")
        if name in ("_pos", "hf_quantizer"):
            continue  # instance attributes, pinned above and in tests/test_real_model.py
        module = importlib.import_module(module_name)
        assert hasattr(module, name), f"transformers no longer has {dotted}"
