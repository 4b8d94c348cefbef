"""Runners: where model output comes from. Each streams `Chunk`s for a rendered prompt and stops
promptly when asked; every failure is a `RunnerError` carrying a diagnostic.

- `RecordedRunner`: replays a raw output (a preset recording, or pasted text);
- `SimulatedRunner`: what the chat template itself writes for a plausible reply (no model);
- `LocalRunner`: a checkpoint run with transformers on this machine;
- `RemoteRunner`: an OpenAI-compatible `/v1/completions` server, for models that outgrow one machine.
"""

from .base import Chunk, Runner, RunnerError
from .local import DEFAULT_MAX_SIZE_GB, LocalRunner, load_model, loaded_model, loaded_tokenizer, unload_model
from .recorded import RecordedRunner, split_tokens
from .remote import RemoteRunner
from .simulated import SimulatedRunner, example_value, simulate_message

__all__ = [
    "DEFAULT_MAX_SIZE_GB",
    "Chunk",
    "LocalRunner",
    "RecordedRunner",
    "RemoteRunner",
    "Runner",
    "RunnerError",
    "SimulatedRunner",
    "example_value",
    "load_model",
    "loaded_model",
    "loaded_tokenizer",
    "simulate_message",
    "split_tokens",
    "unload_model",
]
