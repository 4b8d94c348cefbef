"""Every class of error jinja2 raises, on the line and the columns of the offending token: lexing,
parsing, compile-time assertions and Python's errors on the generated code, and run time; in
transformers' environment (loopcontrols on) and in a plain one (off), and on the command line."""

from __future__ import annotations

import json
from pathlib import Path

import jinja2
import pytest

from engine.error_place import syntax_error_place, undefined_name, undefined_read
from engine.render import render

USER = [{"role": "user", "content": "Hi"}]
KWARGS = {"x": 1, "y": [1, 2]}

# (template, line, the offending token, its column, the message's start). One-line templates name
# the column of the *second* occurrence where a first one would be a wrong answer.
CLASSES = {
    # lexing
    "unclosed string": ("{{ 'a' }}\n{{ 'abc }}", 2, "'", 4, "Jinja syntax error: unexpected char"),
    "unclosed comment": ("hi\nthere {# never closed", 2, "{#", 7, "Jinja syntax error: Missing end of comment"),
    "unclosed raw block": ("a\n  {% raw %} abc", 2, "{% raw %}", 3, "Jinja syntax error: Missing end of raw"),
    "unbalanced bracket": ("{{ f(1, 2 }}", 1, "}", 11, "Jinja syntax error: unexpected '}'"),
    "invalid escape in a string": ("{{ 'ok' }}{{ '\\N' }}", 1, "'\\N'", 14, "Jinja syntax error: malformed"),
    # parsing
    "unknown tag": ("a\n{% frobnicate %}", 2, "frobnicate", 4, "Jinja syntax error: Encountered unknown tag"),
    "wrong end tag": ("{% if x %}{% endfor %}", 1, "endfor", 14, "Jinja syntax error: Encountered unknown tag 'endfor'"),
    "unclosed block": ("{% if x %}\nhello", 1, "{%", 1, "Jinja syntax error: Unexpected end of template"),
    "assignment to a literal": ("{% set 1 = 2 %}", 1, "1", 8, "Jinja syntax error: can't assign to"),
    "parameter order": ("{% macro f(a=1, b) %}{% endmacro %}", 1, "b", 17, "Jinja syntax error: non-default"),
    # compile time: jinja2's assertions
    "unknown filter": ("{% for m in messages %}\n{{ m.role }}\n{{ m.content | badfilter }}\n{% endfor %}",
                       3, "badfilter", 16, "Jinja compile error: No filter named 'badfilter'"),
    "unknown filter, second use": ("{{ x | trim }}{{ x | trimm }}", 1, "trimm", 22, "Jinja compile error: No filter"),
    "block defined twice": ("{% block a %}{% endblock %}{% block a %}{% endblock %}", 1, "a", 37,
                            "Jinja compile error: block 'a' defined twice"),
    "loop assigned": ("{% for loop in y %}{% endfor %}", 1, "loop", 8, "Jinja compile error: Can't assign"),
    "caller parameter": ("{% macro f(caller, a) %}{{ caller() }}{% endmacro %}", 1, "caller", 12,
                         "Jinja compile error: When defining macros"),
    # compile time: Python's errors on the code jinja2 generated
    "break outside a loop": ("{% for i in y %}{% break %}{% endfor %}{% break %}", 1, "break", 43,
                             "{% break %} is outside a loop."),
    "continue in a for's else": ("{% for i in y %}{% else %}{% continue %}{% endfor %}", 1, "continue", 30,
                                 "{% continue %} is outside a loop."),
    "break in a macro in a loop": ("{% for i in y %}{% macro f() %}{% break %}{% endmacro %}{% endfor %}", 1, "break", 35,
                                   "{% break %} is outside a loop."),
    "parameter twice": ("{% macro f(a, a) %}{% endmacro %}", 1, "a", 15, "The parameter 'a' is declared twice."),
    "keyword argument twice": ("{{ y | join(d=1, d=2) }}", 1, "d", 18, "The keyword argument 'd' is given twice."),
    "nested too deeply": ("{% for i in y %}" * 21 + "{% endfor %}" * 21, 1, "for", 4 + 16 * 20, "Blocks are nested too deeply"),
    "constant too large": ("{{ x }}\n{{ (10**5000)|string }}", 2, "string", 15, "ValueError: Exceeds the limit"),
    # run time
    "unknown test (checked at run time)": ("{% if x is badtest %}{% endif %}", 1, "badtest", 12,
                                           "TemplateRuntimeError: No test named 'badtest'"),
    "unknown filter in a branch": ("{% if x %}{{ y | badfilter }}{% endif %}", 1, "badfilter", 18,
                                   "TemplateRuntimeError: No filter named 'badfilter'"),
    "undefined attribute": ("{{ messages[0].content }}{{ messages[0].nope.x }}", 1, "nope", 41, "Undefined value"),
    "raise_exception": ("{% if y %}{{ raise_exception('no') }}{% endif %}", 1, "raise_exception", 14, "The template raised: no"),
    "include without a loader": ("{{ x }}{% include 'other.jinja' %}", 1, "include", 11, "TypeError: no loader"),
}


@pytest.mark.parametrize("name", list(CLASSES))
def test_every_error_class_is_on_its_token(name: str) -> None:
    template, line, token, column, message = CLASSES[name]
    [d] = render(template, USER, template_kwargs=KWARGS).diagnostics
    assert d.message.startswith(message), d.message
    assert (d.line, d.column, d.end_column) == (line, column, column + len(token)), d
    assert template.splitlines()[line - 1][column - 1 : d.end_column - 1] == token
    assert d.caret == " " * (column - 1) + "^" * len(token)


def test_a_missing_tag_end_is_a_point_where_it_belongs() -> None:
    [d] = render("{{ m.content\n", USER).diagnostics
    assert (d.line, d.column, d.end_column) == (1, 13, None) and d.caret == " " * 12 + "^"


def test_break_without_loopcontrols_is_a_syntax_error_on_break() -> None:
    """A plain jinja2 environment (no loopcontrols, as engines without it see the template) refuses
    the tag itself while parsing."""
    env = jinja2.Environment()
    template = "{% for i in y %}\n  {% break %}\n{% endfor %}"
    with pytest.raises(jinja2.TemplateSyntaxError) as raised:
        env.parse(template)
    assert syntax_error_place(env, template, raised.value) == (2, 6, 11)


def test_one_reading_of_what_an_undefined_value_names() -> None:
    """Jinja's own messages, as a render reports them: a name nobody passed, a key a message lacks."""
    [name] = render("{{ bos_token.x }}", USER).diagnostics
    [key] = render("{{ messages[0].nope.x }}", USER).diagnostics
    assert name.message == "Undefined value: 'bos_token' is undefined" and "special token" in name.hint
    assert key.message == "Undefined value: 'dict object' has no attribute 'nope'"
    assert undefined_read(name.message) == ("bos_token", None) and undefined_name(name.message) == "bos_token"
    assert undefined_read(key.message) == ("dict object", "nope") and undefined_name(key.message) is None
    assert undefined_read("The template raised: no tools") is None and undefined_name("TypeError: 1") is None


def test_the_checks_report_a_compile_error_on_its_token() -> None:
    from engine.checks import run_checks

    template = "{% for m in messages %}{{ m.content | badfilter }}{% endfor %}"
    report = run_checks(template, '{"start_anchor": "", "fields": {"content": {}}}', families=["round_trip"])
    [d] = [d for d in report.diagnostics if d.source == "chat_template"]
    assert (d.line, d.column, d.end_column) == (1, 39, 48) and "badfilter" in d.message


def test_the_command_line_names_the_columns(cli, tmp_path: Path) -> None:
    template, line, token, column, _ = CLASSES["unknown filter"]
    (tmp_path / "t.jinja").write_text(template)
    (tmp_path / "case.json").write_text(json.dumps({"messages": USER}))
    result = cli("render", "--chat-template", str(tmp_path / "t.jinja"), "--case", str(tmp_path / "case.json"))
    assert result.returncode == 1
    assert f"line {line}, column {column}: Jinja compile error: No filter named 'badfilter'" in result.stderr
    assert "    " + " " * (column - 1) + "^" * len(token) + "\n" in result.stderr
    as_json = cli("render", "--chat-template", str(tmp_path / "t.jinja"), "--case", str(tmp_path / "case.json"), "--json")
    [d] = json.loads(as_json.stdout)["diagnostics"]
    assert (d["line"], d["column"], d["end_column"]) == (line, column, column + len(token))
