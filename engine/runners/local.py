"""The local runner: a checkpoint (Hub id, local folder, .gguf file or packaged model) run with
transformers on this machine.

Safety first: weights load only from safetensors (pickled weights can run code) or GGUF (converted
once to safetensors: engine.runners.gguf), a model's own code never runs (`trust_remote_code=False`),
and a size cap is checked before anything large is downloaded or converted
(engine.runners.checkpoints, which also downloads with progress). Loaded models live in a process-wide cache of one, behind a lock, so concurrent users
of a Space neither load a model twice nor fill memory with several. The cache is keyed by what was
asked for and changes nothing anyone sees: which model (and so which tokenizer) a run uses is the
caller's choice, passed explicitly; a runner exposes the tokenizer it ran with (`LocalRunner.tokenizer`)
for its caller to keep.
"""

from __future__ import annotations

import gc
import queue
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..diagnostics import Diagnostic
from ..errors import log_failure, quoted
from ..public import policy
from .base import Activity, Chunk, RunnerError
from .checkpoints import DEFAULT_MAX_SIZE_GB, OFFLINE_HINT, Checkpoint, check_size, download, inspect_checkpoint, is_unreachable
from .checkpoints import token as hub_token
from .gguf import converted
from .model_line import LeftTheLine, TakeTurns


@dataclass
class LoadedModel:
    """The model currently held in memory, with what it was loaded as."""

    name: str
    source: str  # the folder or Hub id it was loaded from (a GGUF file's converted folder)
    device: str
    dtype: Any
    size_gb: float
    tokenizer: Any
    model: Any


_lock = threading.Lock()
_held: LoadedModel | None = None  # the cache: at most one model in memory
# Runs take turns with the model (loading one evicts the other): first come, first served.
GENERATIONS = TakeTurns()


def held_model() -> LoadedModel | None:
    """The model the cache holds now, if any (for tests and diagnostics; never to pick a tokenizer:
    another caller may have replaced it)."""
    return _held


def unload_model() -> None:
    """Drop the held model (frees its memory once no generation still uses it)."""
    global _held
    with _lock:
        _held = None
        gc.collect()


def load_model(model: str, device: str = "auto", dtype: str = "auto", max_size_gb: float = DEFAULT_MAX_SIZE_GB,
               on_progress: Callable[[Activity], None] | None = None) -> LoadedModel:
    """Load `model` (a local folder, a .gguf file, a packaged model's name or a Hub id), or return it
    if it is the one held. Loading a different model drops the held one first. `on_progress` hears
    each step (checking the size, downloading with the bytes so far, converting a GGUF file the first
    time, loading). Raises RunnerError."""
    global _held
    report = on_progress or (lambda activity: None)
    if not isinstance(model, str) or not model.strip():
        raise RunnerError("No model given.", hint="Give a Hub id (e.g. Qwen/Qwen3-0.6B) or a local folder.")
    model = model.strip()
    device = pick_device(device)
    with _lock:
        held = _held
        same_dtype = held is not None and (dtype == "auto" or str(held.dtype) == f"torch.{dtype}")
        if held is not None and held.name == model and held.device == device and same_dtype:
            check_size(Checkpoint(model, held.source, held.size_gb), max_size_gb)
            return held
        report(Activity("checking", model))
        checkpoint = inspect_checkpoint(model)
        check_size(checkpoint, max_size_gb)  # before anything large is downloaded
        source = download(checkpoint, report)
        if checkpoint.gguf:  # converted once, then read as the safetensors folder it became
            source = str(converted(Path(source), lambda: report(Activity("converting", model))))
            if held is not None and held.source == source and held.device == device and same_dtype:
                return held  # the same file by another name (its path, a link, the packaged name)
        report(Activity("loading", model))
        _held = None  # one model at a time: let the old one go before the new one arrives
        gc.collect()
        tokenizer, loaded, chosen = _load(source, device, dtype)
        _held = LoadedModel(model, source, device, chosen, checkpoint.size_gb, tokenizer, loaded)
        return _held


def pick_device(device: str = "auto") -> str:
    """`auto`: cuda, then mps (Apple), then cpu."""
    import torch

    if device != "auto":
        return device
    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return "mps"
    return "cpu"


def _load(source: str, device: str, dtype: str) -> tuple[Any, Any, Any]:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    try:
        token = hub_token()
        config = AutoConfig.from_pretrained(source, trust_remote_code=False, token=token)
        if dtype == "auto":
            declared = str(getattr(config, "dtype", None) or getattr(config, "torch_dtype", None))
            # float16 is slow (and partly unsupported) on CPU: use float32 there. bfloat16 is fine.
            half = declared.removeprefix("torch.") == "float16"
            chosen: Any = torch.float32 if device == "cpu" and half else "auto"
        else:
            chosen = getattr(torch, dtype, None)
            if not isinstance(chosen, torch.dtype):
                raise RunnerError(f"Unknown dtype {dtype!r}.", hint="Use auto, float32, bfloat16 or float16.")
        tokenizer = AutoTokenizer.from_pretrained(source, trust_remote_code=False, token=token)
        model = AutoModelForCausalLM.from_pretrained(source, use_safetensors=True, trust_remote_code=False, dtype=chosen,
                                                     token=token)
        model.to(device)
        model.eval()
    except RunnerError:
        raise
    except Exception as e:  # noqa: BLE001 - every loading failure becomes a diagnostic
        log_failure(f"Loading the model {source} failed", e)
        hint = OFFLINE_HINT if is_unreachable(e) else None
        if "trust_remote_code" in str(e):
            hint = ("This model needs its own code to run, and the playground never runs a model's code. "
                    "Pick a model transformers supports.")
        raise RunnerError(f"Could not load {source} ({quoted(e)}).", hint=hint) from None
    return tokenizer, model, model.dtype


class LocalRunner:
    """Generates with a local model, streaming each token as it is produced (special tokens kept:
    they are usually the delimiters the response template looks for)."""

    def __init__(
        self,
        model: str,
        max_new_tokens: int = 512,
        temperature: float = 0.7,
        top_p: float = 1.0,
        seed: int | None = None,
        stop_tokens: list[str] | None = None,
        device: str = "auto",
        dtype: str = "auto",
        max_size_gb: float = DEFAULT_MAX_SIZE_GB,
        generate_kwargs: dict | None = None,
    ):
        if max_new_tokens < 1:
            raise RunnerError("max_new_tokens must be at least 1.")
        if temperature < 0 or not 0 < top_p <= 1:
            raise RunnerError("temperature must be at least 0 and top_p between 0 (excluded) and 1.")
        rules = policy()
        if problem := rules.local_model_problem(model.strip() if isinstance(model, str) else ""):
            raise RunnerError(problem, hint="Run the playground yourself to load any model.")
        if problem := rules.new_tokens_problem(max_new_tokens):
            raise RunnerError(problem, hint="Lower max new tokens.")
        self.model = model
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.top_p = top_p
        self.seed = seed
        self.stop_tokens = list(stop_tokens or [])
        self.device = device
        self.dtype = dtype
        self.max_size_gb = max_size_gb
        # Extra `generate()` arguments (e.g. a `prefix_allowed_tokens_fn` that scripts the output).
        self.generate_kwargs = dict(generate_kwargs or {})
        self.diagnostics: list[Diagnostic] = []
        self.thread: threading.Thread | None = None  # the generation thread of the last run
        self.tokenizer: Any = None  # the tokenizer of the model the last run used
        # What the run is doing before its first token (waiting in line, downloading with its
        # progress, loading), for the page to show; None when nothing is worth showing.
        self.activity: Activity | None = None

    def load(self) -> LoadedModel:
        return load_model(self.model, self.device, self.dtype, self.max_size_gb, self._report)

    def _report(self, activity: Activity) -> None:
        self.activity = activity

    def stream(
        self, prompt: str, *, tools: list | None = None, stop: threading.Event | None = None
    ) -> Iterator[Chunk]:
        """Tokens as they are generated, once it is this run's turn with the model (`activity`
        says how many runs are ahead meanwhile). Setting `stop` (or closing this iterator) leaves
        the line, or ends `generate()` at its next step; the generation thread is joined before the
        iterator finishes."""
        self.diagnostics = []
        try:
            with GENERATIONS.turn(stop, self._waiting):
                self.activity = None
                yield from self._generate(prompt, stop)
        except LeftTheLine:
            return

    def _waiting(self, ahead: int) -> None:
        self.activity = Activity("waiting", self.model, ahead=ahead) if ahead else None

    def _generate(self, prompt: str, stop: threading.Event | None) -> Iterator[Chunk]:
        import torch

        loaded = self.load()
        self.activity = Activity("generating", self.model)
        tokenizer, model = loaded.tokenizer, loaded.model
        self.tokenizer = tokenizer
        start = time.monotonic()
        # The chat template already wrote every special token the model needs (a BOS, say).
        inputs = tokenizer(prompt, add_special_tokens=False, return_tensors="pt").to(model.device)
        halt = threading.Event()  # set when the caller stops, or stops reading
        tokens: queue.Queue = queue.Queue()
        extra = dict(self.generate_kwargs)
        kwargs: dict[str, Any] = {
            "input_ids": inputs["input_ids"],
            "attention_mask": inputs["attention_mask"],
            "max_new_tokens": self.max_new_tokens,
            "do_sample": self.temperature > 0,
            **self._eos(tokenizer, model),
            **({"temperature": self.temperature, "top_p": self.top_p} if self.temperature > 0 else {}),
            **extra,
            # Ours always: Stop must work and tokens must reach the stream whatever the extras say.
            "stopping_criteria": _stopping_criteria(halt, stop, extra.get("stopping_criteria")),
            "streamer": _TokenQueue(tokens),
        }
        if self.seed is not None:
            torch.manual_seed(self.seed)

        def generate() -> None:
            try:
                with torch.inference_mode():
                    model.generate(**kwargs)
            except BaseException as e:  # noqa: BLE001 - handed to the consumer as a diagnostic
                tokens.put(e)
            finally:
                tokens.put(_END)

        self.thread = threading.Thread(target=generate, name="playground-generate", daemon=True)
        self.thread.start()
        decode = _decoder(tokenizer)
        count = 0
        waiting: list[int] = []  # ids of a character still incomplete: they go with the chunk that ends it
        try:
            while True:
                if stop is not None and stop.is_set():
                    return
                try:
                    item = tokens.get(timeout=0.05)
                except queue.Empty:
                    continue
                if item is _END:
                    return
                if isinstance(item, BaseException):
                    log_failure(f"Generating with {self.model} failed", item)
                    raise RunnerError(f"Generation failed ({quoted(item)}).",
                                      hint="Try fewer new tokens, a shorter prompt or a smaller model.")
                for token_id in item:
                    count += 1
                    waiting.append(token_id)
                    text = decode(token_id)
                    if text:
                        yield Chunk(text, count, time.monotonic() - start, tuple(waiting))
                        waiting = []
        finally:
            halt.set()
            self.thread.join(timeout=30)

    def _eos(self, tokenizer: Any, model: Any) -> dict[str, Any]:
        """The stop tokens as eos ids (with the model's own eos), multi-token ones as stop strings."""
        configured = model.generation_config.eos_token_id
        ids = list(configured) if isinstance(configured, list) else ([configured] if configured is not None else [])
        strings = []
        for token in self.stop_tokens:
            encoded = tokenizer.encode(token, add_special_tokens=False)
            if len(encoded) == 1:
                ids.append(encoded[0])
            elif encoded:
                strings.append(token)
        out: dict[str, Any] = {}
        if ids:
            out["eos_token_id"] = list(dict.fromkeys(ids))
        # A pad id keeps generate() from warning; any of these will do for a single sequence.
        candidates = [model.generation_config.pad_token_id, tokenizer.pad_token_id, *ids]
        out["pad_token_id"] = next((c for c in candidates if c is not None), None)
        if strings:
            out.update(stop_strings=strings, tokenizer=tokenizer)
        return out


_END = object()


class _TokenQueue:
    """A `generate()` streamer that hands each new token id to the consumer thread."""

    def __init__(self, out: queue.Queue):
        self.out = out
        self.prompt_seen = False

    def put(self, value: Any) -> None:
        if not self.prompt_seen:  # the first call carries the prompt
            self.prompt_seen = True
            return
        self.out.put([int(v) for v in value.reshape(-1).tolist()])

    def end(self) -> None:
        pass


def _stopping_criteria(halt: threading.Event, stop: threading.Event | None, others: Any = None) -> Any:
    """A `StoppingCriteria` that ends `generate()` at its next step once the caller's stop (or our own
    halt) is set, with any criteria the caller passed."""
    import torch
    from transformers import StoppingCriteria, StoppingCriteriaList

    class StopWhenSet(StoppingCriteria):
        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            done = halt.is_set() or (stop is not None and stop.is_set())
            return torch.full((input_ids.shape[0],), done, dtype=torch.bool, device=input_ids.device)

    return StoppingCriteriaList([StopWhenSet(), *(others or [])])


def _decoder(tokenizer: Any):
    """token id -> new text (or "" while a character is still incomplete), special tokens kept."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        from tokenizers.decoders import DecodeStream

        stream = DecodeStream([], skip_special_tokens=False)
        return lambda token_id: stream.step(backend, token_id) or ""
    ids: list[int] = []
    shown = [0]

    def step(token_id: int) -> str:  # slow tokenizers: decode everything, emit the new complete text
        ids.append(token_id)
        text = tokenizer.decode(ids, skip_special_tokens=False)
        if text.endswith("\ufffd"):
            return ""
        new, shown[0] = text[shown[0] :], len(text)
        return new

    return step
