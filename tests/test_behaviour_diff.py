"""`python -m engine diff BASE NEW` (engine/behaviour): what changes for the model between two
versions of a model's templates, on real folders, files and the local stand-in Hub."""

from __future__ import annotations

import importlib
import json
import re
import shutil
from pathlib import Path

import pytest

from engine.behaviour import Suite, Version, compare, standard_conversations
from engine.behaviour.text_diff import hunks
from tests.conftest import engine_process
from tests.fake_hub import FakeHub, no_ambient_credentials  # noqa: F401 - an autouse fixture
from tests.token_support import tokenizer_files

# Line 5 writes the generation prompt.
TEMPLATE = """{#- A small ChatML template for the diff tests -#}
{%- for m in messages -%}
{{ '<|im_start|>' + m.role + '\\n' }}{{ m.content if m.content is string else '' }}{{ '<|im_end|>\\n' }}
{%- endfor -%}
{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\\n' }}
{%- endif -%}
"""
GENERATION_LINE = 5
RESPONSE = {"defaults": {"role": "assistant"}, "start_anchor": "<|im_start|>assistant\n",
            "fields": {"content": {"close": "<|im_end|>", "content": "text"}}}
CASES = {"cases": [{"name": "greeting", "messages": [{"role": "user", "content": "Hello"}]}]}
RECORDINGS = {"recordings": [{"name": "hello back", "case": "greeting", "output": "Hi there!<|im_end|>",
                              "expected": {"role": "assistant", "content": "Hi there!"}}]}


def model_folder(path: Path, template: str = TEMPLATE, *, inline: bool = False, own: bool = False) -> Path:
    """A model folder as a repo holds it: chat_template.jinja (or the template inside
    tokenizer_config.json), the response template and special tokens in tokenizer_config.json."""
    path.mkdir(parents=True)
    config = {"eos_token": "<|im_end|>", "response_template": RESPONSE}
    if inline:
        config["chat_template"] = template
    else:
        (path / "chat_template.jinja").write_text(template)
    (path / "tokenizer_config.json").write_text(json.dumps(config, indent=2))
    if own:
        (path / "tests" / "templates").mkdir(parents=True)
        (path / "tests" / "templates" / "cases.json").write_text(json.dumps(CASES))
        (path / "tests" / "templates" / "recordings.json").write_text(json.dumps(RECORDINGS))
    return path


def one_character_change(template: str = TEMPLATE) -> str:
    changed = template.replace("'<|im_start|>assistant\\n'", "'<|im_start|>assistant \\n'")
    assert len(changed) == len(template) + 1
    return changed


def test_a_folder_against_an_identical_copy_changes_nothing(cli, tmp_path):
    base = model_folder(tmp_path / "base", own=True)
    shutil.copytree(base, tmp_path / "copy")
    result = cli("diff", base, tmp_path / "copy", "--json", "--exit-code")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    names = [c["name"] for c in data["conversations"]]
    assert names == [c.name for c in standard_conversations()] + ["greeting"]  # the folder's own case too
    assert data["changed"] == 0 and not any(c["changed"] or c["changes"] for c in data["conversations"])
    assert all(c["before"] == c["after"] and c["before"] for c in data["conversations"])
    assert data["messages"] and data["messages_changed"] == 0
    assert "0 of 11 conversations" in cli("diff", base, tmp_path / "copy").stdout


def test_a_one_character_change_to_the_generation_prompt_changes_exactly_the_conversations_that_render_it(cli, tmp_path):
    base = model_folder(tmp_path / "base")
    new = model_folder(tmp_path / "new", one_character_change())
    result = cli("diff", base, new, "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    rendering_it = {c.name for c in standard_conversations() if c.add_generation_prompt}
    assert {c["name"] for c in data["conversations"] if c["changed"]} == rendering_it
    assert 0 < len(rendering_it) < len(data["conversations"])  # the suite has conversations without it
    assert data["changed"] == len(rendering_it)
    for c in data["conversations"]:
        if not c["changed"]:
            assert c["changes"] == [] and c["before"] == c["after"]
            continue
        assert c["after"] == c["before"][:-1] + " \n"  # both prompts, whole
        [change] = c["changes"]
        assert (change["removed"], change["added"]) == ("", " ")  # the smallest difference: one space
        assert change["after_start"] == len(c["before"]) - 1 and change["lead"].endswith("<|im_start|>assistant")
        assert [s["line"] for s in change["after_sites"]] == [GENERATION_LINE]
        assert change["after_sites"][0]["wrote"] and "assistant \\n" in change["after_sites"][0]["text"]
        assert [s["line"] for s in change["before_sites"]] == [GENERATION_LINE]
    assert cli("diff", base, new, "--exit-code").returncode == 1


def test_the_text_report_shows_the_changed_characters_and_the_line(cli, tmp_path):
    base = model_folder(tmp_path / "base")
    new = model_folder(tmp_path / "new", one_character_change())
    out = cli("diff", base, new).stdout
    assert re.search(r"The prompt changes in \d+ of 10 conversations", out)
    assert "~ plain chat: 1 change" in out and "= plain chat, no generation prompt" in out
    assert "<|im_start|>assistant{+·+}⏎" in out  # whitespace visible, the change marked
    assert f"{GENERATION_LINE} | {{%- if add_generation_prompt -%}}{{{{ '<|im_start|>assistant \\n' }}}}" in out


def test_github_format_annotates_the_changed_template_line(cli, tmp_path):
    base = model_folder(tmp_path / "base")
    new = model_folder(tmp_path / "new", one_character_change())
    lines = cli("diff", base, new, "--format", "github").stdout.splitlines()
    assert lines[0].startswith("::notice title=what changes for the model::The prompt changes in")
    [placed] = [l for l in lines if "file=" in l]
    assert placed.startswith(f"::notice file={new / 'chat_template.jinja'},line={GENERATION_LINE},col=")
    assert "in 8 conversations (plain chat, system message" in placed and "{+·+}" in placed
    # A template kept in tokenizer_config.json is annotated at its place in that file.
    inline = model_folder(tmp_path / "inline", one_character_change(), inline=True)
    lines = cli("diff", base, inline, "--format", "github").stdout.splitlines()
    [placed] = [l for l in lines if "file=" in l]
    config = (inline / "tokenizer_config.json").read_text().splitlines()
    line = next(i for i, row in enumerate(config, 1) if '"chat_template"' in row)
    assert placed.startswith(f"::notice file={inline / 'tokenizer_config.json'},line={line},col=")
    column = int(re.search(r",col=(\d+)", placed).group(1))
    assert config[line - 1][column - 1 :].startswith("'<|im_start|>assistant \\\\n'")


def test_a_conversation_that_no_longer_renders_is_a_change_with_its_error(cli, tmp_path):
    broken = TEMPLATE.replace("{%- if add_generation_prompt -%}",
                              "{%- if tools %}{{ raise_exception('no tools here') }}{% endif -%}\n{%- if add_generation_prompt -%}")
    base = model_folder(tmp_path / "base")
    new = model_folder(tmp_path / "new", broken)
    data = json.loads(cli("diff", base, new, "--json").stdout)
    failing = {c["name"]: c for c in data["conversations"] if c["after_error"]}
    assert set(failing) == {c.name for c in standard_conversations() if c.tools}
    assert all(c["changed"] and c["after"] is None and "no tools here" in c["after_error"] for c in failing.values())
    lines = cli("diff", base, new, "--format", "github").stdout.splitlines()
    assert any(l.startswith(f"::warning file={new / 'chat_template.jinja'},line=5") and "no longer renders" in l
               for l in lines)


def test_the_response_template_side_parses_the_same_outputs_with_both(cli, tmp_path):
    base = model_folder(tmp_path / "base", own=True)
    new = model_folder(tmp_path / "new", own=True)
    config = json.loads((new / "tokenizer_config.json").read_text())
    config["response_template"]["fields"]["content"]["close"] = "<|endoftext|>"
    (new / "tokenizer_config.json").write_text(json.dumps(config))
    data = json.loads(cli("diff", base, new, "--json").stdout)
    assert data["changed"] == 0  # the chat template is the same
    recording = next(m for m in data["messages"] if m["source"] == "recording")
    assert recording["name"] == "hello back" and recording["changed"] and recording["fields"] == ["content"]
    assert recording["before"]["content"] == "Hi there!" and recording["after"]["content"] == "Hi there!<|im_end|>"
    markdown = cli("diff", base, new, "--format", "markdown").stdout
    assert "<details><summary><b>recording hello back</b>: `content` differ</summary>" in markdown


def test_token_counts_come_from_the_tokenizer(cli, tmp_path):
    base = model_folder(tmp_path / "base")
    new = model_folder(tmp_path / "new", one_character_change())
    files = tokenizer_files(("<|im_start|>", "<|im_end|>"))
    (new / "tokenizer.json").write_bytes(files.tokenizer_json)
    data = json.loads(cli("diff", base, new, "--json").stdout)
    changed = [c for c in data["conversations"] if c["changed"]]
    assert changed and all(c["after_tokens"] == c["before_tokens"] + 1 and c["token_change"] == 1 for c in changed)
    assert all(c["before_tokens"] is None for c in data["conversations"] if not c["changed"])


def test_markdown_and_html_reports(cli, tmp_path):
    base = model_folder(tmp_path / "base")
    # A visitor's text in a template must come out as text.
    new = model_folder(tmp_path / "new", one_character_change().replace("template for the diff tests",
                                                                        "template <script>alert(1)</script>"))
    markdown = cli("diff", base, new, "--format", "markdown").stdout
    assert markdown.startswith("### What changes for the model")
    assert "<details><summary><b>plain chat</b>, <b>system message</b>" in markdown  # one entry for one change
    assert "<|im_start|>assistant{+·+}⏎" in markdown and "Unchanged: plain chat, no generation prompt" in markdown
    page = cli("diff", base, new, "--format", "html").stdout
    assert page.startswith("<!doctype html>") and page.count("<details") == 8
    assert '<div class="hl">' in page and 'class="hll"' in page  # pygments: the line that wrote it, marked
    assert "<ins>·</ins>" in page and "<script>" not in page


def test_a_chat_template_file_each_and_bad_usage(cli, tmp_path):
    (tmp_path / "old.jinja").write_text(TEMPLATE)
    (tmp_path / "new.jinja").write_text(one_character_change())
    data = json.loads(cli("diff", tmp_path / "old.jinja", tmp_path / "new.jinja", "--json").stdout)
    assert data["changed"] == 8 and data["messages"] == []
    missing = cli("diff", tmp_path / "nope" / "x", tmp_path / "new.jinja")
    assert missing.returncode == 2 and "no such folder or file" in missing.stderr
    wrong = cli("diff", tmp_path / "old.jinja", tmp_path / "new.jinja", "--base-revision", "main")
    assert wrong.returncode == 2 and "revision goes with a Hub repo id" in wrong.stderr


def test_a_hub_repo_at_a_revision_as_the_base(cli, tmp_path, monkeypatch):
    new = model_folder(tmp_path / "new", one_character_change())
    config = (new / "tokenizer_config.json").read_bytes()
    with FakeHub() as hub:
        hub.add_repo("author/model", {"chat_template.jinja": one_character_change().encode(), "tokenizer_config.json": config})
        hub.push("author/model", {"chat_template.jinja": TEMPLATE.encode(), "tokenizer_config.json": config}, branch="v1")
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        main = json.loads(cli("diff", "author/model", new, "--json").stdout)
        v1 = json.loads(cli("diff", "author/model", new, "--base-revision", "v1", "--json").stdout)
        gone = cli("diff", "author/missing", new)
    assert main["changed"] == 0 and main["base"] == "author/model"
    assert v1["changed"] == 8 and v1["base"] == "author/model@v1"
    assert gone.returncode == 1 and "author/missing" in gone.stderr


def test_a_template_that_loops_is_stopped_at_the_timeout(cli, tmp_path):
    base = model_folder(tmp_path / "base")
    new = model_folder(tmp_path / "new", TEMPLATE + "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}")
    result = cli("diff", base, new, "--timeout", "3")
    assert result.returncode == 1 and "Comparing the two versions stopped" in result.stderr


def test_the_smallest_character_difference():
    assert hunks("same", "same") == []
    [one] = hunks("a\n\nb", "a\nb")
    assert (one.a1 - one.a0, one.b1 - one.b0) == (1, 0)
    before, after = "<|im_start|>system\nHi<|im_end|>\n<|im_start|>user\nYo", "<|im_start|>system\nHey<|im_end|>\n<|im_start|>user\nYou"
    spans = [(before[h.a0 : h.a1], after[h.b0 : h.b1]) for h in hunks(before, after)]
    assert spans == [("i", "ey"), ("", "u")]


def test_answers_are_bounded_and_own_cases_can_stand_alone():
    base, new = Version("a", TEMPLATE), Version("b", one_character_change())
    long_case = {"name": "long", "messages": [{"role": "user", "content": "x" * 300_000}]}
    from engine.cases import Case

    whole = compare(base, new, Suite(cases=[Case.from_dict(long_case)], standard=False))
    assert [c.name for c in whole.conversations] == ["long"] and len(whole.conversations[0].before) > 300_000
    bounded = compare(base, new, Suite(cases=[Case.from_dict(long_case)]), max_chars=100_000)
    assert len(json.dumps(bounded.to_dict())) < 150_000
    long = bounded.conversations[-1]
    assert long.changed and not long.prompts_kept and long.before is None and long.changes[0].added == " "
    assert all(c.before is None for c in bounded.conversations if not c.changed)


def test_diff_runs_as_a_real_process(tmp_path):
    base = model_folder(tmp_path / "base")
    new = model_folder(tmp_path / "new", one_character_change())
    result = engine_process("diff", base, new, "--format", "markdown")
    assert result.returncode == 0, result.stderr
    assert "The prompt changes in 8 of 10 conversations" in result.stdout


def test_the_pull_request_description_says_what_changes_for_the_model(monkeypatch):
    from engine.publish import plan_publish, publish

    publishing = importlib.import_module("engine.publish")

    token, repo = "hf_behaviour_diff_token_0123456789", "author/tiny-chat"
    config = json.dumps({"eos_token": "<|im_end|>", "response_template": RESPONSE}, indent=2).encode()
    with FakeHub() as hub:
        hub.add_token(token)
        hub.add_repo(repo, {"chat_template.jinja": TEMPLATE.encode(), "tokenizer_config.json": config})
        plan = plan_publish(repo, one_character_change(), None, endpoint=hub.url, timeout=10)
        assert plan.behaviour is not None and len(plan.behaviour.changed) == 8
        assert publish(plan, token=token, endpoint=hub.url).endswith("/discussions/1")
        description = hub.commits[0]["header"]["description"]
        # A template that takes too long to render leaves the files to publish, and says so.
        monkeypatch.setattr(publishing, "BEHAVIOUR_SECONDS", 2)
        slow = plan_publish(repo, TEMPLATE + "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
                            None, endpoint=hub.url, timeout=10)
    assert description.startswith("This pull request was prepared with the template playground.")
    section = description[description.index("## What changes for the model"):]
    assert "**The prompt changes in 8 of 10 conversations" in section
    [details] = re.findall(r"<details><summary>(.*?)</summary>(.*?)</details>", section, re.S)
    assert details[0].startswith("<b>plain chat</b>, <b>system message</b>") and "1 change" in details[0]
    assert "<|im_start|>assistant{+·+}⏎" in details[1] and f"now line {GENERATION_LINE}" in details[1]
    assert "Unchanged: plain chat, no generation prompt, multi-turn, ending with the answer." in section
    assert slow.changed and slow.behaviour is None and "Not worked out: Comparing the two versions stopped" in slow.description


def test_a_bounded_answer_stays_within_its_bound_however_much_changes():
    from engine.cases import Case, Recording

    # Fifty cases of many long messages, each rendered differently by the new version, and outputs
    # whose messages are long: what a visitor could send to the page.
    new = Version("b", TEMPLATE.replace("m.content if", "m.content ~ ' changed ' ~ m.content if"), json.dumps(RESPONSE))
    base = Version("a", TEMPLATE, json.dumps(RESPONSE))
    text = " ".join(str(k) for k in range(600))
    cases = [Case(f"case {i}", [{"role": "user", "content": f"{i} {text}"}]) for i in range(50)]
    recordings = [Recording(f"output {i}", f"case {i}", "x" * 20_000 + "<|im_end|>") for i in range(50)]
    bounded = compare(base, new, Suite(cases=cases, recordings=recordings), max_chars=200_000)
    size = len(json.dumps(bounded.to_dict(), ensure_ascii=False))
    assert size < 300_000, size
    assert len(bounded.changed) == 59  # (content parts render the same: the template skips them)
    assert all(c.before is None and not c.prompts_kept for c in bounded.conversations[-20:])  # past the budget
    assert all(len(m.output) <= 4_000 for m in bounded.messages) and len(bounded.messages) == 50


def test_the_outputs_come_from_the_library_formats_the_templates_are():
    from engine.behaviour.outputs import library_formats
    from engine.formats import format_index, load_format
    from engine.presets import load_preset

    qwen3 = load_preset("qwen3")
    names = [f.name for f in library_formats(Version("q", qwen3.chat_template, qwen3.response_template),
                                             Version("q", qwen3.chat_template, qwen3.response_template))]
    assert "qwen3" in names and all(load_format(n).spec() == json.loads(qwen3.response_template) for n in names)
    assert all(dict(format_index()[n][0]) == dict(load_format(n).response_template) for n in names)
    # A response template of the author's own: the formats whose every signature text the chat template writes.
    own = Version("own", "<|im_start|>{{ '<tool_call>' }}…{{ '</tool_call>' }}", json.dumps(RESPONSE))
    found = [f.name for f in library_formats(own, own)]
    assert "hermes" in found and len(found) <= 3
    assert all(text in own.chat_template for n in found for text in load_format(n).signature)


def test_a_standard_conversation_neither_version_renders_is_adapted_and_says_so(cli, tmp_path):
    refusing = TEMPLATE.replace("{%- for m in messages -%}",
                                "{%- if messages[0].role == 'system' %}{{ raise_exception('no system') }}{% endif -%}\n"
                                "{%- for m in messages -%}")
    base = model_folder(tmp_path / "base", refusing)
    new = model_folder(tmp_path / "new", one_character_change(refusing))
    data = json.loads(cli("diff", base, new, "--json").stdout)
    system = next(c for c in data["conversations"] if c["name"] == "system message")
    assert system["changed"] and not system["before_error"] and "You are a helpful assistant" in system["before"]
    assert system["notes"] == ["Adapted to the template (refuses a system message): as written, neither version renders it."]
