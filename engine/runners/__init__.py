"""Runners: where model output comes from. Each streams `Chunk`s for a rendered prompt and stops
promptly when asked; every failure is a `RunnerError` carrying a diagnostic.

- `RecordedRunner`: replays a raw output (a preset recording, or pasted text);
- `SimulatedRunner`: what the chat template itself writes for a plausible reply (no model);
- `LocalRunner`: a checkpoint run with transformers on this machine;
- `RemoteRunner`: an OpenAI-compatible `/v1/completions` server, for models that outgrow one machine;
- `build_runner`: the one function that builds any of them from run settings.
"""

from .base import Activity, Chunk, Runner, RunnerError
from .factory import build_runner
from .checkpoints import DEFAULT_MAX_SIZE_GB, Checkpoint, inspect_checkpoint
from .local import LocalRunner, held_model, load_model, unload_model
from .recorded import RecordedRunner, split_tokens
from .remote import RemoteRunner
from .simulated import SimulatedRunner, example_value, simulate_message

__all__ = [
    "Activity",
    "Checkpoint",
    "inspect_checkpoint",
    "Chunk",
    "DEFAULT_MAX_SIZE_GB",
    "LocalRunner",
    "RecordedRunner",
    "RemoteRunner",
    "Runner",
    "RunnerError",
    "SimulatedRunner",
    "build_runner",
    "example_value",
    "held_model",
    "load_model",
    "simulate_message",
    "split_tokens",
    "unload_model",
]
