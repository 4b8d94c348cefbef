"""The token checks: each fires on a broken template/tokenizer pair and not on the fixed one, in
the checks registry (run_checks) and from `python -m engine check --tokenizer`."""

from __future__ import annotations

import json

import pytest

from engine.cases import Case, Recording
from engine.checks import run_checks
from engine.checks.tokens import NO_TOKENIZER
from tests.token_support import tiny, tokenizer_files

CHATML = ("<|im_start|>", "<|im_end|>")
TURNS = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
         "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
RESPONSE = json.dumps({"start_anchor": "<|im_start|>assistant\n",
                       "fields": {"reasoning_content": {"open": "<think>\n", "close": "</think>"},
                                  "content": {"close": "<|im_end|>"}}})
CASES = [Case("chat", [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi there."},
                       {"role": "user", "content": "Weather?"}])]


def token_results(chat_template=TURNS, tokenizer=None, response=RESPONSE, cases=CASES, recordings=(), **options):
    options.setdefault("special_tokens", {"eos_token": "<|im_end|>"})
    options.setdefault("stop_tokens", ["<|im_end|>"])
    report = run_checks(chat_template, response, cases, list(recordings), families=["tokens"],
                        tokenizer=tokenizer, **options)
    assert not [d for d in report.diagnostics if d.severity == "error"], report.diagnostics
    return report.checks


def named(results, name):
    return [r for r in results if r.name == name]


def test_without_a_tokenizer_the_token_checks_say_so_once():
    results = token_results()
    assert [r.details for r in results if r.name == "tokens"] == [NO_TOKENIZER]
    assert [r.status for r in results if r.name == "tokens"] == ["info"]
    assert not named(results, "tokens.double_bos")


def test_double_bos():
    bos_template = "{{ bos_token }}" + TURNS
    adds = tiny(CHATML, bos="<s>", eos="<|im_end|>", add_bos=True).tokenizer
    plain = tiny(CHATML, bos="<s>", eos="<|im_end|>").tokenizer
    special = {"eos_token": "<|im_end|>", "bos_token": "<s>"}
    # The template writes BOS and the tokenizer adds it on tokenizer(text): Llama 3's setup, correct
    # with apply_chat_template, so a note (not a warning) saying what to encode with.
    (result,) = named(token_results(bos_template, adds, special_tokens=special), "tokens.double_bos")
    assert result.status == "info" and "add_special_tokens=False" in result.details
    (result,) = named(token_results(bos_template, plain, special_tokens=special), "tokens.double_bos")
    assert result.status == "pass"
    # Written twice: two BOS whatever the encoding.
    (result,) = named(token_results("{{ bos_token }}" + bos_template, plain, special_tokens=special), "tokens.double_bos")
    assert result.status == "fail" and "twice" in result.details


def test_special_text_that_the_tokenizer_splits():
    missing = tiny(("<|im_end|>",), eos="<|im_end|>").tokenizer  # no <|im_start|>
    results = named(token_results(tokenizer=missing), "tokens.special_text")
    (result,) = [r for r in results if r.status == "warn"]
    assert "splits into 10 tokens: '<' + '|' + 'i'" in result.details
    assert result.location.source == "chat_template" and result.location.line == 1
    fixed = tiny(CHATML, ("<think>", "</think>"), eos="<|im_end|>").tokenizer
    (result,) = named(token_results(tokenizer=fixed), "tokens.special_text")
    assert result.status == "pass" and "<|im_start|>" in result.details
    # A tag the model may well read as text (<tool_response> here, as Qwen2.5 writes it): a note only.
    results = named(token_results("<tool_response>" + TURNS, fixed), "tokens.special_text")
    assert [r.status for r in results] == ["info"] and "<tool_response>" in results[0].details


def test_stop_token_in_the_vocabulary_but_not_special():
    not_special = tiny(("<|im_start|>",), ("<|im_end|>",), eos=None).tokenizer
    results = named(token_results(tokenizer=not_special, special_tokens={}), "tokens.stop_tokens")
    assert [r.status for r in results] == ["warn"] and "not special" in results[0].details
    split = tiny(("<|im_start|>",), eos=None).tokenizer
    results = named(token_results(tokenizer=split, special_tokens={}), "tokens.stop_tokens")
    assert [r.status for r in results] == ["fail"] and "tokens here" in results[0].details
    fixed = tiny(CHATML, eos="<|im_end|>").tokenizer
    assert [r.status for r in named(token_results(tokenizer=fixed), "tokens.stop_tokens")] == ["pass"]
    # The playground renders with another eos_token than the tokenizer's own.
    results = named(token_results(tokenizer=fixed, special_tokens={"eos_token": "<|endoftext|>"},
                                  stop_tokens=[]), "tokens.stop_tokens")
    assert any(r.status == "warn" and "this tokenizer's eos_token is '<|im_end|>'" in r.details for r in results)


GOOD_MASK = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{% if m.role == 'assistant' %}{% generation %}"
             "{{ m.content }}<|im_end|>{% endgeneration %}\n{% else %}{{ m.content }}<|im_end|>\n{% endif %}{% endfor %}"
             "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
# The block runs on into the next turn's header.
BAD_MASK = GOOD_MASK.replace("<|im_end|>{% endgeneration %}\n", "<|im_end|>\n<|im_start|>{% endgeneration %}")
# The block holds the end-of-turn token only: the assistant's text is not trained on.
NO_TEXT = GOOD_MASK.replace("{% generation %}{{ m.content }}<|im_end|>", "{{ m.content }}{% generation %}<|im_end|>")


def test_training_masks_with_and_without_generation_blocks():
    (result,) = named(token_results(TURNS), "tokens.training_mask")
    assert result.status == "info" and "no {% generation %}" in result.details
    (result,) = named(token_results(GOOD_MASK), "tokens.training_mask")
    assert result.status == "pass"
    # The newline after the end token, inside the block, is still the assistant's turn.
    after_newline = GOOD_MASK.replace("<|im_end|>{% endgeneration %}\n", "<|im_end|>\n{% endgeneration %}")
    assert [r.status for r in named(token_results(after_newline), "tokens.training_mask")] == ["pass"]
    bad = named(token_results(BAD_MASK), "tokens.training_mask")
    assert bad and all(r.status == "warn" for r in bad)
    assert any("goes on after its end-of-turn token, over '<|im_start|>'" in r.details for r in bad)
    (result,) = named(token_results(NO_TEXT), "tokens.training_mask")
    assert result.status == "warn" and "text is not all inside" in result.details


def test_delimiter_inside_a_token():
    # "\n\n" is one token (as in Gemma's and Qwen's vocabularies): "<think>\n" ends inside it.
    tokenizer = tiny(CHATML, ("<think>", "</think>", "\n\n"), eos="<|im_end|>").tokenizer
    straddling = [Recording("r", "chat", "<think>\n\nPlan.</think>Hi.<|im_end|>")]
    results = named(token_results(tokenizer=tokenizer, recordings=straddling), "tokens.delimiter_boundaries")
    assert [r.status for r in results] == ["info"] and "'<think>⏎'" in results[0].details
    assert results[0].location.source == "response_template"
    clean = [Recording("r", "chat", "<think>\nPlan.</think>Hi.<|im_end|>")]
    results = named(token_results(tokenizer=tokenizer, recordings=clean), "tokens.delimiter_boundaries")
    assert [r.status for r in results] == ["pass"]


def test_token_checks_through_the_worker_with_tokenizer_files():
    files = tokenizer_files(("<|im_end|>",), eos="<|im_end|>")
    report = run_checks(TURNS, RESPONSE, CASES, families=["tokens"], tokenizer=files, timeout=60,
                        special_tokens={"eos_token": "<|im_end|>"}, stop_tokens=["<|im_end|>"])
    assert [r.status for r in report.checks if r.name == "tokens.special_text"] == ["warn", "info"]
    assert "<|im_start|>" in report.checks[[r.name for r in report.checks].index("tokens.special_text")].details


@pytest.mark.parametrize("as_folder", [True, False])
def test_cli_check_with_a_tokenizer_file_or_folder(tmp_path, as_folder):
    from engine.cli import main

    files = tokenizer_files(("<|im_end|>",), eos="<|im_end|>")
    (tmp_path / "tokenizer.json").write_bytes(files.tokenizer_json)
    (tmp_path / "tokenizer_config.json").write_bytes(files.config)
    (tmp_path / "chat.jinja").write_text(TURNS)
    (tmp_path / "response.json").write_text(RESPONSE)
    target = tmp_path if as_folder else tmp_path / "tokenizer.json"
    code = main(["check", "--chat-template", str(tmp_path / "chat.jinja"), "--response-template",
                 str(tmp_path / "response.json"), "--tokenizer", str(target), "--stop-token", "<|im_end|>",
                 "--json", "--random-splits", "2"])
    assert code in (0, 1)
