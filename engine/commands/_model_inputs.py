"""What the commands read the same way (`check`, `render`, `draft`, `trace`): a model folder as it
sits in a model repo, the files and flags that override it, the special tokens and the tokenizer.

A folder is read with the Hub's precedence (`engine.hub.load_folder`: `chat_template.jinja` and
`additional_chat_templates/`, else a `chat_template` in `tokenizer_config.json`, else
`chat_template.json`; the response template and the special tokens from `tokenizer_config.json`),
and its `tokenizer.json` is the tokenizer. `--chat-template`, `--response-template` and
`--tokenizer` replace what the folder has; the special tokens follow the one rule of
`engine.tokens.special` (the tokenizer's own, else the template files', with `--special-tokens` over
both, key by key). Each input keeps its `Origin`, so a finding on line 3 of a chat template kept in
`tokenizer_config.json` is reported at its line in that file (`--format github`)."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..regex_portability import value_start
from ..diagnostics import Diagnostic, line_col
from ..hub.files import CHAT_TEMPLATE_DIR, CHAT_TEMPLATE_FILE, TOKENIZER_CONFIG, special_tokens_of
from ..hub.load import load_folder
from ..render import select_template
from ..response_spec import key_offsets
from ..tokens import TokenizerFiles, read_tokenizer_path, special_tokens_for
from . import UsageError, json_object, read_json, read_text

TOKENIZER_JSON = "tokenizer.json"


@dataclass(frozen=True)
class Origin:
    """The file an input came from (as the author named it) and where in it: the whole file, the
    value at `start` of a JSON file (an object: the input is that slice), or a JSON string there (the
    input is its decoded text)."""

    path: str
    text: str | None = None
    start: int | None = None
    string: bool = False

    def place(self, line: int | None, column: int | None) -> tuple[int | None, int | None]:
        """The (line, column) in the file of a (line, column) in the input."""
        if line is None or self.text is None or self.start is None:
            return line, column
        if not self.string:  # the input is the file's text from `start` on
            offset = self.start
            for _ in range(line - 1):
                offset = self.text.find("\n", offset) + 1
            file_line, file_column = line_col(self.text, offset)
            return file_line, (file_column + column - 1 if column else None)
        raw = _string_offsets(self.text, self.start)
        decoded = json.loads(self.text[self.start : raw[-1] + 1])
        offset = 0
        for _ in range(line - 1):
            offset = decoded.find("\n", offset) + 1
        offset = min(offset + (column or 1) - 1, len(raw) - 1)
        file_line, file_column = line_col(self.text, raw[offset])
        return file_line, (file_column if column else None)


def _string_offsets(text: str, start: int) -> list[int]:
    """For the JSON string literal at `start`: the offset in `text` of each character it decodes to
    (an escaped surrogate pair is one), then of the closing quote."""
    offsets, i = [], start + 1
    while text[i] != '"':
        offsets.append(i)
        if text[i] != "\\":
            i += 1
        elif text[i + 1] != "u":
            i += 2
        else:
            high = 0xD800 <= int(text[i + 2 : i + 6], 16) < 0xDC00
            i += 12 if high and text[i + 6 : i + 8] == "\\u" else 6
    offsets.append(i)
    return offsets


@dataclass
class ModelInputs:
    """The chat template (a text, or named texts), the response template's JSON text, the special
    tokens to render with, the tokenizer's files, problems found reading them (each with its file),
    and where each came from (`origins` by source: chat_template, response_template, tokenizer)."""

    chat_template: str | dict[str, str] | None = None
    response_template: str | None = None
    special_tokens: dict[str, Any] = field(default_factory=dict)
    tokenizer: TokenizerFiles | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    origins: dict[str, Origin] = field(default_factory=dict)
    explicit_tokens: dict[str, Any] | None = None  # --special-tokens
    _chat_origin: Any = None  # how to find the origin of one named template

    def special_tokens_with(self, found: dict[str, Any]) -> dict[str, Any]:
        """The rule of `engine.tokens.special` with the special tokens of other template files (a
        preset's): the tokenizer's own, else `found`, and --special-tokens over both."""
        return special_tokens_for(self.tokenizer.special_tokens if self.tokenizer else None, found, self.explicit_tokens)

    def chat_template_origin(self, name: str | None = None) -> Origin | None:
        """Where the named chat template (None: the only one, or `default`) is in the author's files."""
        return self._chat_origin(name) if self._chat_origin is not None else None

    def one_chat_template(self, name: str | None = None) -> str | None:
        """The chat template to check or draft: the named one, else transformers' choice without tools
        (`default`); its origin becomes `origins["chat_template"]`."""
        if self.chat_template is None:
            return None
        try:
            text, chosen = select_template(self.chat_template, None, name)
        except ValueError as e:
            raise UsageError(str(e)) from None
        if self._chat_origin is not None:
            self.origins["chat_template"] = self._chat_origin(chosen)
        return text


def add_model_inputs(parser: argparse.ArgumentParser, *, chat_template: bool = True, response_template: bool = True,
                     special_tokens: bool = True) -> None:
    """The arguments every command reading a model's files shares."""
    parser.add_argument("model", nargs="?", metavar="MODEL_FOLDER",
                        help="a model folder as in a model repo: chat_template.jinja / chat_template.json / "
                             "tokenizer_config.json (templates, special tokens) / tokenizer.json, read as a Hub load reads them")
    if chat_template:
        parser.add_argument("--chat-template", metavar="FILE", help="a .jinja file (instead of the folder's)")
        parser.add_argument("--template-name", metavar="NAME",
                            help="which of a model's named chat templates (default: transformers' choice)")
    if response_template:
        parser.add_argument("--response-template", metavar="FILE",
                            help='the response template JSON, or a tokenizer_config.json holding it under "response_template"')
    if special_tokens:
        parser.add_argument("--special-tokens", metavar="JSON|FILE",
                            help='e.g. \'{"bos_token": "<s>"}\', or a tokenizer_config.json / special_tokens_map.json; '
                                 "wins, key by key, over the tokenizer's own (default: the tokenizer's, else the folder's)")
    parser.add_argument("--tokenizer", metavar="FILE|FOLDER",
                        help="a tokenizer.json, or a folder with one (default: the model folder's)")


def read_model_inputs(args: argparse.Namespace, *, folder_tokenizer: bool = True) -> ModelInputs:
    """Everything `add_model_inputs` describes, read: the folder first (its tokenizer.json too, unless
    `folder_tokenizer` is off), then the files and flags that override it. A file that cannot be
    read at all is a usage error; what is wrong inside a folder's files is a diagnostic with its
    file and line."""
    inputs = ModelInputs()
    found_tokens: dict[str, Any] = {}
    if getattr(args, "model", None) is not None:
        folder = Path(args.model)
        if not folder.is_dir():
            raise UsageError(f"{folder} is not a folder (a model folder holds chat_template.jinja, tokenizer_config.json, …)")
        found_tokens = _read_folder(inputs, folder, folder_tokenizer)
    if getattr(args, "chat_template", None):
        text = read_text(args.chat_template)
        inputs.chat_template, inputs._chat_origin = text, lambda name, path=args.chat_template: Origin(path)
    if getattr(args, "response_template", None):
        text = read_text(args.response_template)
        inputs.response_template, origin, config_tokens = response_template_in(text, args.response_template)
        inputs.origins["response_template"] = origin
        found_tokens = config_tokens or found_tokens
    if getattr(args, "tokenizer", None):
        files, problems = read_tokenizer_path(args.tokenizer, allow_paths=True)
        if files is None:
            raise UsageError(f"cannot load tokenizer {args.tokenizer}: {problems[0].message if problems else 'unknown problem'}")
        inputs.tokenizer = files
        inputs.origins["tokenizer"] = Origin(_config_path(args.tokenizer))
    if getattr(args, "special_tokens", None) is not None:
        inputs.explicit_tokens = special_tokens_arg(args.special_tokens)
    inputs.special_tokens = inputs.special_tokens_with(found_tokens)
    return inputs


def _read_folder(inputs: ModelInputs, root: Path, with_tokenizer: bool) -> dict[str, Any]:
    """The folder's templates, tokenizer and problems into `inputs`; the special tokens its template
    files declare."""
    loaded = load_folder(root)
    # (A folder without a chat template gets its own message below, with where one belongs.)
    inputs.diagnostics += [_in_folder(d, root) for d in loaded.diagnostics if loaded.chat_template is not None
                           or not d.message.startswith("No chat template found")]
    texts = {name: data.decode("utf-8", errors="replace") for name, data in loaded.files.items()}
    inputs.chat_template = loaded.chat_template
    if loaded.chat_template is None:
        where = TOKENIZER_CONFIG if TOKENIZER_CONFIG in loaded.files else CHAT_TEMPLATE_FILE
        inputs.diagnostics.append(Diagnostic(
            "error", f"No chat template in {root}: it has no chat_template.jinja, no chat_template in "
            "tokenizer_config.json and no chat_template.json.", "chat_template", file=str(root / where),
            hint="A model folder as save_pretrained writes it holds chat_template.jinja; or name one with --chat-template."))
    elif loaded.origin == "chat_template.jinja":  # a named template other than default has its own file
        inputs._chat_origin = lambda name: Origin(str(root / (
            CHAT_TEMPLATE_FILE if name in (None, "default") else f"{CHAT_TEMPLATE_DIR}/{name}.jinja")))
    else:
        text = texts[loaded.origin]
        inputs._chat_origin = lambda name: _json_value_origin(str(root / loaded.origin), text, "chat_template", name)
    if TOKENIZER_CONFIG in texts:
        response, origin, _ = response_template_in(texts[TOKENIZER_CONFIG], str(root / TOKENIZER_CONFIG))
        if origin.start is not None:
            inputs.response_template = response
            inputs.origins["response_template"] = origin
    if with_tokenizer and (root / TOKENIZER_JSON).is_file():
        files, problems = read_tokenizer_path(root, allow_paths=True)
        inputs.tokenizer = files
        inputs.diagnostics += [_in_folder(d, root) for d in problems]
        inputs.origins["tokenizer"] = Origin(str(root / TOKENIZER_CONFIG))
    return loaded.special_tokens


def _in_folder(diagnostic: Diagnostic, root: Path) -> Diagnostic:
    return replace(diagnostic, file=str(root / diagnostic.file)) if diagnostic.file else diagnostic


def _json_value_origin(path: str, text: str, key: str, name: str | None) -> Origin:
    """Where a chat template kept in a JSON file is: the string under `key`, or in a list of named
    templates, the `template` of the one named `name`."""
    offsets = key_offsets(text)
    value = json.loads(text).get(key)
    where: tuple = (key,)
    if isinstance(value, list):
        index = next((i for i, t in enumerate(value) if isinstance(t, dict) and t.get("name") == (name or "default")), 0)
        where = (key, index, "template")
    start = value_start(text, offsets[where]) if where in offsets else None
    return Origin(path, text, start, string=True) if start is not None else Origin(path)


def response_template_in(text: str, path: str) -> tuple[str, Origin, dict[str, Any]]:
    """The response template in a file: the whole file, or the `response_template` value of a
    tokenizer_config.json (with the special tokens that file declares)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return text, Origin(path), {}  # reported with line and column where it is loaded
    if not (isinstance(data, dict) and "fields" not in data and data.get("response_template") is not None):
        return text, Origin(path), {}
    start = value_start(text, key_offsets(text)[("response_template",)])
    assert start is not None  # the key exists: json.loads found it
    value = data["response_template"]
    tokens = special_tokens_of(data)
    if isinstance(value, str):
        return value, Origin(path, text, start, string=True), tokens
    _, end = json.JSONDecoder().raw_decode(text, start)
    return text[start:end], Origin(path, text, start), tokens


def special_tokens_arg(value: str) -> dict[str, Any]:
    """`--special-tokens`: inline JSON, or a tokenizer_config.json / special_tokens_map.json to take
    them from (read as a Hub load reads them: every `*_token` entry, plain or an AddedToken object,
    and `extra_special_tokens`)."""
    data = read_json(value) if Path(value).is_file() else json_object(value, "--special-tokens")
    if not isinstance(data, dict):
        raise UsageError(f"{value}: expected a JSON object")
    return special_tokens_of(data)


def _config_path(tokenizer: str) -> str:
    path = Path(tokenizer)
    return str((path if path.is_dir() else path.parent) / TOKENIZER_CONFIG)
