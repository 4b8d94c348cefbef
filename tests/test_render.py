"""Rendering is transformers' own: same text as apply_chat_template, and every failure a diagnostic."""

from __future__ import annotations

import pytest
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

from engine.render import render, select_template

CHATML = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' }}"
    "{%- if message['role'] == 'assistant' %}{% generation %}{{- message['content'] + '<|im_end|>' }}{% endgeneration %}"
    "{%- else %}{{- message['content'] + '<|im_end|>' }}{%- endif %}"
    "{{- '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- if not enable_thinking | default(true) %}"
    "{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}{%- endif %}"
)

TOOLS_TEMPLATE = (
    "{{- bos_token }}{%- if tools %}Tools: {{ tools | map(attribute='function.name') | join(', ') }}\n{%- endif %}"
    "{%- for m in messages %}[{{ m.role }}] {{ m.content }}{% if m.reasoning_content %} (thought: {{ m.reasoning_content }}){% endif %}\n{%- endfor %}"
)

MESSAGES = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Hi"},
    {"role": "assistant", "content": "Hello!", "reasoning_content": "greet", "tool_calls": None},
    {"role": "user", "content": "Weather?"},
]
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {}}}}]


def tiny_tokenizer(chat_template) -> PreTrainedTokenizerFast:
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2, "hi": 3}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>", unk_token="<unk>")
    tok.chat_template = chat_template
    return tok


@pytest.mark.parametrize(
    "kwargs",
    [
        {"add_generation_prompt": True},
        {"add_generation_prompt": False},
        {"add_generation_prompt": True, "enable_thinking": False},
        {"continue_final_message": True},
    ],
)
def test_same_text_as_apply_chat_template(kwargs: dict) -> None:
    tokenizer = tiny_tokenizer(CHATML)
    expected = tokenizer.apply_chat_template(MESSAGES, tokenize=False, **kwargs)
    extra = {k: v for k, v in kwargs.items() if k not in ("add_generation_prompt", "continue_final_message")}
    result = render(
        CHATML,
        MESSAGES,
        add_generation_prompt=kwargs.get("add_generation_prompt", False),
        continue_final_message=kwargs.get("continue_final_message", False),
        template_kwargs=extra,
        special_tokens=tokenizer.special_tokens_map,
    )
    assert result.diagnostics == []
    assert result.prompt == expected


def test_tools_special_tokens_and_reasoning_alias_match_transformers() -> None:
    tokenizer = tiny_tokenizer(TOOLS_TEMPLATE)
    messages = [{"role": "assistant", "content": "x", "thinking": "old name"}]
    expected = tokenizer.apply_chat_template(messages, tools=TOOLS, tokenize=False)
    result = render(TOOLS_TEMPLATE, messages, TOOLS, special_tokens=tokenizer.special_tokens_map)
    assert result.prompt == expected
    assert result.prompt.startswith("<s>Tools: get_weather[assistant]") and "(thought: old name)" in result.prompt


def test_generation_spans() -> None:
    result = render(CHATML, MESSAGES[:3])
    [(start, end)] = result.generation_spans
    assert result.prompt[start:end] == "Hello!<|im_end|>"


def test_named_templates_follow_transformers_rule() -> None:
    named = {"default": "default:{{ messages[0].content }}", "tool_use": "tools:{{ tools | length }}"}
    messages = [{"role": "user", "content": "hi"}]
    tokenizer = tiny_tokenizer(named)
    assert render(named, messages).prompt == tokenizer.apply_chat_template(messages, tokenize=False) == "default:hi"
    with_tools = render(named, messages, TOOLS)
    assert (with_tools.prompt, with_tools.template_name) == ("tools:1", "tool_use")
    assert render(named, messages, template_name="tool_use", tools=[]).prompt == "tools:0"
    assert select_template("plain", TOOLS) == ("plain", None)
    missing = render({"tool_use": "x"}, messages)
    assert missing.prompt is None and "no 'default'" in missing.diagnostics[0].message


def test_syntax_error_has_line_and_column() -> None:
    template = "{%- for m in messages %}\n{{ m.content }\n{%- endfor %}"
    [d] = render(template, MESSAGES).diagnostics
    assert (d.severity, d.source, d.line) == ("error", "chat_template", 2)
    assert d.snippet == "{{ m.content }" and d.column == d.snippet.index("}") + 1
    assert "syntax" in d.message


def test_unclosed_block() -> None:
    [d] = render("{% if messages %}\nyes\n", MESSAGES).diagnostics
    assert "endif" in (d.hint or "") and (d.line, d.column) == (1, 1)  # the block that is never closed


def place(template: str, messages: list = MESSAGES) -> tuple[int, int, str]:
    """(line, column, the text from there) of the one diagnostic rendering `template` gives."""
    [d] = render(template, messages).diagnostics
    return d.line, d.column, template.splitlines()[d.line - 1][d.column - 1 :]


@pytest.mark.parametrize(
    "template, line, rest",
    [
        # Jinja reports these on the line after the broken tag; the author has to look here:
        ("{%- for m in messages %}\n{{ m.content \n{%- endfor %}", 2, " "),
        ("a\n{% if messages %}x{% endif %\nb", 2, " %"),
        # One-line templates: the token, not the line.
        ("{% for m in messages %}{{ m.content }{% endfor %}", 1, "}{% endfor %}"),
        ("{% for m in messages %}{% if m.role == 'user' %}{{ m.content + }}{% endif %}{% endfor %}", 1, "}}{% endif %}{% endfor %}"),
        ("{{ 'a' }}{{ \"unclosed }}", 1, '"unclosed }}'),
    ],
)
def test_a_syntax_error_points_where_the_author_has_to_look(template: str, line: int, rest: str) -> None:
    got_line, _, got_rest = place(template)
    assert (got_line, got_rest) == (line, rest)


def test_a_runtime_error_points_at_the_node_that_failed_on_a_one_line_template() -> None:
    messages = [{"role": "user", "content": "Hi"}, {"role": "assistant", "tool_calls": [{"function": {"name": "f"}}]}]
    # Three reads of `content` on one line; the second fails (the assistant message has none).
    one_line = ("{% for m in messages %}{% if m.role == 'user' %}{{ m.content }}{% elif m.tool_calls %}"
                "{{ m.content + '!' }}{% else %}{{ m.content }}{% endif %}{% endfor %}")  # fmt: skip
    _, column, rest = place(one_line, messages)
    assert rest.startswith("content + '!'") and column == one_line.index("m.content + '!'") + 3
    # Two raise_exception calls: the one that ran.
    raising = "{% if false %}{{ raise_exception('no') }}{% endif %}{% if messages %}{{ raise_exception('yes') }}{% endif %}"
    _, column, rest = place(raising)
    assert column == raising.rindex("raise_exception") + 1
    # A type error: the start of the expression that failed, not the first name on the line.
    typed = "{{ messages[0].content }}{{ messages[0].content ~ 'x' }}{{ messages[0].content + 1 }}"
    _, column, rest = place(typed)
    assert rest == "messages[0].content + 1 }}"


def test_raise_exception_message_and_line() -> None:
    template = "line one\n{%- if messages[0].role != 'user' %}\n  {{- raise_exception('Conversations must start with a user message') }}\n{%- endif %}"
    [d] = render(template, MESSAGES).diagnostics
    assert d.message == "The template raised: Conversations must start with a user message"
    assert d.line == 3 and d.column == d.snippet.index("raise_exception") + 1


def test_undefined_variable_line_and_column() -> None:
    template = "ok\n{{ messages[0].content }}\n{{ tool_choice.mode }}"
    [d] = render(template, MESSAGES).diagnostics
    assert d.line == 3 and d.column == 4 and "tool_choice" in d.message
    assert "template kwarg" in d.hint


def test_an_unpassed_special_token_says_it_comes_with_the_tokenizer() -> None:
    """Llama 3 style templates write `bos_token + '…'`, which fails when nothing passed the token: the
    template is right, and the advice is the tokenizer (or the special tokens), not a template kwarg."""
    template = "{{ bos_token + '<|start_header_id|>' }}{{ messages[0].content }}"
    [d] = render(template, MESSAGES).diagnostics
    assert "'bos_token' is undefined" in d.message and d.line == 1
    assert "special token" in d.hint and "--special-tokens" in d.hint and "template kwarg" not in d.hint
    assert render(template, MESSAGES, special_tokens={"bos_token": "<s>"}).prompt.startswith("<s><|start_header_id|>")
    [other] = render("{{ foo_tokens + 'x' }}", MESSAGES).diagnostics  # not a `…_token` name
    assert "template kwarg" in other.hint


def test_type_error_at_runtime_is_located() -> None:
    template = "a\nb\n{{ messages[0].content + 1 }}"
    [d] = render(template, MESSAGES).diagnostics
    assert d.line == 3 and d.message.startswith("TypeError")


def test_sandbox_blocks_escape() -> None:
    [d] = render("{{ messages.__class__.__mro__ }}x{{ ''.__class__.__subclasses__() }}", MESSAGES).diagnostics
    assert d.severity == "error"


@pytest.mark.parametrize(
    "messages, expected",
    [
        ({"role": "user"}, "must be a list"),
        ([], "empty"),
        (["hi"], "messages[0] must be an object"),
        ([{"content": "hi"}], "has no 'role'"),
    ],
)
def test_bad_messages(messages, expected: str) -> None:
    result = render(CHATML, messages)
    assert result.prompt is None
    assert expected in result.diagnostics[0].message and result.diagnostics[0].source == "case"


def test_bad_kwargs_and_flags() -> None:
    assert "cannot set messages" in render(CHATML, MESSAGES, template_kwargs={"messages": 1}).diagnostics[0].message
    both = render(CHATML, MESSAGES, add_generation_prompt=True, continue_final_message=True)
    assert both.prompt is None and "cannot both" in both.diagnostics[0].message
    assert "tools must be a list" in render(CHATML, MESSAGES, tools={"a": 1}).diagnostics[0].message


def test_output_size_is_bounded() -> None:
    template = "{% for i in range(100000) %}{% for j in range(100) %}xxxxxxxxxx{% endfor %}{% endfor %}"
    result = render(template, MESSAGES)
    assert result.prompt is None and "limit" in result.diagnostics[0].message


def test_bounded_render_matches_and_stops_runaway_templates() -> None:
    bounded = render(CHATML, MESSAGES, add_generation_prompt=True, timeout=30)
    assert bounded == render(CHATML, MESSAGES, add_generation_prompt=True)
    runaway = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    [d] = render(runaway, MESSAGES, timeout=1).diagnostics
    assert "took longer than 1 s" in d.message
    # The killed worker is replaced: the next render works.
    assert render(CHATML, MESSAGES, timeout=30).prompt == render(CHATML, MESSAGES).prompt
    hog = "{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}"
    [d] = render(hog, MESSAGES, timeout=30).diagnostics
    assert "Rendering stopped" in d.message


def test_locate_false_keeps_the_message_and_line_of_a_runtime_error_not_its_exact_columns():
    # `missing` is read twice on line 2; the second read fails. Placing it exactly renders again.
    template = "{% for m in messages %}{{ m.content }}\n{{ m.role if m.missing is defined }}{{ m.missing.deeper }}{% endfor %}"
    messages = [{"role": "user", "content": "Hi"}]
    [located], [plain] = render(template, messages).diagnostics, render(template, messages, locate=False).diagnostics
    assert (located.message, located.line) == (plain.message, plain.line) and located.line == 2
    assert located.column == template.splitlines()[1].rindex("missing") + 1  # the read that failed
    assert plain.column == template.splitlines()[1].index("missing") + 1  # the first mention of the name


def test_a_missing_tool_call_id_gets_a_hint_about_ids_not_template_kwargs():
    """"Pass it as a template kwarg" was the hint for a key the case's tool call lacks (issue 35)."""
    calls = [{"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {}}}]}]
    reads = render("{% for m in messages %}{% for c in m.tool_calls %}{{ c.id.upper() }}{% endfor %}{% endfor %}", calls)
    [problem] = reads.diagnostics
    assert "has no attribute 'id'" in problem.message and "template kwarg" not in problem.hint
    assert "tool call of this case has no `id`" in problem.hint and "id field" in problem.hint
    refuses = render("{% for m in messages %}{% for c in m.tool_calls %}{% if c.id is not defined %}"
                     "{{ raise_exception('Tool call IDs should be alphanumeric strings with length 9!') }}"
                     "{% endif %}{% endfor %}{% endfor %}", calls)
    assert "asks for tool-call ids" in refuses.diagnostics[0].hint
    unpassed = render("{{ mode.upper() }}", [{"role": "user", "content": "Hi"}])
    assert "template kwarg" in unpassed.diagnostics[0].hint  # a top-level name: a kwarg is the advice
