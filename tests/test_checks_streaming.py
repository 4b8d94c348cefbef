"""Streaming equals one-shot: the check passes on a sound response template, catches one whose
delimiter depends on where the chunks end, and reports the smallest chunking that shows it."""

from __future__ import annotations

import json
import random
from pathlib import Path

from tokenizers import Tokenizer, models, pre_tokenizers

from engine.cases import Case, Recording
from engine.checks import run_checks
from engine.checks.context import CheckContext, Sample
from engine.checks.streaming import chunkings, delimiter_positions, normalise_events, shrink, split, token_cuts
from engine.response_spec import load_response_spec

FIXTURES = Path(__file__).parent / "fixtures" / "checks"
CHAT = (FIXTURES / "chatml" / "chat_template.jinja").read_text()
RESPONSE = (FIXTURES / "chatml" / "response_template.json").read_text()
CASES = [Case.from_dict(c) for c in json.loads((FIXTURES / "chatml" / "cases.json").read_text())["cases"]]
RECORDINGS = [Recording.from_dict(r) for r in json.loads((FIXTURES / "chatml" / "recordings.json").read_text())["recordings"]]


def streaming(response: str = RESPONSE, **options):
    report = run_checks(CHAT, response, CASES, RECORDINGS, stop_tokens=["<|im_end|>"], families=["streaming"], **options)
    assert report.diagnostics == []
    return {r.subject: r for r in report.checks}


def context(**options) -> CheckContext:
    loaded = load_response_spec(RESPONSE)
    return CheckContext(CHAT, RESPONSE, loaded.spec, loaded.template, CASES, [], **options)


def test_a_sound_template_streams_like_one_shot_in_every_chunking() -> None:
    results = streaming()
    assert set(results) == {f"recording {r.name!r}" for r in RECORDINGS}
    think = results["recording 'think-then-call'"]
    assert think.status == "pass"
    # 1-character chunks, 8 fixed sizes (the output is longer than 64), 200 random splits.
    assert think.details.startswith("209 chunkings give the same message and events as one-shot parsing")
    assert "200 random splits (seed 0)" in think.details


def test_a_delimiter_that_depends_on_chunk_ends_is_caught_and_shrunk() -> None:
    # close_pattern `\.(?=.{0,2}$)`: "a period near the end of the output". Streamed, the end of
    # the buffer is not the end of the output, so it closes at the first period after a chunk end.
    response = (FIXTURES / "broken" / "streaming_lookahead.json").read_text()
    result = streaming(response)["recording 'think-then-call'"]
    assert result.status == "fail"
    assert "found with 1-character chunks, shrunk from" in result.details
    assert "fed in 2 chunk(s)" in result.details and "to 1):" in result.details
    assert "cut at output line 4, column" in result.details
    assert "one-shot text of `content`" in result.details
    assert result.location.source == "response_template"
    assert result.location.line == response[: response.index('"content": {')].count("\n") + 1


def test_random_splits_are_seeded_and_aim_half_their_cuts_at_delimiters() -> None:
    ctx = context(random_splits=30)
    recording = RECORDINGS[1]
    sample = Sample(recording.name, CASES[2], recording.output)
    prompt = ctx.render(CASES[2]).prompt
    hot = delimiter_positions(ctx, sample, prompt)
    # Every delimiter boundary of the output is a hot spot: "<think>" starts the output.
    assert {1, 7, 8} <= set(hot) and recording.output.index("</tool_call>") in hot
    first = [cuts for label, cuts in chunkings(ctx, recording.output, hot) if label.startswith("random")]
    again = [cuts for label, cuts in chunkings(ctx, recording.output, hot) if label.startswith("random")]
    assert first == again and len(first) == 30
    ctx.seed = 1
    other = [cuts for label, cuts in chunkings(ctx, recording.output, hot) if label.startswith("random")]
    assert other != first
    several = [cuts for cuts in first if len(cuts) >= 4]
    assert several and all(set(cuts) & set(hot) for cuts in several)


def test_token_chunks_when_a_tokenizer_is_loaded() -> None:
    tokenizer = Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    assert token_cuts(tokenizer, "Hello world, again") == [5, 11, 12]
    result = streaming(tokenizer=tokenizer)["recording 'think-then-call'"]
    assert result.status == "pass" and "token chunks" in result.details
    assert result.details.startswith("210 chunkings")


def test_shrink_finds_the_fewest_cuts_that_still_differ() -> None:
    calls = []

    def differs(cuts: list[int]) -> bool:
        calls.append(len(cuts))
        return 17 in cuts and 40 in cuts

    assert shrink(differs, list(range(1, 200))) == [17, 40]
    assert len(calls) < 100
    assert shrink(lambda cuts: True, list(range(1, 50))) == []
    # The budget bounds the work even when nothing can be removed.
    assert shrink(lambda cuts: len(cuts) == 30, list(range(30)), budget=5) == list(range(30))


def test_events_compare_by_region_not_by_chunk() -> None:
    streamed = [
        {"type": "region_open", "field": "content"},
        {"type": "region_chunk", "field": "content", "text": "Hel", "dirty": False},
        {"type": "region_chunk", "field": "content", "text": "lo", "dirty": False},
        {"type": "region_close", "field": "content", "value": "Hello"},
    ]
    one_shot = [streamed[0], {"type": "region_chunk", "field": "content", "text": "Hello", "dirty": False}, streamed[3]]
    assert normalise_events(streamed) == normalise_events(one_shot) == [
        ("region_open", "content"), ("text", "content", "Hello"), ("close", "content", '"Hello"')
    ]  # fmt: skip
    assert split("abcdef", [2, 3]) == ["ab", "c", "def"]
    rng = random.Random(0)
    text = "".join(rng.choice("ab<>") for _ in range(50))
    cuts = sorted(rng.sample(range(1, 50), 7))
    assert "".join(split(text, cuts)) == text
