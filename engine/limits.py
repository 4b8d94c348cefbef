"""Every bound the playground puts on untrusted input, in one place.

Templates, regexes, pasted outputs and JSON come from people the server does not know (on a public
Space, from anyone), so each has a size or time limit. Real templates and outputs sit far below
every one of them. An owner can change each with the environment variable named next to it
(docs/security.md); the command line uses the same defaults (`--timeout` changes its time limit).
"""

from __future__ import annotations

import os


def _number(name: str, default: float) -> float:
    """The environment variable `name` as a positive number, else `default`."""
    try:
        value = float(os.environ.get(name, ""))
    except ValueError:
        return default
    return value if value > 0 else default


# Time: seconds a render, a run of every check, and the regexes of one parse may take.
RENDER_SECONDS = _number("PLAYGROUND_RENDER_SECONDS", 10)
CHECK_SECONDS = _number("PLAYGROUND_CHECK_SECONDS", 60)
# Regex matching per parse (a prompt refresh, a run, a step-through, a CLI trace), summed over
# every call: real delimiters take milliseconds on a whole output; a backtracking pattern such as
# `(a+)+$` would take hours.
REGEX_SECONDS = _number("PLAYGROUND_REGEX_SECONDS", 2)
# Compiling one author regex (CPU seconds, measured in a worker): real patterns take a millisecond;
# counted repeats such as `(?:a{3000}){3000}` take seconds and gigabytes.
REGEX_COMPILE_SECONDS = _number("PLAYGROUND_REGEX_COMPILE_SECONDS", 0.25)

# Size, in characters.
MAX_CHAT_TEMPLATE_CHARS = int(_number("PLAYGROUND_MAX_TEMPLATE_CHARS", 200_000))
MAX_RESPONSE_TEMPLATE_CHARS = int(_number("PLAYGROUND_MAX_RESPONSE_TEMPLATE_CHARS", 100_000))
# A case's JSON (messages, tools, documents, kwargs) and a share link's state.
MAX_CASE_CHARS = int(_number("PLAYGROUND_MAX_CASE_CHARS", 1_000_000))
MAX_PROMPT_CHARS = int(_number("PLAYGROUND_MAX_PROMPT_CHARS", 4_000_000))
# A model output (pasted, or streamed by a runner): ~125k tokens, beyond any model's longest reply.
MAX_OUTPUT_CHARS = int(_number("PLAYGROUND_MAX_OUTPUT_CHARS", 500_000))
# A tokenizer's files (tokenizer.json: Llama 3's is 9 MB, Gemma 3's 33 MB).
MAX_TOKENIZER_BYTES = int(_number("PLAYGROUND_MAX_TOKENIZER_MB", 40) * 1_000_000)
# The token view of a prompt longer than this is not computed (a keystroke stays cheap; about 50k tokens).
MAX_TOKEN_VIEW_CHARS = int(_number("PLAYGROUND_MAX_TOKEN_VIEW_CHARS", 200_000))
# Pieces of a prompt's explanation (engine.provenance): a render that writes more is not explained.
MAX_EXPLAINED_PIECES = int(_number("PLAYGROUND_MAX_EXPLAINED_PIECES", 100_000))
# Nesting of any JSON a person types (deeper input would exhaust Python's recursion limit).
MAX_JSON_DEPTH = int(_number("PLAYGROUND_MAX_JSON_DEPTH", 100))

# The render workers (engine.sandbox): memory cap of each, how many stay started, how many may run
# at once (a burst of slow templates starts extra workers up to this).
WORKER_MEMORY_BYTES = int(_number("PLAYGROUND_WORKER_MEMORY_MB", 1536) * 1024 * 1024)
RENDER_WORKERS = int(_number("PLAYGROUND_RENDER_WORKERS", 2))
MAX_RENDER_WORKERS = max(RENDER_WORKERS, int(_number("PLAYGROUND_MAX_RENDER_WORKERS", 6)))
