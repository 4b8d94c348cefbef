"""The mistakes only tokens reveal, as check results (family "tokens" of `engine.checks`):

- `tokens.double_bos`: what the prompt starts with as apply_chat_template encodes it, and what
  `add_special_tokens=True` would add in front;
- `tokens.special_text`: every special-looking text the template writes, or the response template
  waits for, is one token (the pieces named when it is not);
- `tokens.stop_tokens`: the eos and stop tokens exist as one special token, and the playground's
  special tokens are the tokenizer's own;
- `tokens.training_mask`: `{% generation %}` covers each assistant turn and no other turn's text
  (character spans, so it runs without a tokenizer too);
- `tokens.delimiter_boundaries`: the response template's delimiters start and end on token boundaries.

Judgements are measured on real setups (docs/tokens.md): what widely used, correct tokenizers do
(Llama 3 writes BOS in the template and adds it on `tokenizer(text)`; Qwen2.5 writes `<tool_response>`
as several ordinary tokens) is `info`, never a warning.
"""

from __future__ import annotations

import re
from typing import Any

from ..text import GENERIC_SPECIAL_TOKEN, SPECIAL_TOKEN, visible
from ..tokens.view import added_special_tokens, special_ids
from ..transformers_compat import template_literal_text
from .results import CheckResult, Location

_SPECIAL = re.compile(SPECIAL_TOKEN)
_GENERIC = re.compile(GENERIC_SPECIAL_TOKEN)
_GENERATION_TAG = re.compile(r"\{%-?\s*generation\s*-?%\}")
NO_TOKENIZER = ("No tokenizer is loaded, so the token checks (double BOS, special tokens, stop tokens, delimiters on "
                "token boundaries) did not run. Load one (a Hub repo, a tokenizer.json, or run a local model); "
                "on the command line: --tokenizer FILE|FOLDER.")


def check_tokens(ctx: Any, outputs: list) -> list[CheckResult]:
    """Every token check on a check context (`engine.checks.context.CheckContext`) and the outputs
    the other checks use (recordings, runs, or the assistant turns the template writes)."""
    results = check_training_mask(ctx)
    if ctx.tokenizer is None:
        return [CheckResult("tokens", "info", NO_TOKENIZER), *results]
    tokenizer = ctx.tokenizer
    # Delimiters on token boundaries need the response template's delimiters (a chat template alone has none).
    boundaries = check_delimiter_boundaries(ctx, tokenizer, outputs) if ctx.template is not None else []
    return [*check_double_bos(ctx, tokenizer), *check_special_text(ctx, tokenizer),
            *check_stop_tokens(ctx, tokenizer), *results, *boundaries]


def _pieces(tokenizer: Any, text: str) -> list[str]:
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    return [tokenizer.decode([i]) for i in ids]


def _show(pieces: list[str]) -> str:
    return " + ".join(repr(p) for p in pieces)


# ----- double BOS -----------------------------------------------------------------------------------


def check_double_bos(ctx: Any, tokenizer: Any) -> list[CheckResult]:
    bos_id, bos = tokenizer.bos_token_id, tokenizer.bos_token
    before, _ = added_special_tokens(tokenizer)
    adds_bos = bos_id is not None and bos_id in before
    for case in ctx.cases:
        result = ctx.render(case)
        if result.prompt is None:
            continue
        ids = tokenizer(result.prompt, add_special_tokens=False)["input_ids"][:2]
        subject = f"case {case.name!r}"
        if bos_id is not None and ids[:2] == [bos_id, bos_id]:
            return [CheckResult("tokens.double_bos", "fail",
                                f"The prompt starts with {bos} twice, as apply_chat_template encodes it: the template "
                                "writes it twice.\nWrite {{ bos_token }} once, at the start.",
                                Location("chat_template"), subject)]
        if ids[:1] == [bos_id] and adds_bos:
            return [CheckResult(
                "tokens.double_bos", "info",
                f"The template writes {bos} and the tokenizer adds it too when asked to add special tokens "
                "(add_bos_token, or its post-processor). apply_chat_template(tokenize=True) encodes with "
                "add_special_tokens=False, so the model reads one; code that calls tokenizer(prompt) on the rendered "
                f"text (the default add_special_tokens=True) gives two {bos}. Encode rendered prompts with "
                "add_special_tokens=False (llama.cpp and vLLM warn about a double BOS).", None, subject)]
        if bos_id is not None and ids[:1] != [bos_id] and adds_bos:
            return [CheckResult(
                "tokens.double_bos", "info",
                f"The template does not start with {bos}, but the tokenizer adds it when encoding text "
                "(add_special_tokens=True): apply_chat_template's prompt starts without it, tokenizer(prompt) with it. "
                "If the model was trained with BOS, write {{ bos_token }} first in the template; if not, set "
                "add_bos_token to false in tokenizer_config.json.", Location("chat_template", 1, 1), subject)]
        break
    state = f"writes {bos} once" if bos_id is not None else "has no BOS token"
    return [CheckResult("tokens.double_bos", "pass", f"The prompt as apply_chat_template encodes it {state}; "
                        "the tokenizer adds no second one.")]


# ----- special-looking text -------------------------------------------------------------------------


def special_texts(ctx: Any) -> dict[str, str]:
    """Special-looking texts the template writes (its literals) or the response template waits for
    (its literal delimiters), each with where it comes from."""
    found: dict[str, str] = {}
    try:
        literals = template_literal_text(ctx.chat_template)
    except Exception:  # noqa: BLE001 - a template that does not compile is reported elsewhere
        literals = ""
    for match in _SPECIAL.finditer(literals):
        found.setdefault(match.group(), "chat_template")
    for spec in ctx.template.fields.values() if ctx.template is not None else ():
        for literal in (*(spec.open_literals or ()), *(spec.close_literals or ())):
            for match in _SPECIAL.finditer(literal):
                found.setdefault(match.group(), "response_template")
    return found


def check_special_text(ctx: Any, tokenizer: Any) -> list[CheckResult]:
    specials = special_ids(tokenizer)
    results, single, as_text = [], [], []
    for text, source in special_texts(ctx).items():
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        if len(ids) == 1:
            single.append(f"{text}{'' if ids[0] in specials else ' (an ordinary added token)'}")
            continue
        pieces = _show(_pieces(tokenizer, text))
        where = "The template writes" if source == "chat_template" else "The response template waits for"
        if _GENERIC.fullmatch(text):
            results.append(CheckResult(
                "tokens.special_text", "warn",
                f"{where} {text}, which this tokenizer splits into {len(ids)} tokens: {pieces}. The model reads (or "
                f"writes) it as ordinary text, not the control token it was trained on.\nAdd {text} to the tokenizer "
                "as a special token (added_tokens, \"special\": true), or write the token the tokenizer has.",
                _location(ctx, source, text), f"text {text}"))
        else:
            as_text.append(f"{text} ({len(ids)} tokens: {pieces})")
    if as_text:
        results.append(CheckResult(
            "tokens.special_text", "info",
            "Tag-like texts that are several ordinary tokens here: " + "; ".join(as_text) + ". Fine if the model "
            "learned them as text (Qwen2.5 writes <tool_response> this way); to make one a single token, add it to "
            "added_tokens."))
    if not results:
        shown = ", ".join(single) or "none"
        results.append(CheckResult("tokens.special_text", "pass",
                                   f"Every special-looking text is one token: {shown}."))
    return results


def _location(ctx: Any, source: str, text: str) -> Location:
    body = ctx.chat_template if source == "chat_template" else ctx.response_text
    index = body.find(text if source == "chat_template" else text.replace("\\", "\\\\"))
    if index < 0:
        return Location(source)
    line = body.count("\n", 0, index) + 1
    return Location(source, line, index - (body.rfind("\n", 0, index) + 1) + 1)


# ----- eos and stop tokens --------------------------------------------------------------------------


def check_stop_tokens(ctx: Any, tokenizer: Any) -> list[CheckResult]:
    results = []
    specials = special_ids(tokenizer)
    for name, value in ctx.special_tokens.items():
        own = getattr(tokenizer, name, None) if name.endswith("_token") else None
        if isinstance(value, str) and isinstance(own, str) and own != value:
            results.append(CheckResult(
                "tokens.stop_tokens", "warn",
                f"The playground renders with {name} = {value!r}, but this tokenizer's {name} is {own!r}: "
                f"apply_chat_template passes the tokenizer's own.\nSet {name} to {value!r} in tokenizer_config.json, "
                f"or use {own!r} here.", None, name))
    for text in ctx.turn_end_tokens():
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        if ids and tokenizer.unk_token_id in ids and tokenizer.unk_token != text:
            results.append(CheckResult(
                "tokens.stop_tokens", "fail",
                f"The stop token {text} is not in this tokenizer's vocabulary (it encodes to the unknown token "
                f"{tokenizer.unk_token}).\nAdd it to the tokenizer as a special token, or stop on a token it has.",
                None, f"stop token {text}"))
        elif len(ids) != 1:
            results.append(CheckResult(
                "tokens.stop_tokens", "fail",
                f"The stop token {text} is {len(ids)} tokens here ({_show(_pieces(tokenizer, text))}): the model never "
                "writes it as one token, so generation cannot stop on its id.\nAdd it to the tokenizer as a special "
                "token, or stop on a token the tokenizer has.", None, f"stop token {text}"))
        elif ids[0] not in specials:
            results.append(CheckResult(
                "tokens.stop_tokens", "warn",
                f"The stop token {text} is one token (id {ids[0]}) but not special: decoding with "
                "skip_special_tokens=True keeps it in the text.\nMark it special in tokenizer.json's added_tokens "
                "(\"special\": true).", None, f"stop token {text}"))
    if not results:
        shown = ", ".join(f"{t} ({tokenizer.convert_tokens_to_ids(t)})" for t in ctx.turn_end_tokens()) or "none declared"
        results.append(CheckResult("tokens.stop_tokens", "pass", f"Each stop token is one special token: {shown}."))
    return results


# ----- training masks -------------------------------------------------------------------------------


def check_training_mask(ctx: Any) -> list[CheckResult]:
    """`{% generation %}` blocks: present, around each assistant turn, and around nothing else."""
    if not _GENERATION_TAG.search(ctx.chat_template):
        return [CheckResult(
            "tokens.training_mask", "info",
            "The template has no {% generation %} blocks: apply_chat_template(..., return_assistant_tokens_mask=True) "
            "gives a mask of zeros, so an assistant-only loss trains on nothing.\nIf the model is fine-tuned with "
            "assistant-only loss, wrap each assistant turn's text (and its end-of-turn token) in "
            "{% generation %}…{% endgeneration %}.")]
    results = []
    for case in ctx.cases:
        if case.continue_final_message or not any(m.get("role") == "assistant" for m in case.messages):
            continue
        results += _mask_problems(ctx, case)
    return results or [CheckResult("tokens.training_mask", "pass",
                                   "Every assistant turn is inside {% generation %}, and nothing else is.")]


def _mask_problems(ctx: Any, case: Any) -> list[CheckResult]:
    full = ctx.render(case)
    if full.prompt is None:
        return []
    prompt, spans = full.prompt, full.generation_spans
    messages = case.messages
    # Where each message ends in the prompt: the conversation up to it, rendered alone, is a prefix.
    bounds: list[int | None] = [0]
    for k in range(1, len(messages) + 1):
        upto = ctx.render(case, messages=messages[:k], add_generation_prompt=False)
        bounds.append(len(upto.prompt) if upto.prompt is not None and prompt.startswith(upto.prompt) else None)
    subject = f"case {case.name!r}"
    problems = []
    for i, message in enumerate(messages):
        start, end = bounds[i], bounds[i + 1]
        if start is None or end is None or end <= start:
            continue
        inside = [(a, b) for a, b in spans if a < end and b > start]
        if message.get("role") == "assistant":
            content = message.get("content")
            if not inside:
                problems.append(f"assistant message {i + 1} is not inside any {{% generation %}} block: it is not "
                                "trained on. Wrap its text in {% generation %}…{% endgeneration %}.")
            for a, b in inside:
                after = _after_turn_end(prompt[a:min(b, end)], ctx.turn_end_tokens())
                if after:
                    problems.append(f"the {{% generation %}} block of assistant message {i + 1} goes on after its "
                                    f"end-of-turn token, over {visible(after.strip()[:60])!r}: the next turn's header. End the "
                                    "block right after the end-of-turn token.")
            if inside and isinstance(content, str) and content.strip():
                at = prompt.find(content.strip(), start, end)
                if at >= 0 and not any(a <= at and at + len(content.strip()) <= b for a, b in inside):
                    problems.append(f"assistant message {i + 1}'s text is not all inside {{% generation %}}: "
                                    "move the block around the whole content.")
        else:
            for a, b in inside:
                covered = prompt[max(a, start) : min(b, end)]
                problems.append(f"the {{% generation %}} block covers {visible(covered[:60])!r} of {message.get('role')} "
                                f"message {i + 1}: a fine-tune would train on it. End the block at the assistant's "
                                "end-of-turn token, before the next turn's header.")
    last = bounds[-1]
    if last is not None and any(b > last for _, b in spans):
        problems.append("the generation prompt is inside {% generation %}: end the block before it.")
    return [CheckResult("tokens.training_mask", "warn", problem[0].upper() + problem[1:], Location("chat_template"), subject)
            for problem in problems]


def _after_turn_end(masked: str, turn_ends: list[str]) -> str:
    """Text a mask holds after the last end-of-turn token in it (whitespace aside), or ""."""
    last = max(((masked.rfind(t), t) for t in turn_ends if t in masked), default=None)
    if last is None:
        return ""
    rest = masked[last[0] + len(last[1]) :]
    return rest if rest.strip() else ""


# ----- delimiters on token boundaries ---------------------------------------------------------------


def check_delimiter_boundaries(ctx: Any, tokenizer: Any, outputs: list) -> list[CheckResult]:
    """Each literal delimiter found in an output starts and ends where a token does."""
    literals = sorted({text for spec in ctx.template.fields.values()
                       for text in (*(spec.open_literals or ()), *(spec.close_literals or ())) if text})
    straddles: dict[str, tuple[str, str]] = {}
    for sample in outputs:
        output = sample.output
        encoding = tokenizer(output, add_special_tokens=False).encodings[0]
        cuts = {0, len(output)} | {a for a, _ in encoding.offsets} | {b for _, b in encoding.offsets}
        for literal in literals:
            at = output.find(literal)
            while at >= 0 and literal not in straddles:
                for edge in (at, at + len(literal)):
                    if edge not in cuts:
                        token = next((output[a:b] for a, b in encoding.offsets if a < edge < b), "")
                        straddles[literal] = (sample.subject, token)
                        break
                at = output.find(literal, at + 1)
    if not straddles:
        return [CheckResult("tokens.delimiter_boundaries", "pass",
                            f"Every delimiter found in the outputs starts and ends on a token boundary ({len(outputs)} "
                            "outputs).")]
    return [CheckResult(
        "tokens.delimiter_boundaries", "info",
        f"The delimiter {visible(literal)!r} starts or ends inside the token {visible(token)!r} in {subject}: streamed "
        "token by token, the parser holds that token back until it can tell, and a model may write the same text "
        "with other tokens. The streaming check tests the token chunking.\nIf you can, make the delimiter begin and "
        "end where tokens do (e.g. without the newline around a tag, stripping it in the field instead).",
        ctx.field_location(next((n for n, s in ctx.template.fields.items()
                                 if literal in (*(s.open_literals or ()), *(s.close_literals or ()))), None)),
        f"delimiter {visible(literal)}") for literal, (subject, token) in straddles.items()]


__all__ = ["NO_TOKENIZER", "check_tokens", "special_texts"]
