"""The rule that the server process only routes, made checkable.

A visitor's chat template is code: Jinja folds constant expressions while it compiles
(`{{ 9**(9**8) }}` is two minutes of one core before a single character renders), and a visitor's
`tokenizer.json` is a program of regexes. So everything that compiles, renders or runs such input
happens in a bounded worker (`engine.sandbox.run_bounded`), never in the process that answers every
visitor's page and edits.

This module watches for the opposite: while the app handles a visitor's request (`serving`, which
`app.wiring` wraps around every handler), a Jinja parse, compile or render, or a `tokenizers` build or
encode, in this process is a violation. `guard()` records each one (and, `strict`, refuses it with
`ServerWork`): `tests/test_server_routes.py` calls every handler of the page under it, so a new path
that compiles in the server (a download, a preview, a provenance view) fails there;
`PLAYGROUND_STRICT_ROUTING=1` turns it on for a served app (the public-server tests do)."""

from __future__ import annotations

import functools
import logging
import threading
import traceback
from collections.abc import Callable
from typing import Any

import jinja2
import tokenizers

from . import process_role
from .process_role import serving, serving_now  # noqa: F401 - the app wraps its handlers in server_guard.serving

# What is watched, by what it means to an author: (meaning, owner class, method name).
WATCHED: tuple[tuple[str, type, str], ...] = (
    ("parse a template", jinja2.Environment, "_parse"),
    ("compile a template", jinja2.Environment, "compile"),
    ("render a template", jinja2.Template, "new_context"),
    ("build a tokenizer", tokenizers.Tokenizer, "from_str"),
    ("build a tokenizer", tokenizers.Tokenizer, "from_file"),
    ("build a tokenizer", tokenizers.Tokenizer, "from_buffer"),
    ("tokenize", tokenizers.Tokenizer, "encode"),
    ("tokenize", tokenizers.Tokenizer, "encode_batch"),
)

logger = logging.getLogger("playground")


class ServerWork(RuntimeError):
    """Visitor input was about to be compiled, rendered or tokenized in the server process."""


_lock = threading.Lock()
_originals: dict[tuple[type, str], Any] = {}
_violations: list[str] = []
_strict = False


def guard(strict: bool = True) -> list[str]:
    """Watch this process: a watched call made while `serving` is recorded in the returned list
    (one line each: what, and the innermost frames of the app and engine that made it), and with
    `strict` refused with `ServerWork`. Workers are other processes, so what they do is never seen."""
    global _strict
    with _lock:
        _strict = strict
        for meaning, owner, name in WATCHED:
            if (owner, name) not in _originals:
                original = owner.__dict__[name]
                _originals[owner, name] = original
                setattr(owner, name, _watched(meaning, owner, name, original))
    return _violations


def unguard() -> None:
    """Put every watched method back (tests)."""
    with _lock:
        for (owner, name), original in _originals.items():
            setattr(owner, name, original)
        _originals.clear()
        _violations.clear()


def _ours(filename: str) -> bool:
    """A frame of the app or the engine (not this module): where a violation is reported."""
    return ("/app/" in filename or "/engine/" in filename) and not filename.endswith("server_guard.py")


def _watched(meaning: str, owner: type, name: str, original: Any) -> Any:
    function: Callable = original.__func__ if isinstance(original, (classmethod, staticmethod)) else original

    def check() -> None:
        if serving_now() is None or process_role.IN_WORKER:
            return
        where = " < ".join(f"{'/'.join(f.filename.rsplit('/', 2)[-2:])}:{f.lineno} {f.name}"
                           for f in reversed(traceback.extract_stack()) if _ours(f.filename))
        violation = f"{meaning} ({owner.__name__}.{name}) in the server process: {where}"
        _violations.append(violation)
        logger.error("Rule broken: %s", violation)
        if _strict:
            raise ServerWork(f"The server process does not {meaning}: that runs in a bounded worker.")

    if isinstance(original, classmethod):
        @functools.wraps(function)
        def as_class(cls: type, *args: Any, **kwargs: Any) -> Any:
            check()
            return function(cls, *args, **kwargs)

        return classmethod(as_class)

    @functools.wraps(function)
    def as_function(*args: Any, **kwargs: Any) -> Any:
        check()
        return function(*args, **kwargs)

    return staticmethod(as_function) if isinstance(original, staticmethod) else as_function
