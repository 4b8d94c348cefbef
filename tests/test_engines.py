"""The other engines, for real: MiniJinja (the `minijinja` package) as TGI and mistral.rs configure
it, and @huggingface/jinja under Node.js (installed into the cache on first use). Small templates
written here show each fact."""

from __future__ import annotations

import shutil

import pytest

from engine.engines import ENGINES, context_for, jinja_js, render_all, unavailable

HELLO = [{"role": "user", "content": "Hi"}]


def texts(source: str, messages=HELLO, **kwargs) -> dict[str, str | None]:
    outputs = render_all(source, [context_for(messages, kwargs=kwargs)])
    return {engine: out[0].text if out[0].text is not None else f"ERROR {out[0].error}" for engine, out in outputs.items()}


def test_node_and_the_package_are_available_here() -> None:
    # .ci/run makes Node.js available, so both engines are covered; elsewhere this says why not.
    assert shutil.which("node") and unavailable("transformers.js") is None
    assert jinja_js.module_path().exists()


def test_tgi_renders_without_trim_blocks_and_mistral_rs_with() -> None:
    out = texts("{% for m in messages %}\n{{ m.content }}\n{% endfor %}")
    assert out == {"minijinja-tgi": "\nHi\n", "minijinja-mistral.rs": "Hi\n", "transformers.js": "Hi\n"}


def test_each_server_rewrites_the_template_as_it_does() -> None:
    # TGI strips the exact text `{% generation %}` only; mistral.rs every spelling of the tag.
    out = texts("{%- generation %}{% for m in messages[::-1] %}{{ m.content }}{% endfor %}{%- endgeneration %}")
    assert out["minijinja-mistral.rs"] == "Hi" == out["transformers.js"]  # @huggingface/jinja knows the tag
    # ... and `[::-1]` becomes `|reverse`, which breaks a subscript after it (MiniJinja alone reads it).
    assert texts("{{ messages[::-1][0].content }}")["minijinja-mistral.rs"].startswith("ERROR syntax error: unexpected `[`")
    assert out["minijinja-tgi"].startswith("ERROR syntax error: unknown statement generation")
    assert texts("{% generation %}{{ messages[0].content }}{% endgeneration %}")["minijinja-tgi"] == "Hi"


def test_tojson_raise_exception_and_strftime_now() -> None:
    out = texts("{{ {'a': '<b>', 'c': [1, 2]}|tojson }}")
    assert out["minijinja-mistral.rs"] == '{"a": "<b>", "c": [1, 2]}' == out["transformers.js"]
    assert out["minijinja-tgi"] != out["minijinja-mistral.rs"]  # MiniJinja's own tojson escapes HTML
    raised = texts("{{ raise_exception('roles must alternate') }}")
    assert all("roles must alternate" in text for text in raised.values())
    dated = texts("{{ strftime_now('%Y') }}")
    assert len(set(dated.values())) == 1 and next(iter(dated.values())).isdigit()


def test_a_looping_template_ends_with_a_message_in_every_engine() -> None:
    loop = "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}"
    outputs = render_all(loop, [context_for(HELLO)], timeout=2.0)
    assert "fuel limit" in outputs["minijinja-tgi"][0].error and "fuel limit" in outputs["minijinja-mistral.rs"][0].error
    assert "longer than 2 s" in outputs["transformers.js"][0].error


def test_without_node_the_engine_is_not_checked_never_failed(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(jinja_js, "_status", {})
    assert unavailable("transformers.js") == "not checked: Node.js not found"
    outputs = render_all("{{ 1 }}", [context_for(HELLO)])
    assert outputs["transformers.js"][0].not_checked == "not checked: Node.js not found"
    assert outputs["minijinja-tgi"][0].text == "1"


def test_without_npm_a_missing_package_is_not_checked(monkeypatch, tmp_path) -> None:
    node = shutil.which("node")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "node").symlink_to(node)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("PLAYGROUND_ENGINES_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(jinja_js, "_status", {})
    assert unavailable("transformers.js") == "not checked: @huggingface/jinja is not installed and npm was not found"


def test_an_empty_cache_variable_means_the_default_cache_not_the_current_folder(monkeypatch, tmp_path) -> None:
    from engine import npm_packages

    monkeypatch.delenv("PLAYGROUND_ENGINES_CACHE", raising=False)
    default = npm_packages.cache_dir()
    assert default.is_absolute() and default.parts[-2:] == (".cache", "engines")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PLAYGROUND_ENGINES_CACHE", "")  # as a CI file that names the variable and no value
    assert npm_packages.cache_dir() == default
    monkeypatch.setenv("PLAYGROUND_ENGINES_CACHE", str(tmp_path / "mine"))
    assert npm_packages.cache_dir() == tmp_path / "mine"


@pytest.mark.parametrize("engine", ENGINES)
def test_every_engine_gets_what_transformers_hands_the_template(engine: str) -> None:
    messages = [{"role": "assistant", "content": None, "reasoning": "hmm", "tool_calls": [{"function": {"name": "f", "arguments": {"x": 1}}}]}]
    source = "{{ messages[0].reasoning_content }}|{{ messages[0].content is defined }}|{{ bos_token }}"
    out = render_all(source, [context_for(messages, kwargs={"bos_token": "<s>"})], (engine,))[engine][0]
    assert out.text.lower() == "hmm|false|<s>"  # reasoning aliased, None dropped, tokens passed
