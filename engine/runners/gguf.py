"""GGUF checkpoints for the local runner: a `.gguf` file (or a folder holding one, or a packaged
model from `engine.model_packages`) is read by transformers, `from_pretrained(folder, gguf_file=…)`,
its tokenizer, chat template, config and weights all from the file.

transformers' GGUF reader is slow (about 25 s of CPU for SmolLM2's 98 MB file, a minute on a busy
machine, most of it walking the vocabulary and the tensor names in Python), so each file is converted once and kept as a safetensors
folder (what `save_pretrained` writes: config, generation config, tokenizer, chat template, weights
unpacked to float32) under the models cache, in `converted/<the file's SHA-256>/`. Every later load
reads that folder, in seconds. The conversion runs in a child process: it holds the GIL for most of
that minute, which in the app's process would stall every visitor's page.

GGUF is data (a header, strings and arrays of numbers): nothing in it can run code, and the
conversion never asks for remote code. The weights' size once unpacked is read from the file's
header before anything is converted, so the size cap applies to what will be in memory."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from math import prod
from pathlib import Path

from ..errors import log_failure
from ..model_packages import cache_dir
from .base import RunnerError

SUFFIX = ".gguf"
# Written last into a converted folder: a folder without it is not (yet) a conversion.
MARKER = "converted.json"
CONVERT_TIMEOUT = 1800.0
_ROOT = Path(__file__).resolve().parents[2]
_hashes: dict[tuple[str, int, int], str] = {}


@dataclass(frozen=True)
class GgufFile:
    """A GGUF file as its header describes it: the architecture and the bytes its weights take
    on disk and once unpacked (float32 for quantized files, else the file's own float type)."""

    path: Path
    architecture: str
    file_bytes: int
    weights_bytes: int


def is_gguf(path: Path) -> bool:
    return path.suffix.lower() == SUFFIX and path.is_file()


def gguf_in(folder: Path) -> Path | None:
    """The one .gguf file in `folder`, or None. Several are a RunnerError: which one is meant?"""
    found = sorted(p for p in folder.iterdir() if is_gguf(p))
    if len(found) > 1:
        raise RunnerError(f"{folder} holds {len(found)} GGUF files ({', '.join(p.name for p in found[:4])}).",
                          hint="Give the .gguf file itself as the model.")
    return found[0] if found else None


def read_gguf(path: Path) -> GgufFile:
    """The file's header (milliseconds: no tensor data and no vocabulary is read). Raises RunnerError."""
    from ..transformers_compat import gguf_header

    try:
        header = gguf_header(str(path))
    except (ValueError, OSError, IndexError) as e:  # not GGUF, truncated, an unknown tensor type
        message = str(e).replace(str(path), path.name) if isinstance(e, ValueError) else f"it cannot be read ({e})"
        raise RunnerError(f"{path.name} is not a GGUF file transformers can read: {message}",
                          hint="Use a .gguf file written by llama.cpp's converter, or a safetensors folder.") from None
    dtype = header.dtype
    itemsize = dtype.itemsize if dtype is not None else 4  # quantized blocks unpack to float32
    elements = sum(prod(tensor.shape) for tensor in header.tensors)
    return GgufFile(path, header.architecture, path.stat().st_size, elements * itemsize)


def file_hash(path: Path) -> str:
    """The file's SHA-256 (remembered for as long as its size and modification time stay the same)."""
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if key not in _hashes:
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            while block := f.read(1 << 22):
                digest.update(block)
        _hashes[key] = digest.hexdigest()
    return _hashes[key]


def converted_dir(path: Path) -> Path:
    """Where the conversion of `path` is (or will be) kept: keyed by the file's contents, so a copy or
    a rename converts once, and a changed file is converted again."""
    return cache_dir() / "converted" / file_hash(path)[:32]


def is_converted(path: Path) -> bool:
    return (converted_dir(path) / MARKER).is_file()


def converted(path: Path, on_convert=None) -> Path:
    """The safetensors folder for the GGUF file `path`, converting it first if this file never was
    (`on_convert()` is called just before, for a page to say so). Several processes may ask at once:
    one converts, the others wait for it. Raises RunnerError."""
    folder = converted_dir(path)
    if (folder / MARKER).is_file():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f"{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (folder / MARKER).is_file():
            return folder
        if on_convert is not None:
            on_convert()
        work = Path(tempfile.mkdtemp(prefix=f"{folder.name}.", suffix=".partial", dir=folder.parent))
        try:
            _convert_in_child(path, work)
            shutil.rmtree(folder, ignore_errors=True)  # a conversion cut off midway, from before
            work.chmod(0o755)  # mkdtemp's folder is private; the cache is the machine's
            os.replace(work, folder)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return folder


def _convert_in_child(path: Path, out: Path) -> None:
    started = time.monotonic()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_VERBOSITY": "error",
           "PYTHONPATH": os.pathsep.join(p for p in (str(_ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    command = [sys.executable, "-c", "import sys; from engine.runners.gguf import convert; convert(sys.argv[1], sys.argv[2])",
               str(path), str(out)]  # fmt: skip
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=CONVERT_TIMEOUT, env=env, cwd=_ROOT)
    except subprocess.TimeoutExpired:
        raise RunnerError(f"Converting {path.name} took over {CONVERT_TIMEOUT:g} s and was stopped.",
                          hint="Convert it once with transformers yourself and give the saved folder.") from None
    if done.returncode != 0 or not (out / MARKER).is_file():
        lines = [line for line in done.stderr.splitlines() if line.strip() and "it/s" not in line]
        last = (lines or ["no message"])[-1].strip()
        log_failure(f"Converting {path} failed", RuntimeError(done.stderr[-4000:]))
        raise RunnerError(f"Could not convert {path.name} ({last[:200]}).",
                          hint="transformers reads GGUF files of the architectures it supports (llama, qwen2, "
                               "gemma3, …); the server log has the details.")
    data = json.loads((out / MARKER).read_text())
    data["seconds"] = round(time.monotonic() - started, 1)
    (out / MARKER).write_text(json.dumps(data, indent=2) + "\n")


def convert(gguf: str, out: str) -> None:
    """What the child process does: read the GGUF with transformers and `save_pretrained` it to `out`.
    The file is read from a folder holding nothing else (a link to it), so every file saved comes from
    the GGUF, not from a config or tokenizer lying next to it."""
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    from ..transformers_compat import saveable_unpacked_gguf

    source, target = Path(gguf).resolve(), Path(out)
    with tempfile.TemporaryDirectory(prefix="playground-gguf-") as alone:
        (Path(alone) / source.name).symlink_to(source)
        tokenizer = AutoTokenizer.from_pretrained(alone, gguf_file=source.name, trust_remote_code=False)
        model = AutoModelForCausalLM.from_pretrained(alone, gguf_file=source.name, trust_remote_code=False,
                                                     quantization_config=GgufConfig(dequantize=True))
    saveable_unpacked_gguf(model)
    tokenizer.save_pretrained(target)
    model.save_pretrained(target)  # safetensors (the transformers 5 default)
    marker = {"gguf": source.name, "sha256": file_hash(source), "transformers": transformers.__version__}
    (target / MARKER).write_text(json.dumps(marker, indent=2) + "\n")


def folder_bytes(folder: Path) -> int:
    """Bytes of the files in `folder` (a converted model's size on disk)."""
    return sum(p.stat().st_size for p in folder.iterdir() if p.is_file())
