"""Every private transformers name the engine uses, in one place.

transformers' public API renders (`render_jinja_template`) and parses (`ResponseParser`,
`parse_response`, `load_response_template`). A few things the playground needs have no public
name yet; each is imported here, and only here, with why it is needed.
`tests/test_transformers_compat.py` pins what each one means, so a transformers upgrade that
renames or changes one fails there with a message naming it, instead of somewhere deep in a check.
"""

from __future__ import annotations

from typing import Any

import regex
from transformers.utils.chat_parsing import content_parsers as _content_parsers
from transformers.utils.chat_parsing import response_templates as _response_templates
from transformers.utils.chat_parsing.content_parsers import _PLACEHOLDER
from transformers.utils.chat_template_utils import (
    _REASONING_FIELDS,
    _alias_reasoning_fields,
    _compile_jinja_template,
    _get_template_literal_text,
    _get_template_variables,
    _normalize_chat_messages,
    _plain_template_data,
)

from .regex_bounds import bounded_regex

# The message names transformers treats as one reasoning field (it copies a message's reasoning
# under all of them before rendering): reading any of them reads all of them.
REASONING_FIELDS: tuple[str, ...] = tuple(_REASONING_FIELDS)

# `{name}` / `{content.path}` placeholders in a response template's `transform` (the lints find
# named groups no transform uses with the same pattern transformers resolves them with).
TRANSFORM_PLACEHOLDER = _PLACEHOLDER


def normalize_messages(messages: Any) -> list[dict]:
    """Messages as `apply_chat_template` prepares them before rendering (objects to dicts, keys
    whose value is None dropped). `render` uses it so the playground renders exactly the same input."""
    return _normalize_chat_messages(messages)


def compile_template(source: str) -> Any:
    """transformers' compiled Jinja template (its sandboxed environment, trim_blocks, lstrip_blocks,
    the `{% generation %}` tag and the callables it adds). Raises jinja2.TemplateSyntaxError."""
    return _compile_jinja_template(source)


def template_variables(source: str) -> frozenset[str]:
    """The undeclared variables a chat template reads (what kwargs it can take)."""
    return _get_template_variables(source)


def template_literal_text(source: str) -> str:
    """The literal strings of a chat template (its raw text and every string constant) joined with
    NUL characters: what transformers searches for the control tokens a template writes
    (`sanitize_control_tokens`). The token checks find the special-looking texts a template writes in it."""
    return _get_template_literal_text(source)


def template_inputs(messages: Any, kwargs: dict) -> tuple[Any, dict]:
    """The messages and kwargs exactly as `render_jinja_template` hands them to a template: plain
    JSON data, reasoning aliased under every name. For lints that render an edited copy of the AST."""
    plain = _alias_reasoning_fields(_plain_template_data(_normalize_chat_messages(messages)))
    return plain, _plain_template_data(kwargs)


def plain_data(value: Any) -> Any:
    """`value` rebuilt from plain JSON types, as transformers does for everything a template sees."""
    return _plain_template_data(value)


def consumed_position(parser: Any) -> int:
    """How far into its buffer (prompt after the anchor, then the output) a `ResponseParser` has
    committed text; everything after it is held back as a possible delimiter. There is no public
    API for this; the trace needs it to tile the text the parser consumed without events."""
    position = getattr(parser, "_pos", None)
    if not isinstance(position, int):
        raise TransformersChanged(
            "transformers' ResponseParser no longer exposes its consumed position (`_pos`); "
            "engine.transformers_compat.consumed_position needs updating for this transformers version."
        )
    return position


def gguf_header(path: str) -> Any:
    """transformers' reader of a GGUF file's header: its architecture and tensor table (names,
    shapes, types), read without the tensor data or the vocabulary (milliseconds, where the `gguf`
    package's reader walks every string of the file). The local runner sizes a GGUF with it before
    converting. Raises ValueError for a file that is not GGUF."""
    from transformers.integrations.gguf.reader import GgufHeader

    return GgufHeader.from_file(path)


def saveable_unpacked_gguf(model: Any) -> None:
    """Let `save_pretrained` write a model loaded from a GGUF file with every weight unpacked
    (`GgufConfig(dequantize=True)`). transformers keeps its GGUF quantizer on such a model and then
    refuses to save it ("quantized with gguf and is not serializable"), though its weights are plain
    float tensors by then: the quantizer and its config entry are dropped, after checking that no
    weight is still packed."""
    import torch

    quantizer = getattr(model, "hf_quantizer", None)
    if quantizer is None:
        return
    config = getattr(quantizer, "quantization_config", None)
    if getattr(config, "quant_method", None) is None or str(getattr(config.quant_method, "value", config.quant_method)) != "gguf":
        raise TransformersChanged("engine.transformers_compat.saveable_unpacked_gguf expected a GGUF quantizer "
                                  f"on the model, found {type(quantizer).__name__}.")
    packed = [name for name, tensor in model.state_dict().items() if not tensor.is_floating_point()]
    if not getattr(config, "dequantize", False) or packed or not all(
            isinstance(p, torch.nn.Parameter) for p in model.parameters()):
        raise TransformersChanged("A GGUF model still holds packed weights"
                                  + (f" ({', '.join(packed[:3])})" if packed else "") + "; it cannot be saved as safetensors.")
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config


class TransformersChanged(RuntimeError):
    """A private name this module relies on is gone or means something else in this transformers."""


# transformers' chat-parsing modules compile an author's patterns (`response_templates`: open,
# close and start-anchor patterns) and match them (`content_parsers`: an xml-inline `tag_pattern`,
# json `string_delims`) through their module global `re`, which is the `regex` module. There is no
# public way to give those calls a time limit, so the engine swaps that global for
# `regex_bounds.bounded_regex`: the same module, with every compile and match bounded (the
# behaviour is otherwise identical). Done once, when the engine is imported.
REGEX_USERS = (_response_templates, _content_parsers)


def install_regex_bounds() -> None:
    """Make transformers' response-template parsing compile and match author regexes with bounds."""
    for module in REGEX_USERS:
        current = getattr(module, "re", None)
        if current is bounded_regex:
            continue
        if current is not regex:
            raise TransformersChanged(
                f"{module.__name__} no longer uses the `regex` module as `re`; "
                "engine.transformers_compat.install_regex_bounds needs updating for this transformers version."
            )
        module.re = bounded_regex


install_regex_bounds()


# What docs/architecture.md's "Dependencies on transformers' private names" lists, name by name.
PRIVATE_NAMES = (
    "transformers.utils.chat_template_utils._normalize_chat_messages",
    "transformers.utils.chat_template_utils._compile_jinja_template",
    "transformers.utils.chat_template_utils._get_template_variables",
    "transformers.utils.chat_template_utils._get_template_literal_text",
    "transformers.utils.chat_template_utils._alias_reasoning_fields",
    "transformers.utils.chat_template_utils._plain_template_data",
    "transformers.utils.chat_template_utils._REASONING_FIELDS",
    "transformers.utils.chat_parsing.content_parsers._PLACEHOLDER",
    "transformers.utils.chat_parsing.ResponseParser._pos",
    "transformers.utils.chat_parsing.response_templates.re",
    "transformers.utils.chat_parsing.content_parsers.re",
    "transformers.integrations.gguf.reader.GgufHeader",
    "transformers.modeling_utils.PreTrainedModel.hf_quantizer",
)
