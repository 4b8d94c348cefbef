"""The template files of a model repo: reading templates out of them the way transformers loads a
tokenizer, building the files `save_pretrained` writes for edited templates, diffing and zipping.

Everything here is pure (bytes in, bytes out): the same code serves a Hub repo, a local folder and
the zip export, and the tests can prove it byte for byte against transformers' own output."""

from __future__ import annotations

import difflib
import io
import json
import re
import zipfile
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Literal


from ..diagnostics import Diagnostic, line_col, line_text
from ..inputs import check_value, too_deep
from ..render import template_error
from ..response_spec import load_response_spec
from ..transformers_compat import compile_template

# File names as transformers spells them (transformers.utils.hub / tokenization_utils_base).
TOKENIZER_CONFIG = "tokenizer_config.json"
CHAT_TEMPLATE_FILE = "chat_template.jinja"
CHAT_TEMPLATE_DIR = "additional_chat_templates"
LEGACY_CHAT_TEMPLATE_JSON = "chat_template.json"
SPECIAL_TOKENS_MAP = "special_tokens_map.json"

# The only files the playground ever reads from a repo: small text files, never weights.
TEMPLATE_FILES = (TOKENIZER_CONFIG, CHAT_TEMPLATE_FILE, LEGACY_CHAT_TEMPLATE_JSON, SPECIAL_TOKENS_MAP)

ChatTemplate = str | dict[str, str]
# Where the chat template was found, in transformers' order of precedence.
TemplateOrigin = Literal["chat_template.jinja", "tokenizer_config.json", "chat_template.json"]

# A named template becomes a file name; transformers rejects names that leave the folder (CWE-22).
_TEMPLATE_NAME = re.compile(r"[^/\\\x00]+")


def is_template_file(path: str) -> bool:
    """Whether `path` is one of the files the loader reads (top-level names and
    `additional_chat_templates/<name>.jinja`, not nested deeper)."""
    if path in TEMPLATE_FILES:
        return True
    folder, _, name = path.partition("/")
    return folder == CHAT_TEMPLATE_DIR and name.endswith(".jinja") and "/" not in name


@dataclass
class TemplatesFound:
    """What a repo's files say: the chat template (one text, or named texts with `default` as the
    main one), where it came from, the response template as JSON text, the special tokens the
    template can read (`bos_token`, …), and problems found on the way. `added_tokens`: the texts
    the tokenizer treats as special (`added_tokens_decoder` entries marked special), which the
    prompt view boxes; `files`: the files as read, when they were handed over one by one (an upload:
    what a zip writes on top of; a repo's are `HubTemplates.files`)."""

    chat_template: ChatTemplate | None
    origin: TemplateOrigin | None
    response_template: str | None
    special_tokens: dict[str, str]
    diagnostics: list[Diagnostic]
    added_tokens: list[str] = field(default_factory=list)
    files: dict[str, bytes] = field(default_factory=dict)


def read_templates(files: dict[str, bytes], *, expect_chat_template: bool = True) -> TemplatesFound:
    """Read templates from a repo's files with transformers' precedence: `chat_template.jinja` and
    `additional_chat_templates/*.jinja` first, then a `chat_template` key in `tokenizer_config.json`
    (a string, or a list of `{name, template}`), then a legacy `chat_template.json` (which processors
    read first: a note says so when it is shadowed)."""
    diagnostics: list[Diagnostic] = []
    texts = {path: _decode(path, data, diagnostics) for path, data in files.items()}
    config = _json_file(texts, TOKENIZER_CONFIG, diagnostics)
    legacy = _json_file(texts, LEGACY_CHAT_TEMPLATE_JSON, diagnostics)

    candidates: list[tuple[TemplateOrigin, ChatTemplate]] = []
    named = {
        path.removeprefix(CHAT_TEMPLATE_DIR + "/").removesuffix(".jinja"): text
        for path, text in sorted(texts.items())
        if path.startswith(CHAT_TEMPLATE_DIR + "/") and text is not None
    }
    default = texts.get(CHAT_TEMPLATE_FILE)
    if named:
        candidates.append(("chat_template.jinja", {"default": default, **named} if default is not None else named))
    elif default is not None:
        # As in transformers' `_from_pretrained`: a lone chat_template.jinja is a plain string.
        candidates.append(("chat_template.jinja", default))
    if config is not None and config.get("chat_template") is not None:
        inline = _template_value(config["chat_template"], TOKENIZER_CONFIG, diagnostics)
        if inline is not None:
            candidates.append(("tokenizer_config.json", inline))
    if legacy is not None and legacy.get("chat_template") is not None:
        value = _template_value(legacy["chat_template"], LEGACY_CHAT_TEMPLATE_JSON, diagnostics)
        if value is not None:
            candidates.append(("chat_template.json", value))

    chat_template, origin = (candidates[0][1], candidates[0][0]) if candidates else (None, None)
    for shadowed, value in candidates[1:]:
        if shadowed == "chat_template.json":
            # transformers 5.24's processors (AutoProcessor, `ProcessorMixin.get_processor_dict`)
            # read a legacy chat_template.json *before* chat_template.jinja; only tokenizers ignore it.
            same = value == chat_template
            diagnostics.append(Diagnostic(
                "info" if same else "warning",
                f"chat_template.json also holds a chat template: the tokenizer uses {origin}, but a processor "
                f"(AutoProcessor, as multimodal models load) reads chat_template.json first"
                + (" (the same template here)." if same else ", and the two differ."),
                "hub",
                hint="Publishing writes chat_template.jinja and removes chat_template.json, so only one remains.",
            ))  # fmt: skip
            continue
        diagnostics.append(Diagnostic(
            "info",
            f"{shadowed} also holds a chat template; transformers ignores it because {origin} takes precedence.",
            "hub",
            hint="Publishing writes chat_template.jinja and removes the old copy, so only one remains.",
        ))
    if chat_template is None and expect_chat_template:
        diagnostics.append(Diagnostic("warning", "No chat template found in this repo.", "hub",
                                      hint="Start from a preset, or write one in the chat template editor."))

    response_template = None
    if config is not None and config.get("response_template") is not None:
        value = config["response_template"]
        response_template = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False)
    special_tokens = special_tokens_of(config or {}, _json_file(texts, SPECIAL_TOKENS_MAP, diagnostics) or {})
    return TemplatesFound(chat_template, origin, response_template, special_tokens, diagnostics,
                          added_tokens_of(config or {}))


@dataclass
class BuiltFiles:
    """The files to write (path -> bytes), the paths to delete, and what stopped the build."""

    files: dict[str, bytes]
    deleted: list[str]
    diagnostics: list[Diagnostic]


def build_files(
    current: dict[str, bytes], chat_template: ChatTemplate | None, response_template: str | None
) -> BuiltFiles:
    """The files transformers' `save_pretrained` writes for these templates, on top of the repo's
    `current` files: `chat_template.jinja` (plus `additional_chat_templates/<name>.jinja` for named
    templates) and `tokenizer_config.json` with `response_template` set, an inline `chat_template`
    removed and every other key kept, formatted exactly as `save_pretrained` formats it.

    `chat_template=None` keeps the repo's chat template (re-saved, so a legacy copy moves to
    chat_template.jinja); `response_template=None` keeps the repo's response template. A named
    template set (a dict) is the complete set: names the repo has but the dict lacks are deleted."""
    diagnostics: list[Diagnostic] = []
    if chat_template is None:
        # The repo's own template is moved as it is, even if it has problems: not this edit's to fix.
        chat_template = read_templates(current).chat_template
    else:
        diagnostics += _check_chat_template(chat_template)
    if isinstance(chat_template, dict) and set(chat_template) == {"default"}:
        chat_template = chat_template["default"]

    config: dict[str, Any] = {}
    if TOKENIZER_CONFIG in current:
        config_text = _decode(TOKENIZER_CONFIG, current[TOKENIZER_CONFIG], diagnostics)
        loaded = _json_file({TOKENIZER_CONFIG: config_text}, TOKENIZER_CONFIG, diagnostics)
        if loaded is None:
            diagnostics.append(Diagnostic("error", "The repo's tokenizer_config.json cannot be read, so it cannot be "
                                          "updated without losing its other settings.", "hub",
                                          hint="Fix tokenizer_config.json in the repo first."))
        config = loaded or {}
    elif response_template and response_template.strip():
        diagnostics.append(Diagnostic(
            "warning", "The repo has no tokenizer_config.json: the new one holds only response_template.", "hub",
            hint="If the model has a tokenizer elsewhere, merge response_template into its tokenizer_config.json.",
        ))
    if response_template is not None and response_template.strip():
        loaded_spec = load_response_spec(response_template)
        diagnostics += [d for d in loaded_spec.diagnostics if d.severity == "error"]
        if loaded_spec.ok:
            config["response_template"] = loaded_spec.spec
    if any(d.severity == "error" for d in diagnostics):
        return BuiltFiles({}, [], diagnostics)

    files: dict[str, bytes] = {}
    # save_pretrained moves an inline template out of the config (`save_chat_templates`).
    config.pop("chat_template", None)
    if TOKENIZER_CONFIG in current or config:
        files[TOKENIZER_CONFIG] = config_bytes(config)
    if isinstance(chat_template, str):
        files[CHAT_TEMPLATE_FILE] = chat_template.encode("utf-8")
    elif isinstance(chat_template, dict):
        for name, text in chat_template.items():
            path = CHAT_TEMPLATE_FILE if name == "default" else f"{CHAT_TEMPLATE_DIR}/{name}.jinja"
            files[path] = text.encode("utf-8")

    deleted = []
    # Processors load a legacy chat_template.json before chat_template.jinja, so leaving it would
    # keep the old template live for them.
    if LEGACY_CHAT_TEMPLATE_JSON in current and chat_template is not None:
        deleted.append(LEGACY_CHAT_TEMPLATE_JSON)
    if isinstance(chat_template, dict):
        deleted += sorted(p for p in current if is_template_file(p) and p.endswith(".jinja") and p not in files)
    return BuiltFiles(files, deleted, diagnostics)


def config_bytes(config: dict[str, Any]) -> bytes:
    """tokenizer_config.json exactly as `save_pretrained` writes it (tokenization_utils_base):
    2-space indent, sorted keys, UTF-8 unescaped, one trailing newline."""
    return (json.dumps(config, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


FileStatus = Literal["added", "modified", "deleted", "unchanged"]


@dataclass
class FileChange:
    """One file of a publish: its bytes in the repo now (`old`) and after (`new`)."""

    path: str
    old: bytes | None
    new: bytes | None

    @property
    def status(self) -> FileStatus:
        if self.old is None:
            return "added"
        if self.new is None:
            return "deleted"
        return "unchanged" if self.old == self.new else "modified"

    @cached_property  # made once, where the plan is built (a worker, for the app)
    def diff(self) -> str:
        """A unified diff of the file (empty when unchanged)."""
        if self.status == "unchanged":
            return ""
        old = _lines(self.old)
        new = _lines(self.new)
        head = [f"--- {'a/' + self.path if self.old is not None else '/dev/null'}\n",
                f"+++ {'b/' + self.path if self.new is not None else '/dev/null'}\n"]
        body = list(difflib.unified_diff(old, new, n=3))[2:]  # [2:] drops difflib's own header
        out = []
        for line in body:
            out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
        return "".join(head + out)


def diff_files(current: dict[str, bytes], built: BuiltFiles) -> list[FileChange]:
    """Each written or deleted file against the repo's current version, in path order."""
    changes = [FileChange(path, current.get(path), data) for path, data in built.files.items()]
    changes += [FileChange(path, current[path], None) for path in built.deleted]
    return sorted(changes, key=lambda c: c.path)


def zip_files(files: dict[str, bytes]) -> bytes:
    """The files as a zip, for authors who upload by hand. Fixed timestamps make it reproducible."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(files):
            info = zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, files[path])
    return buffer.getvalue()


def _check_chat_template(chat_template: ChatTemplate | None) -> list[Diagnostic]:
    """Refuse to publish a template transformers cannot compile, or a name it cannot save."""
    if chat_template is None:
        return []
    named = chat_template.items() if isinstance(chat_template, dict) else [(None, chat_template)]
    problems = []
    for name, text in named:
        if name is not None and (not _TEMPLATE_NAME.fullmatch(name) or name in (".", "..")):
            problems.append(Diagnostic("error", f"{name!r} cannot be a template name: it would not stay a file in "
                                       f"{CHAT_TEMPLATE_DIR}/.", "chat_template", hint="Use letters, digits, - or _."))
            continue
        label = f"The chat template named {name!r}" if name not in (None, "default") else "The chat template"
        if not isinstance(text, str):
            problems.append(Diagnostic("error", f"{label} is not text.", "chat_template"))
            continue
        if not text.strip():
            # An empty file loads as a template that renders nothing: every chat would break.
            problems.append(Diagnostic("error", f"{label} is empty.", "chat_template",
                                       hint="Write the template, or start from a preset."))
            continue
        try:
            compile_template(text)
        except Exception as e:  # noqa: BLE001 - the author's template, the author's error to see
            error = template_error(e, text)
            if name is not None and name != "default":
                error = replace(error, message=f"In the template named {name!r}: {error.message}")
            problems.append(error)
    return problems


def _decode(path: str, data: bytes, diagnostics: list[Diagnostic]) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        diagnostics.append(Diagnostic("error", f"{path} is not UTF-8 text (byte {e.start}).", "hub"))
        return None


def _json_file(texts: dict[str, str | None], path: str, diagnostics: list[Diagnostic]) -> dict | None:
    text = texts.get(path)
    if text is None:
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        line, column = line_col(text, e.pos)
        diagnostics.append(Diagnostic("error", f"{path} is not valid JSON: {e.msg}.", "hub", line=line, column=column,
                                      snippet=line_text(text, line), file=path))
        return None
    except RecursionError:
        diagnostics.append(too_deep("hub", path))
        return None
    if not isinstance(data, dict):
        diagnostics.append(Diagnostic("error", f"{path} should hold a JSON object.", "hub", file=path))
        return None
    if problems := check_value(data, "hub", path, text):  # too deep, or text that is not valid Unicode
        diagnostics += problems
        return None
    return data


def _template_value(value: Any, path: str, diagnostics: list[Diagnostic]) -> ChatTemplate | None:
    """A `chat_template` value as transformers reads it: a string, or a list of {name, template}."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(t, dict) and isinstance(t.get("name"), str)
                                       and isinstance(t.get("template"), str) for t in value):
        return {t["name"]: t["template"] for t in value}
    diagnostics.append(Diagnostic("error", f"The chat_template in {path} is neither a string nor a list of "
                                  '{"name": ..., "template": ...}.', "hub", file=path))
    return None


def special_tokens_of(config: dict, special_tokens_map: dict | None = None) -> dict[str, str]:
    """The special tokens a chat template reads (`bos_token`, `eos_token`, model-specific `*_token`):
    those `tokenizer.special_tokens_map` would hold. Values are strings or AddedToken dicts. As in
    transformers' `_from_pretrained`, a legacy special_tokens_map.json is read only when the config
    has no `added_tokens_decoder`, and then its values win over the config's."""
    tokens: dict[str, str] = {}
    legacy = (special_tokens_map or {}) if "added_tokens_decoder" not in config else {}
    for source in (config, legacy):
        for key, value in source.items():
            if isinstance(value, dict):
                value = value.get("content")
            if key.endswith("_token") and isinstance(value, str):
                tokens[key] = value
    # A dict of extra special tokens names model-specific ones (`{"image_token": "<image>"}`).
    extra = config.get("extra_special_tokens")
    for key, value in (extra.items() if isinstance(extra, dict) else []):
        value = value.get("content") if isinstance(value, dict) else value
        if isinstance(value, str):
            tokens[key] = value
    return tokens


def added_tokens_of(config: dict) -> list[str]:
    """The texts of the tokens a tokenizer_config.json's `added_tokens_decoder` marks special (what
    `tokenizer.all_special_tokens` would hold besides the named ones), in id order."""
    decoder = config.get("added_tokens_decoder")
    if not isinstance(decoder, dict):
        return []
    found = []
    for key, token in decoder.items():
        if isinstance(token, dict) and token.get("special") and isinstance(token.get("content"), str) and token["content"]:
            found.append((int(key) if str(key).isdigit() else 0, token["content"]))
    return list(dict.fromkeys(text for _, text in sorted(found)))


def _lines(data: bytes | None) -> list[str]:
    return [] if data is None else data.decode("utf-8", errors="replace").splitlines(keepends=True)
