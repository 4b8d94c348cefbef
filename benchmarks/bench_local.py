"""What the local runner costs over transformers' own `generate`, on the same tiny model.

`local_runner_ratio` (target ≥ 0.9): tokens per second of `engine.runners.LocalRunner.stream`
(a background `generate()` with a streamer, the stop criterion, each token decoded as it comes)
over tokens per second of a bare `model.generate` call, same model, same prompt, same number of
new tokens, the same eos and pad ids (greedy, `min_new_tokens` = `max_new_tokens`, so both write
exactly as many; one torch thread for both). The model
is the tests' tiny random-weight Llama (tests/tiny_model.py, built offline in a temp folder): a
step takes about a millisecond, so any per-token cost of the runner shows; on a real model a step
takes 10-100 times longer and the runner's share is smaller still.

Interleaved runs, best of each (the machine is shared). Run: `python -m benchmarks.bench_local [--quick]`."""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path


def main(quick: bool = False) -> dict:
    import torch

    from engine.cases import Case, render_case
    from engine.runners import LocalRunner
    from engine.runners.local import load_model
    from tests.tiny_model import CHATML_STOP_TOKENS, CHATML_TEMPLATE, build_tiny_model

    tokens = 64 if quick else 256
    repeats = 3 if quick else 7
    # One intra-op thread for both: on a shared 2-core machine, torch's spinning worker threads make
    # a step's time swing several-fold with the other load, which would drown the difference.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as folder:
        model_dir = build_tiny_model(Path(folder) / "tiny")
        case = Case("bench", [{"role": "user", "content": "What is the weather in Paris today?"}])
        prompt = render_case(CHATML_TEMPLATE, case, {"eos_token": "<|im_end|>"}).prompt
        assert prompt is not None
        loaded = load_model(str(model_dir), device="cpu")
        model, tokenizer = loaded.model, loaded.tokenizer
        inputs = tokenizer(prompt, add_special_tokens=False, return_tensors="pt")
        runner = LocalRunner(str(model_dir), max_new_tokens=tokens, temperature=0, stop_tokens=CHATML_STOP_TOKENS,
                             device="cpu", generate_kwargs={"min_new_tokens": tokens})  # fmt: skip

        def bare() -> float:
            start = time.perf_counter()
            with torch.inference_mode():
                out = model.generate(**inputs, max_new_tokens=tokens, min_new_tokens=tokens, do_sample=False,
                                     eos_token_id=[tokenizer.eos_token_id], pad_token_id=tokenizer.pad_token_id)  # fmt: skip
            elapsed = time.perf_counter() - start
            assert out.shape[-1] - inputs["input_ids"].shape[-1] == tokens
            return tokens / elapsed

        def streamed() -> float:
            start = time.perf_counter()
            count = 0
            for chunk in runner.stream(prompt):
                count = chunk.tokens
            elapsed = time.perf_counter() - start
            assert count == tokens, count
            return tokens / elapsed

        bare(), streamed()  # warm: first-call allocations, the decoder
        bare_rates, runner_rates = [], []
        for _ in range(repeats):
            bare_rates.append(bare())
            runner_rates.append(streamed())
    torch.set_num_threads(threads)
    best_bare, best_runner = max(bare_rates), max(runner_rates)
    print(f"tiny Llama, {tokens} new tokens, best of {repeats}: bare generate {best_bare:,.0f} tokens/s "
          f"(median {statistics.median(bare_rates):,.0f}), local runner {best_runner:,.0f} tokens/s "
          f"(median {statistics.median(runner_rates):,.0f}): {best_runner / best_bare:.2f}x")  # fmt: skip
    return {"local_runner_ratio": best_runner / best_bare, "bare_tokens_per_s": best_bare, "runner_tokens_per_s": best_runner}


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
