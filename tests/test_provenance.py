"""Provenance of a prompt: pieces that tile transformers' prompt exactly, each with the template line
and columns that wrote it and the message the template was handling."""

from __future__ import annotations

import json
import time

import pytest

from engine import limits
from engine.cases import render_case
from engine.presets import load_preset, preset_names
from engine.provenance import Piece, explain_prompt
from engine.provenance.output import explain_segments, waiting_for
from engine.render import render
from engine.response_spec import load_response_spec
from engine.trace import Trace, trace_text
from engine.workspace import passed_kwargs

MESSAGES = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Hi"},
    {"role": "assistant", "content": "Hello!"},
    {"role": "user", "content": "Weather?"},
]


def explained(template, messages=MESSAGES, **options) -> tuple[str, list[Piece]]:
    """The prompt and its pieces, checked: the pieces tile the prompt, which is the plain render's."""
    result = render(template, messages, explain=True, **options)
    assert result.ok, result.diagnostics
    plain = render(template, messages, **options)
    assert result.prompt == plain.prompt
    pieces = result.explanation.pieces
    assert pieces is not None, result.explanation.note
    assert_tiles(result.prompt, pieces)
    return result.prompt, pieces


def assert_tiles(prompt: str, pieces: list[Piece]) -> None:
    assert [p.start for p in pieces[1:]] == [p.end for p in pieces[:-1]]
    assert (pieces[0].start, pieces[-1].end) == (0, len(prompt)) if prompt else pieces == []
    assert all(p.end > p.start for p in pieces)


def at(prompt: str, pieces: list[Piece], text: str, occurrence: int = 0) -> Piece:
    """The piece that wrote the first character of the `occurrence`-th `text` in the prompt."""
    index = -1
    for _ in range(occurrence + 1):
        index = prompt.index(text, index + 1)
    return next(p for p in pieces if p.start <= index < p.end)


def column_of(template: str, line: int, text: str) -> int:
    return template.splitlines()[line - 1].index(text) + 1


CHATML = (
    "{%- for message in messages %}\n"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}\n"
    "{%- endfor %}\n"
    "{%- if add_generation_prompt %}\n"
    "<|im_start|>assistant\n"
    "{% endif %}"
)


def test_each_operand_is_a_piece_with_its_columns_and_message() -> None:
    prompt, pieces = explained(CHATML, add_generation_prompt=True)
    role = at(prompt, pieces, "user")
    assert (role.kind, role.line, role.source, role.message) == ("expression", 2, "message.role", 1)
    assert role.column == column_of(CHATML, 2, "message.role")
    assert role.end_column == role.column + len("message.role")
    newline = next(p for p in pieces if prompt[p.start : p.end] == "\n")
    assert (newline.kind, newline.source, newline.message) == ("literal", "'\\n'", 0)
    assert newline.column == column_of(CHATML, 2, "'\\n'")
    generation = at(prompt, pieces, "<|im_start|>assistant\n", 1)
    assert (generation.kind, generation.line, generation.column, generation.message) == ("text", 5, 1, None)
    assert [p.message for p in pieces if p.line == 2] == [i for i in range(4) for _ in range(5)]


def test_template_text_is_one_piece_per_template_line() -> None:
    template = "{% for m in messages %}Line one\nline two {{ m.content }}\n{% endfor %}"
    prompt, pieces = explained(template)
    first = at(prompt, pieces, "Line one")
    second = at(prompt, pieces, "line two")
    assert prompt[first.start : first.end] == "Line one\n" and (first.line, first.column, first.end_column) == (1, 24, 33)
    assert prompt[second.start : second.end] == "line two " and (second.line, second.column) == (2, 1)


def test_macro_pieces_name_the_macro_and_its_call_site() -> None:
    template = (
        "{%- macro turn(m) -%}\n"
        "<|{{ m.role }}|>\n"
        "{{ m.content }}\n"
        "{%- endmacro -%}\n"
        "{%- for message in messages %}{{ turn(message) }}{% endfor %}"
    )
    prompt, pieces = explained(template)
    role = at(prompt, pieces, "assistant")
    assert (role.line, role.macro, role.macro_line, role.message) == (2, "turn", 1, 2)
    assert [(c.line, c.source) for c in role.calls] == [(5, "turn(message)")]
    content = at(prompt, pieces, "Weather?")
    assert (content.line, content.source, content.message) == (3, "m.content", 3)


def test_a_macro_whose_output_the_template_reads_is_one_piece() -> None:
    template = (
        "{%- macro body(m) %}  {{ m.content }}  {% endmacro -%}\n"
        "{%- for message in messages %}[{{ body(message) | trim }}]{% endfor %}"
    )
    result = render(template, MESSAGES, explain=True)
    assert "macro body" in result.explanation.note
    pieces = result.explanation.pieces
    assert_tiles(result.prompt, pieces)
    whole = at(result.prompt, pieces, "Hello!")
    assert (whole.line, whole.source, whole.macro, whole.message) == (2, "body(message) | trim", None, 2)


def test_generation_blocks_are_explained_inside() -> None:
    template = (
        "{%- for m in messages %}\n"
        "{%- if m.role == 'assistant' %}{% generation %}{{ m.content }}<end>{% endgeneration %}\n"
        "{%- else %}{{ m.role }}: {{ m.content }}\n{% endif %}\n"
        "{%- endfor %}"
    )
    prompt, pieces = explained(template)
    end = at(prompt, pieces, "<end>")
    assert (end.kind, end.line, end.message) == ("text", 2, 2)
    assert [c.source for c in end.calls] == ["{% generation %}"]
    assert render(template, MESSAGES).generation_spans == [(prompt.index("Hello!"), prompt.index("<end>") + 5)]


def test_loop_controls() -> None:
    template = (
        "{%- for m in messages %}{% if m.role == 'system' %}{% continue %}{% endif %}"
        "{{ loop.index0 }}={{ m.content }};{% if m.content == 'Hello!' %}{% break %}{% endif %}{% endfor %}"
        "{{ messages[-1].role }}"
    )
    prompt, pieces = explained(template)
    assert prompt == "1=Hi;2=Hello!;user"
    assert [p.message for p in pieces] == [1, 1, 1, 1, 2, 2, 2, 2, 3]


def test_system_message_before_the_loop_and_a_loop_over_the_rest() -> None:
    template = (
        "{%- if messages[0].role == 'system' %}{% set system = messages[0].content %}{% set loop_messages = messages[1:] %}"
        "{%- else %}{% set system = 'Default.' %}{% set loop_messages = messages %}{% endif %}\n"
        "<<SYS>>{{ system }}<</SYS>>\n"
        "{%- for message in loop_messages %}[{{ message.role }}] {{ message.content }}\n{% endfor %}"
    )
    prompt, pieces = explained(template)
    assert at(prompt, pieces, "Be brief.").message == 0
    assert at(prompt, pieces, "<<SYS>>").message is None
    assert [at(prompt, pieces, f"[{r}]").message for r in ("user", "assistant")] == [1, 2]
    assert at(prompt, pieces, "Weather?").message == 3
    prompt, pieces = explained(template, MESSAGES[1:])
    assert at(prompt, pieces, "Default.").message is None
    assert at(prompt, pieces, "Hi").message == 0


def test_a_message_taken_by_index_and_an_if_that_tests_one() -> None:
    template = (
        "{%- if messages[0].role == 'system' %}SYSTEM: {{ messages[0].content }}\n{% endif %}"
        "LAST: {{ messages[-1].content }}"
    )
    prompt, pieces = explained(template)
    assert at(prompt, pieces, "SYSTEM: ").message == 0
    assert at(prompt, pieces, "Be brief.").message == 0
    assert at(prompt, pieces, "LAST: ").message is None
    assert at(prompt, pieces, "Weather?").message == 3


def test_named_templates_name_the_template_used() -> None:
    templates = {"default": "{% for m in messages %}{{ m.content }}{% endfor %}",
                 "tool_use": "TOOLS {{ tools | length }}\n{% for m in messages %}{{ m.content }}{% endfor %}"}
    tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
    prompt, pieces = explained(templates, tools=tools)
    assert {p.template for p in pieces} == {"tool_use"}
    assert at(prompt, pieces, "TOOLS").line == 1 and at(prompt, pieces, "Hi").line == 2
    _, pieces = explained(templates)
    assert {p.template for p in pieces} == {"default"}


def test_continue_final_message_cuts_the_pieces_where_transformers_cuts_the_prompt() -> None:
    messages = [*MESSAGES[:3], {"role": "assistant", "content": "The weather is"}]
    prompt, pieces = explained(CHATML, messages, continue_final_message=True)
    assert prompt.endswith("The weather is")
    assert at(prompt, pieces, "The weather is").source == "message.content"


def test_text_with_marker_characters_is_not_explained() -> None:
    messages = [{"role": "user", "content": "odd \ufdd0 text"}]
    result = render(CHATML, messages, explain=True)
    assert result.ok and result.explanation.pieces is None
    assert "U+FDD0" in result.explanation.note


def test_the_explanation_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "MAX_EXPLAINED_PIECES", 10)
    result = render(CHATML, MESSAGES, explain=True)
    assert result.ok and result.explanation.pieces is None and "10 pieces" in result.explanation.note
    monkeypatch.undo()
    result = render(CHATML, MESSAGES, explain=True, explain_seconds=0)
    assert result.ok and result.explanation.pieces is None and "time limit" in result.explanation.note


def test_a_template_too_slow_to_explain_in_time_says_so() -> None:
    """The explanation's own clock: compiling the marked copy of a large template (here a few hundred
    milliseconds) is stopped by a timer, since it reads no clock while it compiles."""
    template = "".join(f"{{% if messages[0].role == 'user' %}}<s{i}>{{{{ messages[0].content }}}}\n{{% endif %}}"
                       for i in range(600))
    variables = {"messages": [{"role": "user", "content": "Hi"}], "add_generation_prompt": False}
    started = time.monotonic()
    explanation = explain_prompt(template, variables, "unused", seconds=0.05)
    assert explanation.pieces is None and "longer than its time limit (0.05 s)" in explanation.note
    assert time.monotonic() - started < 5


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the ring Python only printed
def test_a_timer_ring_lost_in_a_garbage_collection_callback_rings_again() -> None:
    """An exception raised while a gc callback runs (hypothesis installs one) is only printed, and the
    compile would go on: here the first ring lands in a callback that is still running, and the
    explanation is stopped by the next."""
    import gc

    template = "".join(f"{{% if messages[0].role == 'user' %}}<s{i}>{{{{ messages[0].content }}}}\n{{% endif %}}"
                       for i in range(600))
    variables = {"messages": [{"role": "user", "content": "Hi"}], "add_generation_prompt": False}
    held = []

    def slow_first_collection(phase: str, info: dict) -> None:
        if phase == "start" and not held:
            held.append(True)
            until = time.monotonic() + 0.1  # past the 0.05 s limit: the timer rings in here
            while time.monotonic() < until:
                pass

    threshold = gc.get_threshold()
    gc.callbacks.append(slow_first_collection)
    gc.set_threshold(100)
    try:
        explanation = explain_prompt(template, variables, "unused", seconds=0.05)
    finally:
        gc.callbacks.remove(slow_first_collection)
        gc.set_threshold(*threshold)
    assert held  # the callback ran (and held the first ring)
    assert explanation.pieces is None and "longer than its time limit (0.05 s)" in explanation.note


def test_a_megabyte_prompt_is_explained_in_the_worker() -> None:
    messages = [{"role": "user", "content": "word " * 200_000}, {"role": "assistant", "content": "Fine."}]
    result = render(CHATML, messages, explain=True, timeout=limits.RENDER_SECONDS)
    assert len(result.prompt) > 1_000_000
    assert_tiles(result.prompt, result.explanation.pieces)
    assert at(result.prompt, result.explanation.pieces, "word word").message == 0


@pytest.mark.parametrize("name", preset_names())
def test_every_preset_case_is_explained(name: str) -> None:
    preset = load_preset(name)
    for case in preset.cases:
        result = render_case(preset.chat_template, case, preset.special_tokens, passed_kwargs(preset.kwarg_specs()),
                             explain=True)
        if not result.ok:
            continue
        assert result.explanation.pieces is not None, (case.name, result.explanation.note)
        assert not result.explanation.coarse, (case.name, result.explanation.note)
        assert_tiles(result.prompt, result.explanation.pieces)
        pieces = result.explanation.pieces
        assert {p.message for p in pieces} <= {None, *range(len(case.messages))}
        users = {i for i, m in enumerate(case.messages) if m.get("role") == "user"}
        assert users <= {p.message for p in pieces}, case.name  # every template writes each user turn


def test_in_the_worker_and_as_json() -> None:
    result = render(CHATML, MESSAGES, explain=True, timeout=limits.RENDER_SECONDS)
    data = result.to_dict()
    assert data["explanation_note"] is None
    assert "".join(data["prompt"][p["start"] : p["end"]] for p in data["pieces"]) == data["prompt"]
    assert data["pieces"][1] == {"start": 12, "end": 18, "line": 2, "column": 22, "end_line": 2, "end_column": 34,
                                 "message": 0, "kind": "expression", "source": "message.role"}


def recursing(depth: int, width: int) -> str:
    """A macro that calls itself `depth` levels deep, then writes `width` pieces (issue 29's attack)."""
    return ("{%- macro r(n) -%}\n{%- if n > 0 -%}{{- r(n - 1) -}}{%- else -%}\n"
            "{%- for i in range(" + str(width) + ") -%}{{- 'x' -}}{%- endfor -%}{%- endif -%}{%- endmacro -%}\n"
            "{{- r(" + str(depth) + ") -}}")


def test_call_chains_are_kept_once_and_shared_by_their_pieces() -> None:
    """A piece deep in a recursion names every call site it was reached through, exactly; the chains
    are kept once each, so 120 levels and 300 pieces are 121 chains, not 300 lists of 121 sites."""
    prompt, pieces = explained(recursing(120, 300), [{"role": "user", "content": "hi"}])
    assert prompt == "x" * 300 and len(pieces) == 300
    result = render(recursing(120, 300), [{"role": "user", "content": "hi"}], explain=True)
    assert len(result.explanation.chains) == 121
    calls = pieces[0].calls
    assert [site.line for site in calls] == [4] + [2] * 120  # the top-level call, then the macro calling itself
    assert calls[0].source == "r(120)" and calls[1].source == "r(n - 1)"
    assert all(p.calls is calls for p in pieces)  # one tuple, shared


def test_the_page_form_is_counted_and_cut_where_the_render_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """`explain="page"`: the pieces as the page reads them (a row each, call chains once), or a note
    when there are more pieces, or more bytes, than the page shows: checked where the render runs
    (in the worker), so the server gets no more than the page shows."""
    result = render(recursing(3, 5), [{"role": "user", "content": "hi"}], explain="page")
    page = result.page_explanation
    assert result.explanation is None and page.shown and page.note is None
    assert [tile[:2] for tile in page.tiles] == [(i, i + 1) for i in range(5)] and {t[2] for t in page.tiles} == {-1}
    rows, chains = json.loads(page.table), json.loads(page.chains)
    column = column_of(recursing(3, 5), 3, "'x'")
    assert rows[0] == [3, column, 3, column + 3, -1, 1, 3]  # the literal 'x' on line 3, through chain 3
    assert chains == [[-1, 4], [0, 2], [1, 2], [2, 2]]  # r(3) on line 4, then r(n - 1) on line 2, three times
    monkeypatch.setattr(limits, "MAX_PAGE_PIECES", 4)
    page = render(recursing(3, 5), [{"role": "user", "content": "hi"}], explain="page").page_explanation
    assert not page.shown and page.table == "" and "more than 4 pieces, the most the page shows" in page.note
    monkeypatch.setattr(limits, "MAX_PAGE_PIECES", 20_000)
    monkeypatch.setattr(limits, "PAGE_EXPLANATION_BYTES", 200)
    page = render(recursing(3, 5), [{"role": "user", "content": "hi"}], explain="page").page_explanation
    assert not page.shown and "take more than the 0 kB the page gives them" in page.note


def test_a_deep_recursion_of_a_hundred_thousand_pieces_reaches_the_server_as_a_note() -> None:
    """Issue 29: 50 levels, then 99,000 pieces. The worker stops explaining past the page's 20,000 and
    sends a note, not 99,000 rows of 51 call sites (which the server then spent 12-15 s and 600 MB
    building): a few hundred bytes pickled."""
    import pickle

    result = render(recursing(50, 99_000), [{"role": "user", "content": "hi"}], explain="page",
                    timeout=limits.RENDER_SECONDS * 3)
    assert result.ok and result.explanation is None, result.diagnostics
    assert "more than 20,000 pieces, the most the page shows" in result.page_explanation.note
    assert len(pickle.dumps(result.page_explanation)) < 1_000


# ----- the output side ------------------------------------------------------------------------

RESPONSE = """{
  "start_anchor": "<|im_start|>assistant\\n",
  "fields": {
    "reasoning_content": {"open": "<think>", "close": "</think>"},
    "tool_calls": {
      "open": "<tool_call>",
      "close": "</tool_call>",
      "content": "json",
      "repeats": true
    },
    "content": {"close": "<|im_end|>"}
  }
}"""


def test_each_output_segment_points_at_the_key_that_claimed_it() -> None:
    loaded = load_response_spec(RESPONSE)
    output = '<think>hm</think>Sure.<tool_call>{"name": "f", "arguments": {}}</tool_call><|im_end|>'
    traced = trace_text(loaded.template, output, prompt="<|im_start|>assistant\n")
    origins = explain_segments(traced.segments, RESPONSE, loaded.template, output)
    assert [o.segment for o in origins] == traced.segments
    lines = RESPONSE.splitlines()
    for origin in origins:
        site = origin.site
        key = {"open": "open", "close": "close"}.get(origin.segment.kind, "content")
        if origin.segment.field == "tool_calls" and origin.segment.kind == "body":
            assert site.key == "content" and lines[site.line - 1][site.column - 1 :].startswith('"content": "json"')
        elif origin.segment.kind == "body":  # the default content parser: the field itself
            assert site.key is None and lines[site.line - 1][site.column - 1 :].startswith(f'"{origin.segment.field}"')
        else:
            assert site.key == key
            written = lines[site.line - 1][site.column - 1 : site.end_column - 1]
            assert written == f'"{key}": {json.dumps(output[origin.segment.start : origin.segment.end])}'


def test_held_back_text_says_which_delimiters_it_may_become() -> None:
    loaded = load_response_spec(RESPONSE)
    trace = Trace(loaded.template, prompt="<|im_start|>assistant\n")
    trace.feed("Sure.<")
    pending = trace.segments()[-1]
    assert pending.kind == "pending"
    assert waiting_for(loaded.template, "<", pending.field) == [
        "open of reasoning_content: '<think>'", "open of tool_calls: '<tool_call>'", "close of content: '<|im_end|>'"]
    trace.feed("tool_")
    origin = explain_segments(trace.segments(), RESPONSE, loaded.template, trace.output)[-1]
    assert origin.waits_for == ("open of tool_calls: '<tool_call>'",)
    trace.feed("call>{")  # inside the call: only its close is watched
    assert waiting_for(loaded.template, "</tool", "tool_calls") == ["close of tool_calls: '</tool_call>'"]
    patterns = load_response_spec(RESPONSE.replace('"close": "</think>"', '"close_pattern": "</think>\\\\s*"'))
    assert waiting_for(patterns.template, "</th", "reasoning_content") == ["close_pattern of reasoning_content: /</think>\\s*/"]


# ----- the command line ----------------------------------------------------------------------


def test_render_explain_on_the_command_line(cli, tmp_path) -> None:
    (tmp_path / "t.jinja").write_text(CHATML)
    (tmp_path / "case.json").write_text(json.dumps({"messages": MESSAGES[:2]}))
    done = cli("render", "--chat-template", tmp_path / "t.jinja", "--case", tmp_path / "case.json", "--explain", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert {"prompt", "pieces"} <= set(data)
    assert "".join(data["prompt"][p["start"] : p["end"]] for p in data["pieces"]) == data["prompt"]
    assert all({"start", "end", "line", "message", "kind"} <= set(p) for p in data["pieces"])
    listing = cli("render", "--chat-template", tmp_path / "t.jinja", "--case", tmp_path / "case.json", "--explain")
    rows = listing.stdout.splitlines()
    assert rows[0].split() == ["where", "message", "kind", "text", "written", "by"]
    # Messages are counted from 1 (as the page's cards are): the user's is message 2, after the system's.
    assert any(r.split()[:4] == ["2:22", "2", "expression", "user"] and r.endswith("message.role") for r in rows)
    assert any(r.split()[:4] == ["5:1", "-", "text", "<|im_start|>assistant⏎"] for r in rows)
    # An expression written over several lines is still one row, its source on that row.
    (tmp_path / "t.jinja").write_text("{% for m in messages %}{{ m.role\n  | upper }}{% endfor %}")
    listing = cli("render", "--chat-template", tmp_path / "t.jinja", "--case", tmp_path / "case.json", "--explain")
    rows = listing.stdout.splitlines()
    assert len(rows) == 1 + len(MESSAGES[:2]), listing.stdout
    assert rows[1].split()[:4] == ["1:27", "1", "expression", "SYSTEM"] and rows[1].endswith("m.role | upper"), rows[1]


def test_trace_explain_on_the_command_line(cli, tmp_path) -> None:
    (tmp_path / "r.json").write_text(RESPONSE)
    (tmp_path / "out.txt").write_text("<think>hm</think>Sure.<|im_end|>")
    done = cli("trace", "--response-template", tmp_path / "r.json", "--output", tmp_path / "out.txt", "--explain", "--json")
    assert done.returncode == 0, done.stderr
    segments = json.loads(done.stdout)["segments"]
    assert [(s["kind"], s["field"], s["site"]["key"], s["site"]["line"]) for s in segments] == [
        ("open", "reasoning_content", "open", 4), ("body", "reasoning_content", None, 4),
        ("close", "reasoning_content", "close", 4), ("body", "content", None, 11), ("close", "content", "close", 11)]
    listing = cli("trace", "--response-template", tmp_path / "r.json", "--output", tmp_path / "out.txt", "--explain")
    assert '0-7    open   reasoning_content  <think>     line 4:27 "open"' in listing.stdout


def test_trace_explain_places_keys_in_the_file_that_holds_the_template(cli, tmp_path) -> None:
    config = json.dumps({"eos_token": "</s>", "response_template": json.loads(RESPONSE)}, indent=2)
    (tmp_path / "tokenizer_config.json").write_text(config)
    (tmp_path / "out.txt").write_text("<think>hm</think>Sure.<|im_end|>")
    done = cli("trace", "--response-template", tmp_path / "tokenizer_config.json", "--output", tmp_path / "out.txt",
               "--explain", "--json")
    assert done.returncode == 0, done.stderr
    site = json.loads(done.stdout)["segments"][0]["site"]
    line = config.splitlines()[site["line"] - 1]
    assert line[site["column"] - 1 :].startswith('"open": "<think>"') and site["end_line"] == site["line"]
