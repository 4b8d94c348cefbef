"""A pinned npm package in a cache folder: installed once (npm, under a file lock, since several
processes may start at once), then only looked up. @huggingface/jinja (the transformers.js engine)
and axe-core (the browser tests' accessibility audit) are installed this way."""

from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
from pathlib import Path

INSTALL_TIMEOUT = 180.0


def installed_version(folder: Path, package: str) -> str | None:
    """The version of `package` installed under `folder` (None when it is not)."""
    try:
        return json.loads((folder / "node_modules" / package / "package.json").read_text()).get("version")
    except (OSError, ValueError):
        return None


def install(folder: Path, package: str, version: str) -> str | None:
    """Install `package@version` under `folder` unless it is there; returns why it could not
    ("not checked: …"), or None."""
    if installed_version(folder, package) == version:
        return None
    npm = shutil.which("npm")
    if npm is None:
        return f"not checked: {package} is not installed and npm was not found"
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".install-lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if installed_version(folder, package) == version:
            return None
        try:
            done = subprocess.run(
                [npm, "install", "--prefix", str(folder), "--no-audit", "--no-fund", "--no-package-lock",
                 "--loglevel=error", f"{package}@{version}"],
                capture_output=True, text=True, timeout=INSTALL_TIMEOUT,
            )  # fmt: skip
        except (OSError, subprocess.TimeoutExpired) as e:
            return f"not checked: installing {package} failed ({type(e).__name__})"
    if done.returncode != 0 or installed_version(folder, package) != version:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        return f"not checked: installing {package} failed ({last})"
    return None
