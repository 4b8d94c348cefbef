"""The trace's invariants: segments tile the output, bodies equal the parser's chunks, the final
message equals parse_response, and nothing depends on how the output was chunked."""

from __future__ import annotations

import random

import pytest
from transformers.utils.chat_parsing import parse_response

from engine.trace import Segment, Trace, trace_text
from tests.trace_cases import SCENARIOS, SMOL, CHATML_PROMPT, WEATHER_TOOLS


def chunkings(text: str) -> dict[str, list[str]]:
    """Every chunking the invariants must survive: 1-char, fixed sizes, whole, seeded random."""
    out = {f"size {n}": [text[i : i + n] for i in range(0, len(text), n)] for n in (1, 2, 3, 5, 8, 16)}
    out["whole"] = [text]
    for seed in range(25):
        rng, pieces, i = random.Random(seed), [], 0
        while i < len(text):
            n = rng.randint(1, 12)
            pieces.append(text[i : i + n])
            i += n
        out[f"random {seed}"] = pieces
    return out


def bodies_from_events(events: list[dict]) -> list[tuple[str, str]]:
    """(field, text) for each region instance, from the parser's own chunk events."""
    bodies: list[tuple[str, str]] = []
    current: list | None = None
    for event in events:
        if event["type"] == "region_open":
            current = [event["field"], ""]
            bodies.append(current)  # type: ignore[arg-type]
        elif event["type"] == "region_chunk":
            current[1] += event["text"]  # type: ignore[index]
    return [(f, t) for f, t in bodies if t]


def check_tiling(segments: list[Segment], length: int) -> None:
    position = 0
    for seg in segments:
        assert seg.start == position and seg.end > seg.start, segments
        position = seg.end
    assert position == length


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_invariants_over_every_chunking(name: str) -> None:
    spec, prompt, output, tools = SCENARIOS[name]
    expected_message = parse_response(output, spec, prefix=prompt, tools=tools)
    reference = None
    for label, chunks in chunkings(output).items():
        trace = Trace(spec, prompt=prompt, tools=tools)
        fed = ""
        for chunk in chunks:
            step = trace.feed(chunk)
            fed += chunk
            segments = step.segments()
            check_tiling(segments, len(fed))  # tiles what was fed so far, pending included
            assert all(s.kind != "pending" for s in segments[:-1])
        trace.finalize()
        result = trace.result()
        assert result.diagnostics == [], (label, result.diagnostics)
        assert result.message == expected_message, label
        check_tiling(result.segments, len(output))
        assert all(s.kind != "pending" for s in result.segments)
        # Bodies are exactly the text the parser put in region_chunk events, region by region.
        prompt_part = "".join(prompt[s.start : s.end] for s in result.prefix_segments if s.kind == "body")
        event_bodies = bodies_from_events(result.prefix_events + result.events)
        segment_text = prompt_part + "".join(output[s.start : s.end] for s in result.segments if s.kind == "body")
        assert "".join(t for _, t in event_bodies) == segment_text
        if not prompt_part:
            assert [(s.field, output[s.start : s.end]) for s in result.segments if s.kind == "body"] == event_bodies
        snapshot = (result.segments, result.prefix_segments, result.prefix_events)
        if reference is None:
            reference = snapshot
        assert snapshot == reference, f"{label} differs from the first chunking"


def test_harmony_spans_are_exact() -> None:
    spec, prompt, output, tools = SCENARIOS["harmony channels, one character at a time"]
    result = trace_text(spec, output, prompt, tools, chunks=list(output))
    shown = [(s.kind, s.field, output[s.start : s.end]) for s in result.segments]
    assert shown[:4] == [
        ("open", "reasoning_content", "<|channel|>analysis<|message|>"),
        ("body", "reasoning_content", "The user asks assistant analysis about <|channel|> final weather."),
        ("close", "reasoning_content", "<|end|>"),
        ("discarded", None, "<|start|>assistant"),
    ]
    assert shown[4] == (
        "open",
        "tool_calls",
        "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>",
    )
    assert shown[-3:] == [
        ("open", "content", "<|channel|>final<|message|>"),
        ("body", "content", "It is <b>sunny</b> in Paris, assistant"),
        ("close", "content", "<|return|>"),
    ]
    # Arguments typed from the tool's schema ("2" -> 2) by transformers, as region_close shows.
    assert result.message["tool_calls"][0]["function"]["arguments"] == {"city": "Paris", "days": 2}
    assert result.message["reasoning_content"].count("\n") == 1  # two blocks joined with "\n"


def test_dropped_text_without_implicit_field() -> None:
    spec, prompt, output, tools = SCENARIOS["no implicit field: text dropped"]
    result = trace_text(spec, output, prompt, tools, chunks=list(output))
    dropped = [output[s.start : s.end] for s in result.segments if s.kind == "discarded"]
    assert dropped == ["preamble ", " between ", " more noise ", " tail "]
    assert result.message == {"answer": ["first", "second <answ"], "score": 7, "notes": "runs to the end"}


def test_silent_close_of_empty_implicit_region_is_a_close() -> None:
    spec, prompt, output, tools = SCENARIOS["chatml reasoning, parallel calls, silent implicit close"]
    result = trace_text(spec, output, prompt, tools)
    last = result.segments[-1]
    assert (last.kind, last.field, output[last.start : last.end]) == ("close", "content", "<|im_end|>")
    assert result.message["tool_calls"][1]["function"]["arguments"] == {"city": "Oslo", "days": 2}


def test_prompt_prefill_is_reported_on_the_prompt_side() -> None:
    spec, prompt, output, tools = SCENARIOS["chatml think opened by the prompt"]
    trace = Trace(spec, prompt=prompt, tools=tools)
    assert trace.initial_events == [
        {"type": "region_open", "field": "reasoning_content"},
        {"type": "region_chunk", "field": "reasoning_content", "text": "\n", "dirty": False},
    ]
    assert trace.anchor_end == len(prompt) - len("<think>\n")
    assert trace.prefix_segments() == [Segment(len(prompt) - 8, len(prompt) - 1, "open", "reasoning_content"),
                                       Segment(len(prompt) - 1, len(prompt), "body", "reasoning_content")]
    trace.feed(output)
    trace.finalize()
    assert trace.message["reasoning_content"] == "Still thinking about <think> tags"
    assert trace.segments()[0] == Segment(0, output.index("</think>"), "body", "reasoning_content")


def test_delimiter_straddling_prompt_and_output_is_split() -> None:
    spec, prompt, output, tools = SCENARIOS["thinking off: empty think block prefilled, regex close straddles the prompt"]
    trace = Trace(spec, prompt=prompt)
    # `\s*</think>\s*` may still grow, so the parser holds the prompt's "</think>\n\n" back.
    assert [s.kind for s in trace.prefix_segments()][-1] == "pending"
    trace.feed(output)
    trace.finalize()
    prefix = trace.prefix_segments()
    assert prefix[-1].kind == "close" and prompt[prefix[-1].start :] == "\n\n</think>\n\n"
    first = trace.segments()[0]
    assert (first.kind, output[first.start : first.end]) == ("close", "\n  ")
    assert trace.message == {"reasoning_content": "", "content": "Direct answer without reasoning."} or (
        trace.message == parse_response(output, spec, prefix=prompt)
    )


def test_pending_text_is_held_then_resolved() -> None:
    trace = Trace(SMOL, prompt=CHATML_PROMPT)
    step = trace.feed("Hello <thi")
    assert step.pending == Segment(6, 10, "pending", "content")
    assert [s.kind for s in step.segments()] == ["body", "pending"]
    step = trace.feed("s is not a tag")
    assert step.pending is None
    assert [s.kind for s in step.segments()] == ["body"]
    step = trace.feed(" <think")
    assert step.pending is not None and step.pending.kind == "pending"
    step = trace.feed(">x")
    assert [s.kind for s in step.segments()] == ["body", "open", "body"]


def test_steps_are_snapshots() -> None:
    """A step keeps showing the state at its time, for the step-through slider."""
    trace = Trace(SMOL, prompt=CHATML_PROMPT)
    first = trace.feed("<think>ab")
    trace.feed("cd</think>rest")
    trace.finalize()
    assert [(s.kind, s.end) for s in first.segments()] == [("open", 7), ("body", 9)]
    assert first.message == {"role": "assistant"}
    assert trace.message["reasoning_content"] == "abcd"


def test_invalid_tool_call_json_is_pinned_to_its_region() -> None:
    output = '<think>ok</think>\n<tool_call>{"name": "get_weather", "arguments": {city: Paris}}</tool_call>\nafter'
    for chunks in ([output], list(output), [output[:30], output[30:]]):
        trace = Trace(SMOL, prompt=CHATML_PROMPT, tools=WEATHER_TOOLS)
        for chunk in chunks:
            trace.feed(chunk)
        trace.finalize()
        [error] = trace.diagnostics
        start, end = error.span
        assert output[start:end] == output[output.index("<tool_call>") : output.index("\nafter")]
        assert "tool_calls" in error.message and "JSON" in error.message
        # The exact character where the JSON stopped, in the whole output (issue 35), and a hint for it.
        assert output[error.offset :].startswith("city: Paris") and "(character 68 of the output)" in error.message
        assert (error.line, error.column) == (2, 50) and error.snippet == output.splitlines()[1]
        assert "unquoted_keys" in error.hint
        assert trace.message == {"role": "assistant", "reasoning_content": "ok"}  # the message so far
        segments = trace.segments()
        check_tiling(segments, len(output))
        assert [output[s.start : s.end] for s in segments if s.kind == "close"][-1] == "</tool_call>"
        assert output[segments[-1].start :] == "\nafter" and segments[-1].kind == "discarded"


def test_cut_off_tool_call_fails_at_finalize_without_raising() -> None:
    output = '<tool_call>{"name": "get_weather", "argu'
    trace = Trace(SMOL, prompt=CHATML_PROMPT)
    trace.feed(output)
    trace.finalize()
    [error] = trace.diagnostics
    assert error.span == (0, len(output)) and error.source == "output"
    check_tiling(trace.segments(), len(output))


def test_transform_path_that_does_not_resolve() -> None:
    spec = {
        "start_anchor": "A:",
        "fields": {
            "tool_calls": {
                "open": "<call>", "close": "</call>", "repeats": True, "content": "json",
                "transform": {"type": "function", "function": {"name": "{content.name}", "arguments": "{content.args}"}},
            },
            "content": {},
        },
    }  # fmt: skip
    trace = Trace(spec, prompt="A:")
    trace.feed('Hi <call>{"name": "f"}</call>')
    trace.finalize()
    [error] = trace.diagnostics
    assert "content.args" in error.message
    assert trace.message == {"content": "Hi"}  # closed when the call opened, before the failure


def test_required_field_missing() -> None:
    spec = {"start_anchor": "A:", "fields": {"answer": {"open": "<a>", "close": "</a>", "optional": False}, "content": {}}}
    trace = Trace(spec, prompt="A:")
    trace.feed("no answer here")
    trace.finalize()
    [error] = trace.diagnostics
    assert "answer" in error.message and error.severity == "error"
    assert trace.message == {"content": "no answer here"}
    assert [s.kind for s in trace.segments()] == ["body"]


def test_missing_anchor_warns() -> None:
    trace = Trace(SMOL, prompt="<|im_start|>user\nhi<|im_end|>\n")
    assert [d.severity for d in trace.diagnostics] == ["warning"]
    assert "start anchor" in trace.diagnostics[0].message


def test_a_step_says_when_text_reached_a_region_and_when_the_message_changed() -> None:
    trace = Trace(SMOL, prompt=CHATML_PROMPT)
    steps = [trace.feed(chunk) for chunk in ["<thi", "nk>", "plan", "</think>"]]
    assert [s.wrote_region for s in steps] == [False, True, True, False]
    assert [s.message_changed for s in steps] == [False, False, False, True]
