"""Author regexes, bounded in time and memory wherever they run.

A response template's patterns (`open_pattern`, `close_pattern`, `start_anchor_pattern`, an
xml-inline `tag_pattern`) are untrusted code that transformers' parser runs in this process. Two
things can go wrong, and both are bounded here:

- **matching** can backtrack for hours (`(a+)+$` on a line of `a`s): every call carries the
  `regex` module's `timeout=`, drawn from a budget (`limits.REGEX_SECONDS` per parse, summed over
  every call of it). A call first runs holding the GIL for at most `SLICE` seconds, as any regex
  does; if it needs longer it runs again with the GIL released (`concurrent=True`), so a slow
  pattern costs one core, never the whole server. Running out raises `RegexTimeout`;
- **compiling** can take seconds and gigabytes (`(?:a{3000}){3000}`): a pattern with a counted
  repeat, or a long one, is first compiled in a killable, memory-capped worker
  (`engine.sandbox`), and refused if it takes more than `limits.REGEX_COMPILE_SECONDS`. Verdicts
  are cached (bounded), so an edit re-checks only a pattern that changed.

`transformers_compat.install_regex_bounds()` makes transformers' chat-parsing modules compile and
match through `bounded_regex` (this module's stand-in for `regex`), so the bounds hold on every
path: the app's refresh, runs and step-through, the checks, and the command line.
"""

from __future__ import annotations

import contextvars
import signal
import threading
import time
import types
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from typing import Any

import regex

from . import limits

# The longest a regex call holds the GIL before it is re-run with the GIL released.
SLICE = 0.02
# How long a compile verdict may take, a worker's start included.
VERDICT_SECONDS = 10.0


class RegexTimeout(TimeoutError):
    """An author regex ran out of its time budget: `pattern` is the one that was running."""

    def __init__(self, pattern: str, seconds: float):
        super().__init__(f"the regex {pattern!r} took longer than {seconds:g} s to match")
        self.pattern = pattern
        self.seconds = seconds


class RegexBudget:
    """Seconds of regex matching a piece of work may use, summed over every call it makes."""

    def __init__(self, seconds: float | None = None):
        self.seconds = limits.REGEX_SECONDS if seconds is None else seconds
        self.spent = 0.0
        self.held: dict[int, float] = {}  # seconds reserved by calls still running, by thread

    @property
    def left(self) -> float:
        return self.seconds - self.spent

    def left_here(self) -> float:
        """What a call on this thread may use: what is left, this thread's own reservations given back
        (a pattern matched inside another's `finditer` loop is not held back by that loop)."""
        return self.left + self.held.get(threading.get_ident(), 0.0)

    def active(self) -> _Active:
        """`with budget.active():` charges regex calls made inside the block to this budget (and to
        any budget already active around it: a trace inside a run of every check uses both)."""
        return _Active(self)


class _Active:
    """The context manager `RegexBudget.active` returns (a class, not a generator: a trace enters
    one for every chunk it is fed)."""

    __slots__ = ("budget", "token")

    def __init__(self, budget: RegexBudget):
        self.budget = budget

    def __enter__(self) -> RegexBudget:
        budgets = _active.get()
        self.token = _active.set(budgets if self.budget in budgets else (*budgets, self.budget))
        return self.budget

    def __exit__(self, *exc: Any) -> None:
        _active.reset(self.token)


class RegexAllowance(RegexBudget):
    """A budget that refills: `seconds` of matching every `period` seconds, never more than
    `seconds` saved up. Given to each visitor, so however often they edit, their regexes use at
    most that share of a core (each parse still has its own budget too)."""

    def __init__(self, seconds: float | None = None, period: float = 10.0):
        super().__init__(seconds)
        self.rate = self.seconds / period
        self._at = time.monotonic()

    @property
    def left(self) -> float:
        now = time.monotonic()
        self.spent = max(0.0, self.spent - (now - self._at) * self.rate)
        self._at = now
        return self.seconds - self.spent


_active: contextvars.ContextVar[tuple[RegexBudget, ...]] = contextvars.ContextVar("regex_budgets", default=())


def runs_author_regexes(template: Any) -> bool:
    """Whether parsing with this compiled response template can run a pattern the author wrote (a
    bounded one: `*_pattern` keys, or a content parser with patterns of its own). A template of
    literal delimiters only needs no budget (see `LITERAL_CHARS`)."""
    patterns = [template.start_anchor_re] + [p for f in template.fields.values() for p in (f.open_re, f.close_re)]
    if any(isinstance(p, BoundedPattern) for p in patterns):
        return True
    return any(f.content == "xml-inline" or (isinstance(f.content_args, dict) and f.content_args)
               for f in template.fields.values())


NO_BUDGET = nullcontext()


def regex_budget(seconds: float | None = None) -> _Active:
    """`with regex_budget(5):` bounds every author regex call in the block to 5 s in total."""
    return RegexBudget(seconds).active()


def _budgets() -> tuple[RegexBudget, ...]:
    return _active.get() or (RegexBudget(),)


class BoundedPattern:
    """A compiled `regex` pattern whose every match carries a time limit (see the module doc).
    Everything else (`pattern`, `groupindex`, `flags`…) is the compiled pattern's own."""

    __slots__ = ("_compiled",)

    def __init__(self, compiled: Any):
        self._compiled = compiled

    def __getattr__(self, name: str) -> Any:
        return getattr(self._compiled, name)

    def __repr__(self) -> str:
        return f"BoundedPattern({self._compiled.pattern!r})"

    def __eq__(self, other: object) -> bool:
        inner = other._compiled if isinstance(other, BoundedPattern) else other
        return self._compiled == inner

    def __hash__(self) -> int:
        return hash(self._compiled)

    def __reduce__(self) -> tuple:
        return compile, (self._compiled.pattern, self._compiled.flags)

    def __copy__(self) -> BoundedPattern:
        return self

    def __deepcopy__(self, memo: dict) -> BoundedPattern:
        return self

    def _run(self, method: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        """`method(*args, **kwargs)` within the active budgets (a fresh one when none is active),
        charging the time it took: first holding the GIL for at most SLICE seconds, then, if it
        needs longer, with the GIL released."""
        budgets = _budgets()
        left = min(b.left_here() for b in budgets)
        if left <= 0:
            raise RegexTimeout(self._compiled.pattern, min(b.seconds for b in budgets))
        _reserve(budgets, left)
        start = time.perf_counter()
        try:
            try:
                return method(*args, timeout=left if left < SLICE else SLICE, **kwargs)
            except TimeoutError:
                if left <= SLICE:
                    raise
            return method(*args, timeout=max(left - (time.perf_counter() - start), 0.001), concurrent=True, **kwargs)
        except TimeoutError:
            raise RegexTimeout(self._compiled.pattern, min(b.seconds for b in budgets)) from None
        finally:
            _reserve(budgets, -left, time.perf_counter() - start)  # the reservation given back, what it took charged

    def search(self, *args: Any, **kwargs: Any) -> Any:
        return self._run(self._compiled.search, args, kwargs)

    def match(self, *args: Any, **kwargs: Any) -> Any:
        return self._run(self._compiled.match, args, kwargs)

    def fullmatch(self, *args: Any, **kwargs: Any) -> Any:
        return self._run(self._compiled.fullmatch, args, kwargs)

    def findall(self, *args: Any, **kwargs: Any) -> Any:
        return self._run(self._compiled.findall, args, kwargs)

    def split(self, *args: Any, **kwargs: Any) -> Any:
        return self._run(self._compiled.split, args, kwargs)

    def sub(self, *args: Any, **kwargs: Any) -> Any:
        return self._run(self._compiled.sub, args, kwargs)

    def subn(self, *args: Any, **kwargs: Any) -> Any:
        return self._run(self._compiled.subn, args, kwargs)

    def finditer(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        """Matches one by one, each found within what is left of the budget (the `regex` module
        counts a scanner's timeout over its matching, not over the time between items)."""
        pattern = self._compiled.pattern
        budgets = _budgets()
        left = min(b.left_here() for b in budgets)
        if left <= 0:
            raise RegexTimeout(pattern, min(b.seconds for b in budgets))
        _reserve(budgets, left)
        return _charged(pattern, self._compiled.finditer(*args, **kwargs, timeout=left, concurrent=True), budgets, left)


def _reserve(budgets: tuple[RegexBudget, ...], seconds: float, spent: float = 0.0) -> None:
    """Reserve `seconds` on this thread (negative: give back) and charge `spent`. A call reserves all it
    may use before it starts, so calls running at once on other threads with one budget (a client's
    sessions share an allowance) cannot each spend all of it: the second finds nothing left."""
    me = threading.get_ident()
    for budget in budgets:
        budget.spent += seconds + spent
        held = budget.held.get(me, 0.0) + seconds
        if held > 1e-9:
            budget.held[me] = held
        else:
            budget.held.pop(me, None)


def _charged(pattern: str, matches: Iterator[Any], budgets: tuple[RegexBudget, ...], reserved: float) -> Iterator[Any]:
    limit = min(b.seconds for b in budgets)
    used = 0.0
    try:
        while True:
            start = time.perf_counter()
            try:
                item = next(matches)
            except StopIteration:
                return
            except TimeoutError:
                raise RegexTimeout(pattern, limit) from None
            finally:
                used += time.perf_counter() - start
            if used > reserved:
                raise RegexTimeout(pattern, limit)
            yield item
    finally:
        _reserve(budgets, -reserved, used)


# ----- compiling -----------------------------------------------------------------------------

_RISKY = regex.compile(r"\{\s*\d")  # a counted repeat: the one construct that multiplies a pattern's size
# Literal text and alternatives, nothing else (what transformers compiles `open`/`close` literals to):
# such a pattern cannot backtrack, so matching it costs at most its length per character of text.
_LITERAL = regex.compile(r"(?:[^\\.^$*+?{}\[\]()|]|\\[^0-9A-Za-z]|\|)*")
LITERAL_CHARS = 256
_verdicts: OrderedDict[tuple[str, int], str | None] = OrderedDict()
_verdicts_lock = threading.Lock()
_VERDICTS_KEPT = 1024


def compile(pattern: Any, flags: int = 0, **kwargs: Any) -> Any:
    """`regex.compile`, bounded: a costly pattern raises `regex.error` saying why (transformers
    turns that into "invalid open_pattern regex: …" on the field)."""
    if isinstance(pattern, BoundedPattern):
        return pattern
    if isinstance(pattern, str) and len(pattern) <= LITERAL_CHARS and _LITERAL.fullmatch(pattern):
        return regex.compile(pattern, flags, **kwargs)  # linear already: no timeout to pay for
    if isinstance(pattern, str) and (len(pattern) > 1000 or _RISKY.search(pattern)):
        problem = compile_problem(pattern, flags)
        if problem is not None:
            raise regex.error(problem)
    return BoundedPattern(regex.compile(pattern, flags, **kwargs))


def compile_problem(pattern: str, flags: int = 0) -> str | None:
    """Why `pattern` must not be compiled in this process (too slow or too big to compile), or None.
    Decided by compiling it in a fresh worker process that is thrown away afterwards; cached."""
    key = (pattern, flags)
    with _verdicts_lock:  # request threads share the cache
        if key in _verdicts:
            _verdicts.move_to_end(key)
            return _verdicts[key]
    from . import process_role, sandbox

    if process_role.IN_WORKER:  # already in a killable, memory-capped worker (the checks): compile here
        return None
    if not _verdict_slots.acquire(timeout=VERDICT_SECONDS):
        return "the server is too busy to check this pattern now; try again"  # transient: not cached
    worker = sandbox.Worker()
    try:
        problem = worker.call(compile_cost, {"pattern": pattern, "flags": flags}, VERDICT_SECONDS)
    except sandbox.SandboxCrashed:
        problem = "it needs more memory to compile than allowed (a counted repeat that is too large?)"
    except sandbox.SandboxTimeout:
        problem = f"it takes longer than {VERDICT_SECONDS:g} s to compile (a counted repeat that is too large?)"
    finally:
        worker.stop()
        _verdict_slots.release()
    with _verdicts_lock:
        _verdicts[key] = problem
        while len(_verdicts) > _VERDICTS_KEPT:
            _verdicts.popitem(last=False)
    return problem


# Verdicts computed at once (each in its own short-lived process).
_verdict_slots = threading.BoundedSemaphore(2)
# Address space a compile may add in its worker (real patterns need well under a megabyte).
COMPILE_MEMORY_BYTES = 256 * 1024 * 1024


class _TooSlow(Exception):
    pass


def compile_cost(pattern: str, flags: int = 0) -> str | None:
    """Run in a throwaway worker: compile `pattern` under a CPU-time alarm and a tighter
    address-space limit (never restored: the process ends after this), and say what is wrong
    with it, if anything. Compiling is mostly Python code, so the alarm lands promptly."""
    too_slow = (f"it takes longer than {limits.REGEX_COMPILE_SECONDS:g} s to compile "
                "(a counted repeat that is too large?)")
    try:
        _limit_this_process()
        start = time.process_time()
        regex.compile(pattern, flags)
        return too_slow if time.process_time() - start > limits.REGEX_COMPILE_SECONDS else None
    except _TooSlow:
        return too_slow
    except MemoryError:
        return "it needs more memory to compile than allowed (a counted repeat that is too large?)"
    except regex.error as e:
        return str(e)
    except (ValueError, TypeError, OverflowError, RecursionError) as e:
        return f"{type(e).__name__}: {e}"


def _limit_this_process() -> None:
    def alarm(*_: Any) -> None:
        raise _TooSlow

    try:
        import resource

        with open("/proc/self/statm") as statm:
            size = int(statm.read().split()[0]) * resource.getpagesize()
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        cap = size + COMPILE_MEMORY_BYTES
        if hard == resource.RLIM_INFINITY or cap < hard:
            resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    except (ImportError, OSError, ValueError):  # not Linux: the worker's own cap still holds
        pass
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGVTALRM, alarm)
        signal.setitimer(signal.ITIMER_VIRTUAL, limits.REGEX_COMPILE_SECONDS)


# ----- the stand-in for the `regex` module ----------------------------------------------------


def _module() -> types.ModuleType:
    """A module that is `regex` except that compiling and matching go through the bounds above."""
    module = types.ModuleType("regex", "The regex module, with every compile and match bounded (engine.regex_bounds).")
    module.__dict__.update({k: v for k, v in vars(regex).items() if not k.startswith("__")})

    module.compile = compile
    module.search = lambda pattern, string, flags=0, *a, **k: compile(pattern, flags).search(string, *a, **k)
    module.match = lambda pattern, string, flags=0, *a, **k: compile(pattern, flags).match(string, *a, **k)
    module.fullmatch = lambda pattern, string, flags=0, *a, **k: compile(pattern, flags).fullmatch(string, *a, **k)
    module.findall = lambda pattern, string, flags=0, *a, **k: compile(pattern, flags).findall(string, *a, **k)
    module.finditer = lambda pattern, string, flags=0, *a, **k: compile(pattern, flags).finditer(string, *a, **k)
    module.split = lambda pattern, string, maxsplit=0, flags=0, *a, **k: compile(pattern, flags).split(string, maxsplit, *a, **k)
    module.sub = lambda pattern, repl, string, count=0, flags=0, *a, **k: compile(pattern, flags).sub(repl, string, count, *a, **k)
    module.subn = lambda pattern, repl, string, count=0, flags=0, *a, **k: compile(pattern, flags).subn(repl, string, count, *a, **k)
    return module


bounded_regex = _module()
