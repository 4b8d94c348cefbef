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

# What one answer to the page carries: the views the server writes for it (the prompt, diagnostics, an
# output, the checks, tokens, a step, a diff), in bytes. The visitor's own texts it sends back (the
# editors, the browser's saved copy) are bounded by the workspace's limits instead. A view that would
# be larger is cut, with a note; the server's work on an answer is linear in what it sends.
MAX_ANSWER_BYTES = int(_number("PLAYGROUND_MAX_ANSWER_KB", 1000) * 1000)
# Of an edit's answer: the prompt's text as the page shows it (escaped, special tokens boxed, visible
# whitespace), and where each of its characters came from (the pieces' table, call chains and the
# attributes of each piece's text), checked in the render worker before anything reaches the server.
# (The rest: the three editors' diagnostics and the info line.)
PROMPT_VIEW_BYTES = MAX_ANSWER_BYTES * 50 // 100
PAGE_EXPLANATION_BYTES = MAX_ANSWER_BYTES * 30 // 100
# Pieces the page shows (`render --explain` lists up to MAX_EXPLAINED_PIECES): more is not shown.
MAX_PAGE_PIECES = int(_number("PLAYGROUND_MAX_PAGE_PIECES", 20_000))
# What one command of `python -m engine` prints, in characters: a listing or JSON past it is not printed
# whole (a prompt's 99,000 pieces with 50 call sites each were 516 MB of JSON), with a message.
MAX_COMMAND_OUTPUT_CHARS = int(_number("PLAYGROUND_MAX_COMMAND_OUTPUT_MB", 32) * 1_000_000)
# What a behaviour diff (engine.behaviour) sends back from its worker: prompts, changed texts and
# messages together, in characters (changed prompts past it are shown as their changes only).
MAX_BEHAVIOUR_DIFF_CHARS = int(_number("PLAYGROUND_MAX_BEHAVIOUR_DIFF_CHARS", 400_000))
# Nesting of any JSON a person types (deeper input would exhaust Python's recursion limit).
MAX_JSON_DEPTH = int(_number("PLAYGROUND_MAX_JSON_DEPTH", 100))

# The render workers (engine.sandbox): memory cap of each, how many stay started, how many may run
# at once (a burst of slow templates starts extra workers up to this).
WORKER_MEMORY_BYTES = int(_number("PLAYGROUND_WORKER_MEMORY_MB", 1536) * 1024 * 1024)
RENDER_WORKERS = int(_number("PLAYGROUND_RENDER_WORKERS", 2))
MAX_RENDER_WORKERS = max(RENDER_WORKERS, int(_number("PLAYGROUND_MAX_RENDER_WORKERS", 6)))

# What one visitor may hold and use (engine.budget, engine.clients): a session's workspace, counted
# when it arrives (an edit, a preset, a share link, files, a Hub load); every session of one client
# together; all sessions of the server. Over a budget, the longest-idle sessions are released first.
MAX_CASES = int(_number("PLAYGROUND_MAX_CASES", 50))
# Everything one workspace holds, in characters: both templates, named templates, cases, recordings,
# a pasted output. A max-size case, a max-size paste and the templates fit.
MAX_WORKSPACE_CHARS = int(_number("PLAYGROUND_MAX_WORKSPACE_CHARS", 3_000_000))
# A session idle this long is released (its workspace too: the browser's saved copy and the share
# link bring it back); the memory of one client's sessions, and of every session, beyond which the
# longest-idle sessions are released first.
IDLE_SECONDS = _number("PLAYGROUND_IDLE_MINUTES", 30) * 60
CLIENT_BYTES = int(_number("PLAYGROUND_CLIENT_MB", 400) * 1_000_000)
SESSIONS_BYTES = int(_number("PLAYGROUND_SESSIONS_MB", 1500) * 1_000_000)
# Requests of one client running at once (each holds a server thread while it waits for a worker),
# and, apart from those, being answered at once (any request, a page or a file included: the rest
# wait their turn, up to CLIENT_WAITING of them, beyond which they are refused); streams one client
# may hold open (an open page holds two: its events' answers and its heartbeat).
CLIENT_REQUESTS = int(_number("PLAYGROUND_CLIENT_REQUESTS", 4))
CLIENT_WAITING = int(_number("PLAYGROUND_CLIENT_WAITING", 200))
CLIENT_STREAMS = int(_number("PLAYGROUND_CLIENT_STREAMS", 100))
# Untrusted JSON larger than this (a share link, uploaded or downloaded template files) is decoded in
# a worker: decoding is fast per byte, but a few megabytes of `[{},{},…]` are a million objects.
DECODE_IN_SERVER_BYTES = int(_number("PLAYGROUND_DECODE_IN_SERVER_KB", 256) * 1000)
# Diagnostics shown for one input (a case with a million malformed messages gets a summary line).
MAX_DIAGNOSTICS = int(_number("PLAYGROUND_MAX_DIAGNOSTICS", 20))
# Files the server writes for visitors (uploads) are deleted this long after they arrive.
TEMP_FILE_SECONDS = _number("PLAYGROUND_TEMP_FILE_MINUTES", 10) * 60
# The body of one request (an edit, a run: templates, a case, a pasted output, JSON-escaped), and
# what uploads one client (and everyone) may send per window: uploads wait on disk until deleted.
MAX_REQUEST_BYTES = int(_number("PLAYGROUND_MAX_REQUEST_MB", 16) * 1_000_000)
CLIENT_UPLOAD_BYTES = int(_number("PLAYGROUND_CLIENT_UPLOAD_MB", 200) * 1_000_000)
UPLOAD_BYTES = int(_number("PLAYGROUND_UPLOAD_MB", 2000) * 1_000_000)
# Files in one upload request (the page reads no more: a model's template and tokenizer files), and
# what each file counts as at least against those budgets (Gradio writes each into a folder of its
# own: two entries on disk and about a millisecond of CPU, however small the file).
MAX_UPLOAD_FILES = int(_number("PLAYGROUND_MAX_UPLOAD_FILES", 10))
UPLOAD_FILE_MIN_BYTES = int(_number("PLAYGROUND_UPLOAD_FILE_MIN_MB", 1) * 1_000_000)
# New sessions (pages opened, API clients started) one client may begin per minute: Gradio spends
# about 0.1 s of the server's CPU setting up each one, before any handler could refuse it.
CLIENT_NEW_SESSIONS = _number("PLAYGROUND_CLIENT_SESSIONS_PER_MINUTE", 20)
# An idle render worker holding more memory than this is restarted (what a hostile template or a large
# tokenizer left in it comes back to the system).
WORKER_RECYCLE_BYTES = int(_number("PLAYGROUND_WORKER_RECYCLE_MB", 700) * 1_000_000)
# A render worker unused for the idle limit (IDLE_SECONDS) is restarted when it holds more than this
# (a fresh one holds about 55 MB): what it caches, tokenizers above all, served visitors who have left.
WORKER_IDLE_KEEP_BYTES = int(_number("PLAYGROUND_WORKER_IDLE_KEEP_MB", 150) * 1_000_000)
