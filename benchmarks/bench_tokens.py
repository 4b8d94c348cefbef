"""What the token view costs per keystroke: the app's refresh (what an edit
calls for a keystroke, `edit_chat_template`: render in the worker, the prompt's HTML) without a tokenizer, with one loaded ("Tokens" off:
the count only) and with "Tokens" on, side by side, interleaved,
on the SmolLM3 preset's multi-turn case (about 1,500 characters) and on a long prompt (the case with
a 20,000-character message). The tokenizer is a tiny byte-level BPE (400 tokens) with SmolLM3's
special tokens: it cuts text into about twice as many tokens as a real 50k-token vocabulary, so
the HTML part is pessimistic. Reports the median of each, `token_view_ms` (on minus no tokenizer) and the ratio.
Run: `python -m benchmarks.bench_tokens` (or `python -m benchmarks`, which reports `token_view_ms`)."""

from __future__ import annotations

import copy
import statistics
import time

from app.state import Session
from app.workbench import edit_chat_template
from engine.presets import load_preset
from engine.workspace import Workspace
from tests.token_support import format_tokenizer


def session(long: bool) -> Session:
    sess = Session(Workspace.from_preset(load_preset("smollm3")))
    ws = sess.workspace
    ws.case_name = "multi-turn"
    if long:
        ws.case.messages = copy.deepcopy(ws.case.messages)
        ws.case.messages[0]["content"] = "The weather in Paris is sunny today. " * 540
    sess.tokenizer = format_tokenizer(ws.chat_template, ws.special_tokens, ws.stop_tokens)
    return sess


def keystroke(sess: Session, tokens: bool, n: int) -> float:
    sess.show_tokens = tokens
    started = time.perf_counter()
    edit_chat_template(sess, sess.workspace.chat_template.rstrip("\n") + ("\n" if n % 2 else ""), False)
    return (time.perf_counter() - started) * 1000


def measure(long: bool, rounds: int = 15) -> dict:
    bare, sess = session(long), session(long)
    bare.tokenizer = None  # no tokenizer: the keystroke as it was
    keystroke(sess, True, 0)  # warm: the worker starts and builds the tokenizer once
    keystroke(bare, False, 0)
    plain, counted, shown = [], [], []
    for n in range(rounds):
        plain.append(keystroke(bare, False, n))
        counted.append(keystroke(sess, False, n))
        shown.append(keystroke(sess, True, n))
    plain_ms, counted_ms, shown_ms = (statistics.median(x) for x in (plain, counted, shown))
    view = sess.last_prompt_html.count('class="tk ')
    return {"prompt": "long (~21k chars)" if long else "multi-turn (~1.5k chars)", "tokens_shown": view,
            "keystroke_ms": round(plain_ms, 1), "tokens_counted_ms": round(counted_ms, 1),
            "with_tokens_ms": round(shown_ms, 1), "token_view_ms": round(shown_ms - plain_ms, 1),
            "ratio": round(shown_ms / plain_ms, 2)}


def main(quick: bool = False) -> dict:
    """Both prompts; the figure `token_view_ms` for `python -m benchmarks`."""
    typical, long = measure(False, 3 if quick else 15), measure(True, 2 if quick else 9)
    for row in (typical, long):
        print(row)
    return {"token_view_ms": {"typical": typical["token_view_ms"], "long": long["token_view_ms"],
                              "keystroke_ms": typical["keystroke_ms"], "with_tokens_ms": typical["with_tokens_ms"]}}


if __name__ == "__main__":
    main()
