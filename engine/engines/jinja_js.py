"""@huggingface/jinja (what transformers.js and the Hub's own pages render chat templates with), run
under Node.js. `install` puts the npm package once into the cache folder (`engine.npm_packages`:
`.cache/engines/` in the repository, or `$PLAYGROUND_ENGINES_CACHE`); where Node.js or the package
is missing, the engine is reported as not checked, never as a failure.

One Node.js process renders a whole batch (starting it costs ~0.1 s); it is killed when it overruns
its time, and its heap is capped."""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from pathlib import Path

from .. import npm_packages

PACKAGE = "@huggingface/jinja"
VERSION = "0.5.11"
SCRIPT = Path(__file__).with_name("render_jinja_js.mjs")
# Node's heap for one batch: chat templates need a few MB; a template building huge strings stops here.
HEAP_MB = 256

_lock = threading.Lock()
_status: dict[str, str | None] = {}


def cache_dir() -> Path:
    return npm_packages.cache_dir()


def module_path() -> Path:
    return npm_packages.package_dir(PACKAGE) / "dist" / "index.js"


def unavailable() -> str | None:
    """Why this engine cannot run here (None when it can). Only looks: `install` runs npm, so a check
    (in a worker, on a visitor's clock) never waits for an install."""
    if shutil.which("node") is None:
        return "not checked: Node.js not found"
    if npm_packages.installed_version(PACKAGE) == VERSION:
        return None
    with _lock:
        failed = _status.get(str(cache_dir()))
    if failed:
        return failed
    if shutil.which("npm") is None:
        return f"not checked: {PACKAGE} is not installed and npm was not found"
    return f"not checked: {PACKAGE} is not installed yet (the app's start, python -m engine check and .ci/run install it)"


def _prepare() -> str | None:
    if shutil.which("node") is None:
        return "not checked: Node.js not found"
    why = npm_packages.install({PACKAGE: VERSION})
    return f"not checked: {why}" if why else None


def install() -> str | None:
    """Install the package once per process (what `.ci/run`, the app's launch and `python -m engine
    check` call); returns why it cannot run, or None."""
    with _lock:
        key = str(cache_dir())
        if key not in _status:
            _status[key] = _prepare()
        return _status[key]


def render(jobs: list[tuple[str, dict]], max_chars: int, timeout: float) -> list[tuple[str | None, str | None]]:
    """Render each (source, context): (text, None) or (None, the engine's error message). The caller
    has checked `unavailable()`."""
    request = {"module": str(module_path()), "max_chars": max_chars, "jobs": [{"source": s, "context": c} for s, c in jobs]}
    try:
        done = subprocess.run(
            ["node", f"--max-old-space-size={HEAP_MB}", str(SCRIPT)],
            input=json.dumps(request, ensure_ascii=False), capture_output=True, text=True, timeout=timeout,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return [(None, f"stopped: rendering took longer than {timeout:g} s (a loop?)")] * len(jobs)
    except OSError as e:
        return [(None, f"Node.js could not start: {e}")] * len(jobs)
    try:
        results = json.loads(done.stdout)
    except ValueError:
        last = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        if "heap out of memory" in done.stderr:
            last = "stopped: the template used more memory than allowed"
        return [(None, last)] * len(jobs)
    return [(r.get("text"), r.get("error")) for r in results]
