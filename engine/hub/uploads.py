"""Templates from files an author hands over one by one (an upload, or files named on the command
line) rather than as a repo: which file is which, read with the same precedence as a repo."""

from __future__ import annotations

import json
from dataclasses import replace

from ..diagnostics import Diagnostic
from .files import (
    CHAT_TEMPLATE_DIR,
    CHAT_TEMPLATE_FILE,
    LEGACY_CHAT_TEMPLATE_JSON,
    SPECIAL_TOKENS_MAP,
    TOKENIZER_CONFIG,
    TemplatesFound,
    read_templates,
)


def read_uploads(uploads: dict[str, bytes]) -> TemplatesFound:
    """Templates from files by name: `chat_template.jinja` (or a single other `.jinja`; further
    `.jinja` files become named templates), `tokenizer_config.json` (its chat template, response
    template and special tokens), `chat_template.json`, `special_tokens_map.json`, and a bare
    response template (any other `.json` with `fields`). Never raises."""
    problems: list[Diagnostic] = []
    files: dict[str, bytes] = {}
    templates: list[tuple[str, bytes]] = []
    response_text: str | None = None
    for name, data in uploads.items():
        if name.endswith(".jinja"):
            templates.append((name, data))
        elif name in (TOKENIZER_CONFIG, SPECIAL_TOKENS_MAP, LEGACY_CHAT_TEMPLATE_JSON):
            files[name] = data
        elif name.endswith(".json"):
            try:
                text = data.decode("utf-8")
                spec = json.loads(text)
            except (UnicodeDecodeError, json.JSONDecodeError) as e:
                problems.append(Diagnostic("error", f"{name} is not valid JSON: {e}", "hub"))
                continue
            if isinstance(spec, dict) and "fields" in spec:
                response_text = text
            elif isinstance(spec, dict):
                files[TOKENIZER_CONFIG] = data  # a tokenizer_config.json saved under another name
        else:
            problems.append(Diagnostic("warning", f"{name}: expected chat_template.jinja, tokenizer_config.json or "
                                       "a response template .json; ignored.", "hub"))
    # chat_template.jinja is the main template; with no file of that name, a single .jinja is.
    main = next((t for t in templates if t[0] == CHAT_TEMPLATE_FILE), templates[0] if len(templates) == 1 else None)
    for name, data in templates:
        files[CHAT_TEMPLATE_FILE if (name, data) == main else f"{CHAT_TEMPLATE_DIR}/{name}"] = data
    if not files:
        if response_text is None:
            problems.append(Diagnostic("error", "No template found in these files.", "hub"))
        return TemplatesFound(None, None, response_text, {}, problems)
    found = read_templates(files, expect_chat_template=response_text is None)
    response = response_text if response_text is not None else found.response_template
    if found.chat_template is None and response is None and TOKENIZER_CONFIG not in files:
        problems.append(Diagnostic("error", "No template found in these files.", "hub"))
    return replace(found, response_template=response, diagnostics=problems + found.diagnostics, files=files)
