"""`python -m engine check PATH` on a model folder as it sits in a model repo, read with the Hub's
precedence; a chat template alone; GitHub Actions annotations at the place in the author's files;
`render`, `trace` and `draft` on the same inputs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from engine.commands._annotations import annotation, escape_data, escape_property
from engine.commands._model_inputs import Origin
from tests.conftest import engine_process
from tests.token_support import tokenizer_files

ROOT = Path(__file__).resolve().parent.parent
CHATML = ROOT / "tests" / "fixtures" / "checks" / "chatml"
SPECIALS = ("<|im_start|>", "<|im_end|>")
ADDED = ("<think>", "</think>", "<tool_call>", "</tool_call>")


def model_folder(path: Path, *, response_template: bool = True, inline: str | None = None) -> Path:
    """A folder like `save_pretrained` writes: chat_template.jinja (or the template `inline` in
    tokenizer_config.json), tokenizer_config.json with the response template and special tokens,
    tokenizer.json."""
    files = tokenizer_files(SPECIALS, ADDED, eos="<|im_end|>")
    path.mkdir(parents=True, exist_ok=True)
    config = json.loads(files.config)
    if response_template:
        config["response_template"] = json.loads((CHATML / "response_template.json").read_text())
    if inline is not None:
        config["chat_template"] = inline
    else:
        shutil.copy(CHATML / "chat_template.jinja", path / "chat_template.jinja")
    (path / "tokenizer_config.json").write_text(json.dumps(config, indent=2))
    (path / "tokenizer.json").write_bytes(files.tokenizer_json)
    return path


def statuses(result) -> dict[tuple[str, str | None], str]:
    return {(c["name"], c["subject"]): c["status"] for c in json.loads(result.stdout)["checks"]}


def test_a_model_folder_needs_no_other_flag(cli, tmp_path):
    folder = model_folder(tmp_path / "model")
    by_folder = cli("check", folder, "--json", "--random-splits", "5")
    assert by_folder.returncode == 0, by_folder.stderr
    # The same as naming each file: the folder's templates, special tokens and tokenizer.
    by_files = cli("check", "--chat-template", folder / "chat_template.jinja", "--response-template",
                   folder / "tokenizer_config.json", "--tokenizer", folder, "--json", "--random-splits", "5")
    assert statuses(by_folder) == statuses(by_files)
    names = {name for name, _ in statuses(by_folder)}
    assert {"round_trip.message", "streaming", "tokens.stop_tokens", "tokens.delimiter_boundaries"} <= names
    # Files and flags still override: another chat template, named on the command line, is the one checked.
    (tmp_path / "other.jinja").write_text("{% for m in messages %}{{ m.content | badfilter }}{% endfor %}")
    overridden = cli("check", folder, "--chat-template", tmp_path / "other.jinja", "--json")
    assert overridden.returncode == 1 and "badfilter" in overridden.stdout


def test_the_hubs_precedence_chat_template_jinja_first(cli, tmp_path):
    folder = model_folder(tmp_path / "model")
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config["chat_template"] = "{{ 'an older inline copy' }}"
    (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2))
    (tmp_path / "case.json").write_text(json.dumps({"messages": [{"role": "user", "content": "Hi"}]}))
    rendered = cli("render", folder, "--case", tmp_path / "case.json")
    assert rendered.stdout == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    (folder / "chat_template.jinja").unlink()
    assert cli("render", folder, "--case", tmp_path / "case.json").stdout == "an older inline copy"


def test_a_chat_template_alone_is_checked_and_names_the_draft(cli, tmp_path):
    folder = model_folder(tmp_path / "model", response_template=False)
    result = cli("check", folder, "--json")
    assert result.returncode == 0, result.stderr
    checks = json.loads(result.stdout)["checks"]
    got = {c["name"]: c for c in checks}
    assert got["template.renders"]["status"] == "pass"
    for name in ("round_trip", "streaming", "response_lint"):
        assert got[name]["status"] == "info" and "python -m engine draft MODEL_FOLDER" in got[name]["details"]
    assert got["engines.minijinja-tgi"]["status"] == "pass" and got["tokens.stop_tokens"]["status"] == "pass"
    assert not [c for c in checks if c["name"] in ("chat_lint.unread_field", "chat_lint.unwritten_field")]
    # A case the template cannot render is a failure, on the template's line.
    (folder / "chat_template.jinja").write_text("a\n{{ raise_exception('no') if messages[0].role == 'user' }}")
    (tmp_path / "cases.json").write_text(json.dumps([{"name": "one", "messages": [{"role": "user", "content": "x"}]}]))
    failing = cli("check", folder, "--cases", tmp_path / "cases.json", "--json")
    [renders] = [c for c in json.loads(failing.stdout)["checks"] if c["name"] == "template.renders"]
    assert failing.returncode == 1 and renders["location"] == {"source": "chat_template", "line": 2, "column": 4}


def test_github_annotations_escape_as_github_requires():
    assert escape_data("100% done\r\nnext") == "100%25 done%0D%0Anext"
    assert escape_property("a:b,c%") == "a%3Ab%2Cc%25"
    assert annotation("error", "bad: x, y\nz", file="m/chat:template,1.jinja", line=3, column=16, end_column=25,
                      title="check: one") == (
        "::error file=m/chat%3Atemplate%2C1.jinja,line=3,col=16,endColumn=24,title=check%3A one::bad: x, y%0Az")
    assert annotation("warning", "no place") == "::warning::no place"


def test_annotations_point_into_the_authors_files(cli, tmp_path):
    # A chat template kept in tokenizer_config.json: the error on its line 3 is on the file's line 2
    # (the JSON string), at the column of the escaped text.
    template = "{% for m in messages %}\n{{ m.role }}\n{{ m.content | badfilter }}\n{% endfor %}"
    folder = model_folder(tmp_path / "inline", inline=template)
    result = cli("check", folder, "--format", "github")
    text = (folder / "tokenizer_config.json").read_text()
    line = next(i for i, row in enumerate(text.splitlines(), 1) if '"chat_template"' in row)
    column = text.splitlines()[line - 1].index("badfilter") + 1
    assert result.returncode == 1
    assert (f"::error file={folder}/tokenizer_config.json,line={line},col={column},endColumn={column + 8},"
            "title=chat template::Jinja compile error: No filter named 'badfilter'.") in result.stdout
    # The checks it stops are one annotation with no place, naming every family, not one copy each.
    unplaced = [row for row in result.stdout.splitlines() if row.startswith("::error title=")]
    assert len(unplaced) == 1 and "round_trip%2C streaming%2C" in unplaced[0] and "Not run" in unplaced[0]
    # A chat lint in chat_template.jinja, at its own line; a response lint in tokenizer_config.json, at the file's line.
    folder = model_folder(tmp_path / "model")
    (folder / "chat_template.jinja").write_text((CHATML / "chat_template.jinja").read_text().replace(
        "{{- message.content }}", "{{- message.content.lstrip('\\n') }}"))
    config = json.loads((folder / "tokenizer_config.json").read_text())
    config["response_template"]["fields"]["reasoning_content"]["open"] = None
    config["response_template"]["fields"]["reasoning_content"]["open_pattern"] = "(?<=x)<think>"
    del config["response_template"]["fields"]["reasoning_content"]["open"]
    (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2))
    out = cli("check", folder, "--format", "github", "--random-splits", "0").stdout
    strip_line = next(i for i, row in enumerate((folder / "chat_template.jinja").read_text().splitlines(), 1) if ".lstrip(" in row)
    assert f"::warning file={folder}/chat_template.jinja,line={strip_line}," in out
    pattern_line = next(i for i, row in enumerate((folder / "tokenizer_config.json").read_text().splitlines(), 1)
                        if '"open_pattern"' in row)
    assert f"file={folder}/tokenizer_config.json,line={pattern_line}," in out and "title=response_lint.regex_portability" in out


def test_a_json_string_origin_maps_every_line():
    text = '{\n  "x": 1,\n  "chat_template": "ab\\n\\u00e9\\ud83d\\ude00c\\n\\"q\\"d"\n}'
    origin = Origin("f.json", text, text.index('"ab'), string=True)
    decoded = json.loads(text)["chat_template"]
    assert decoded.splitlines() == ["ab", "é😀c", '"q"d']
    rows = text.splitlines()
    for line, row in enumerate(decoded.splitlines(), 1):
        for column, char in enumerate(row, 1):
            file_line, file_column = origin.place(line, column)
            raw = rows[file_line - 1][file_column - 1 :]
            width = 1 if raw[0] != "\\" else 2 if raw[1] != "u" else 12 if raw[2:4].lower() == "d8" else 6
            assert json.loads('"' + raw[:width] + '"') == char, (line, column)


def test_trace_reads_the_folders_response_template(cli, tmp_path):
    folder = model_folder(tmp_path / "model")
    output = "<think>\nplan\n</think>\nHello!<|im_end|>"
    (tmp_path / "out.txt").write_text(output)
    by_folder = cli("trace", folder, "--output", tmp_path / "out.txt", "--json")
    by_file = cli("trace", "--response-template", CHATML / "response_template.json", "--output", tmp_path / "out.txt", "--json")
    by_tokens = cli("trace", folder, "--output", tmp_path / "out.txt", "--tokenizer", folder, "--json")
    assert by_folder.returncode == by_file.returncode == by_tokens.returncode == 0
    messages = [json.loads(r.stdout)["message"] for r in (by_folder, by_file, by_tokens)]
    assert messages[0] == messages[1] == messages[2] == {"role": "assistant", "reasoning_content": "plan",
                                                         "content": "Hello!"}
    bare = model_folder(tmp_path / "bare", response_template=False)
    missing = cli("trace", bare, "--output", tmp_path / "out.txt")
    assert missing.returncode == 2 and "python -m engine draft" in missing.stderr


def test_named_templates_follow_transformers_choice(cli, tmp_path):
    folder = model_folder(tmp_path / "model")
    (folder / "additional_chat_templates").mkdir()
    (folder / "additional_chat_templates" / "tool_use.jinja").write_text("TOOLS {{ (tools or []) | length }}")
    case = {"messages": [{"role": "user", "content": "Hi"}]}
    (tmp_path / "plain.json").write_text(json.dumps(case))
    (tmp_path / "tools.json").write_text(json.dumps({**case, "tools": [{"type": "function", "function": {"name": "f"}}]}))
    assert cli("render", folder, "--case", tmp_path / "plain.json").stdout.startswith("<|im_start|>user")
    assert cli("render", folder, "--case", tmp_path / "tools.json").stdout == "TOOLS 1"
    assert cli("render", folder, "--case", tmp_path / "plain.json", "--template-name", "tool_use").stdout == "TOOLS 0"
    (folder / "additional_chat_templates" / "tool_use.jinja").write_text("TOOLS\n{{ tools | badfilter }}")
    named = cli("check", folder, "--template-name", "tool_use", "--format", "github")
    assert named.returncode == 1
    assert f"::error file={folder}/additional_chat_templates/tool_use.jinja,line=2,col=12,endColumn=20," in named.stdout


@pytest.mark.slow  # a real `python -m engine check` process
def test_check_on_a_folder_in_a_real_process(tmp_path):
    folder = model_folder(tmp_path / "model", response_template=False)
    result = engine_process("check", folder, "--format", "github", "--strict")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "::notice title=round_trip%2C streaming%2C robustness%2C response_lint::Not run: there is no response template yet" \
        in result.stdout
