"""The author's document in the engine: which kwargs are passed, where the generation prompt starts,
the one runner factory, bounded checks, and presets no caller can change for another."""

from __future__ import annotations

import json

import pytest

from engine.cases import Case, Recording, generation_start
from engine.workspace import run_preset_checks
from engine.presets import load_preset
from engine.response_spec import literal_delimiters, load_response_spec
from engine.runners import LocalRunner, RecordedRunner, RemoteRunner, RunnerError, SimulatedRunner, build_runner
from engine.workspace import PASTED, RunSettings, Workspace, passed_kwargs
from tests.test_app_support import CHATML, OUTPUT, RESPONSE, workspace


def test_kwargs_with_a_none_default_are_not_passed():
    specs = {"enable_thinking": {"default": False}, "xml_tools": {"default": None}, "persona": {"default": ""}}
    assert passed_kwargs(specs) == {"enable_thinking": False, "persona": ""}
    assert Workspace(kwarg_specs=specs).template_kwargs() == {"enable_thinking": False, "persona": ""}


def test_check_preset_passes_the_kwargs_a_workspace_passes(monkeypatch):
    """`check --preset` and the Checks tab go through Workspace.run_checks: one set of kwargs."""
    import engine.workspace

    seen = {}
    original = engine.workspace.run_checks

    def spy(*args, **kwargs):
        seen.update(kwargs)
        return original(*args, **{**kwargs, "families": ["chat_lints"]})

    monkeypatch.setattr(engine.workspace, "run_checks", spy)
    run_preset_checks("smollm3")
    preset = load_preset("smollm3")
    assert seen["template_kwargs"] == Workspace.from_preset(preset).template_kwargs()
    assert None not in seen["template_kwargs"].values() and set(seen["template_kwargs"]) < set(preset.template_kwargs)
    assert seen["round_trip_differences"] == preset.intended_differences()


def test_generation_start_is_where_the_prompt_without_it_ends():
    case = Case("c", [{"role": "user", "content": "Hi!"}])
    prompt = Workspace(chat_template=CHATML, cases=[case]).render(case).prompt
    start = generation_start(CHATML, case, prompt)
    assert prompt[start:] == "<|im_start|>assistant\n"
    assert generation_start(CHATML, Case("c", case.messages, add_generation_prompt=False), prompt) is None
    # A template that renders earlier turns differently without the generation prompt has no clean start.
    odd = "{% if add_generation_prompt %}A{% endif %}{{ messages[0].content }}"
    assert generation_start(odd, case, "AHi!") is None


def test_a_render_can_say_where_its_generation_prompt_starts_in_the_same_call():
    case = Case("c", [{"role": "user", "content": "Hi!"}])
    workspace = Workspace(chat_template=CHATML, cases=[case])
    for timeout in (None, 10):  # in this process, and in the worker (one call for both renders)
        result = workspace.render(case, timeout=timeout, with_generation_start=True)
        assert result.prompt == workspace.render(case).prompt
        assert result.generation_start == generation_start(CHATML, case, result.prompt)
        assert result.prompt[result.generation_start :] == "<|im_start|>assistant\n"
    assert workspace.render(case).generation_start is None  # only when asked for
    off = Case("c", case.messages, add_generation_prompt=False)
    assert workspace.render(off, with_generation_start=True).generation_start is None
    odd = Workspace(chat_template="{% if add_generation_prompt %}A{% endif %}{{ messages[0].content }}", cases=[case])
    assert odd.render(case, with_generation_start=True).generation_start is None


def test_literal_delimiters_come_from_the_compiled_template():
    spec = {"start_anchor": "<|im_start|>assistant\n", "fields": {
        "reasoning_content": {"open": "<think>", "close": ["</think>", " </think>"]},
        "tool_calls": {"open_pattern": "<call name=(?P<name>\\w+)>", "close": "</call>", "content": "json",
                       "transform": {"type": "function", "function": {"name": "{name}", "arguments": "{content}"}}},
        "content": {"close": "<|im_end|>"}}}  # fmt: skip
    loaded = load_response_spec(json.dumps(spec))
    assert literal_delimiters(loaded.template) == {"<think>", "</think>", "</call>", "<|im_end|>"}


def test_build_runner_makes_each_runner_from_settings():
    ws = workspace()
    recorded = build_runner(ws, RunSettings(recording="think then answer", tokens_per_second=5))
    assert isinstance(recorded, RecordedRunner) and recorded.text == OUTPUT and recorded.tokens_per_second == 5
    pasted = build_runner(ws, RunSettings(recording=PASTED, pasted="typed text"))
    assert pasted.text == "typed text"
    simulated = build_runner(ws, RunSettings(runner="simulated"), timeout=5)
    assert isinstance(simulated, SimulatedRunner) and simulated.timeout == 5 and simulated.template_kwargs == {"enable_thinking": False}
    local = build_runner(ws, RunSettings(runner="local", model="some/model", max_new_tokens=9, seed=None))
    assert isinstance(local, LocalRunner) and local.max_new_tokens == 9 and local.stop_tokens == ["<|im_end|>"]
    remote = build_runner(ws, RunSettings(runner="remote", remote_url="http://127.0.0.1:9/v1", remote_model="m"), api_key="k")
    assert isinstance(remote, RemoteRunner) and remote.path == "/v1/completions"
    for settings, message in [(RunSettings(recording=PASTED), "Nothing to replay"),
                              (RunSettings(recording="nope"), "No recording named"),
                              (RunSettings(runner="local"), "Which model?"),
                              (RunSettings(runner="remote", remote_url=""), "Which server?"),
                              (RunSettings(runner="telepathy"), "Unknown runner")]:  # fmt: skip
        with pytest.raises(RunnerError, match=message):
            build_runner(ws, settings)


def test_bounded_checks_stop_a_runaway_template_with_a_diagnostic():
    runaway = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    report = Workspace(chat_template=runaway, response_template=RESPONSE).run_checks(timeout=2)
    assert report.status == "fail" and report.checks == []
    assert "took longer than 2 s" in report.diagnostics[0].message
    sound = workspace().run_checks(timeout=60, random_splits=5)
    assert sound.checks and sound.status != "fail"


def test_a_preset_cannot_be_changed_for_other_callers():
    preset = load_preset("qwen3")
    with pytest.raises(AttributeError):
        preset.chat_template = "changed"  # type: ignore[misc]
    with pytest.raises(TypeError):
        preset.special_tokens["eos_token"] = "x"  # type: ignore[index]
    mine = preset.cases
    mine[0].messages.append({"role": "user", "content": "added by one caller"})
    preset.recordings[0].output = "changed by one caller"
    kwargs = preset.kwarg_specs()
    kwargs["enable_thinking"]["default"] = "changed"
    again = load_preset("qwen3")
    assert again is preset
    assert "added by one caller" not in json.dumps([c.messages for c in again.cases])
    assert again.recordings[0].output != "changed by one caller"
    assert again.template_kwargs["enable_thinking"]["default"] is True
    one, two = Workspace.from_preset(again), Workspace.from_preset(again)
    one.cases[0].messages[0]["content"] = "edited"
    assert two.cases[0].messages[0]["content"] != "edited"


def test_a_recording_names_the_fields_it_differs_in():
    recording = Recording("r", "c", "out", {"role": "assistant", "content": "a", "reasoning_content": "b"})
    assert recording.differences({"role": "assistant", "content": "a", "reasoning_content": "b"}) == []
    assert recording.differences({"role": "assistant", "content": "x", "tool_calls": []}) == ["content", "reasoning_content", "tool_calls"]
    assert Recording("r", "c", "out").differences({"content": "anything"}) == []


def test_a_workspace_round_trips_through_its_dict():
    ws = Workspace.from_preset(load_preset("gpt-oss"))
    ws.round_trip_differences["extra"] = "dropped on purpose"
    again = Workspace.from_dict(json.loads(json.dumps(ws.to_dict())))
    assert again == ws
    with pytest.raises(ValueError, match="malformed"):
        Workspace.from_dict({"cases": [{"name": "no messages"}]})


def test_compiling_the_presets_leaves_their_templates_compiled_in_this_process():
    """What a render worker does when the app starts it: afterwards each preset renders, explained,
    from transformers' cache and the explained copy's cache (nothing left to compile)."""
    from engine.presets import preset_names
    from engine.provenance.instrument import instrument
    from engine.workspace import compile_presets

    compile_presets()
    before = instrument.cache_info()
    for name in preset_names():
        assert Workspace.from_preset(load_preset(name)).render(explain=True).explanation is not None
    after = instrument.cache_info()
    assert after.misses == before.misses and after.hits - before.hits >= len(preset_names())
