"""MiniJinja (the Rust engine, through the `minijinja` package) configured the way the servers that
render chat templates with it configure it. The facts, from their chat-template setup:

- **text-generation-inference** (`router/src/infer/chat_template.rs`): `Environment::new()` (so no
  trim_blocks / lstrip_blocks), the pycompat method callback (`.strip()`, `.items()`, …),
  `raise_exception`, `strftime_now` in local time, MiniJinja's own `tojson` (compact, HTML-safe).
  Before compiling it rewrites a template: `[::-1]` → `|reverse`, the exact text
  `{% generation %}` / `{% endgeneration %}` removed, and Gemma 3's `messages[0]['content'][0]['text']`.
- **mistral.rs** (`mistralrs-core/src/pipeline/chat_template.rs`): pycompat, trim_blocks and
  lstrip_blocks on, `raise_exception`, `strftime_now` in UTC, a `tojson` with Python's separators
  (`, ` and `: `) and no HTML escaping. It rewrites `[::-1]` → `|reverse`,
  `range(x, -1, -1)` → `range(x)|reverse`, every `{%- generation -%}` tag away, and a
  `namespace(name=a if b else c)` MiniJinja does not parse.

Every render is bounded by MiniJinja's fuel (instructions) and by the length of what it returns."""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import minijinja

# Instructions a render may run: the largest real chat templates need well under a million for a
# long conversation; a template that loops runs out and stops with a message.
FUEL = 20_000_000


@dataclass(frozen=True)
class Profile:
    """One server's MiniJinja setup."""

    name: str
    label: str
    trim_blocks: bool
    rewrites: tuple[tuple[str, str, bool], ...]  # (pattern, replacement, is_regex)
    utc: bool
    python_tojson: bool


def _raise_exception(message: Any) -> None:
    raise minijinja.TemplateError(str(message))


def _strftime(utc: bool) -> Callable[[str], str]:
    def strftime_now(fmt: str) -> str:
        now = datetime.datetime.now(datetime.timezone.utc) if utc else datetime.datetime.now()
        return now.strftime(fmt)

    return strftime_now


def _python_tojson(value: Any, indent: int | None = None) -> str:
    """mistral.rs's tojson: Python's json.dumps separators, no HTML escaping, indent up to 256."""
    if indent is not None and not 0 <= int(indent) <= 256:
        raise minijinja.TemplateError(f"tojson `indent` of {indent} exceeds the maximum of 256")
    return minijinja.safe(json.dumps(value, ensure_ascii=False, indent=indent))


TGI = Profile(
    "minijinja-tgi",
    "MiniJinja (TGI)",
    trim_blocks=False,
    rewrites=(
        ("messages[0]['content'][0]['text']", "messages[0]['content']", False),
        ("[::-1]", "|reverse", False),
        ("{% generation %}", "", False),
        ("{% endgeneration %}", "", False),
    ),
    utc=False,
    python_tojson=False,
)
MISTRAL_RS = Profile(
    "minijinja-mistral.rs",
    "MiniJinja (mistral.rs)",
    trim_blocks=True,
    rewrites=(
        ("namespace(name=tcid if tcid else '')", "namespace(name=(tcid if tcid else ''))", False),
        ("[::-1]", "|reverse", False),
        (r"range\((?P<expr>[^,]+),\s*-1,\s*-1\)", r"range(\g<expr>)|reverse", True),
        (r"\{%-?\s*(?:end)?generation\s*-?%\}", "", True),
    ),
    utc=True,
    python_tojson=True,
)
PROFILES = {p.name: p for p in (TGI, MISTRAL_RS)}


def prepare(profile: Profile, source: str) -> str:
    """The template text the server compiles, after its rewrites."""
    for pattern, replacement, is_regex in profile.rewrites:
        source = re.sub(pattern, replacement, source) if is_regex else source.replace(pattern, replacement)
    return source


def _environment(profile: Profile) -> minijinja.Environment:
    filters = {"tojson": _python_tojson} if profile.python_tojson else {}
    return minijinja.Environment(
        fuel=FUEL,
        debug=False,
        pycompat=True,
        trim_blocks=profile.trim_blocks,
        lstrip_blocks=profile.trim_blocks,
        filters=filters,
        globals={"raise_exception": _raise_exception, "strftime_now": _strftime(profile.utc)},
    )


def render(profile_name: str, jobs: list[tuple[str, dict]], max_chars: int) -> list[tuple[str | None, str | None]]:
    """Render each (source, context): (text, None) or (None, the engine's error message)."""
    profile = PROFILES[profile_name]
    env = _environment(profile)
    names: dict[str, str | Exception] = {}
    out: list[tuple[str | None, str | None]] = []
    for source, context in jobs:
        if source not in names:
            name = f"chat_template_{len(names)}" if names else "chat_template"
            try:
                env.add_template(name, prepare(profile, source))
                names[source] = name
            except Exception as e:  # noqa: BLE001 - a syntax error in this engine
                names[source] = e
        name = names[source]
        try:
            if isinstance(name, Exception):
                raise name
            text = env.render_template(name, **context)
        except Exception as e:  # noqa: BLE001 - the engine's message is the finding
            out.append((None, _message(e)))
            continue
        if len(text) > max_chars:
            out.append((None, f"the output is over {max_chars:,} characters (stopped)"))
        else:
            out.append((text, None))
    return out


def _message(error: Exception) -> str:
    """MiniJinja's message on one line, e.g. "undefined value (in chat_template:3)"; running out of
    fuel is said plainly."""
    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    if "out of fuel" in text:
        return "stopped: the template ran too long (MiniJinja's fuel limit; a loop?)"
    return text
