"""What the token view costs per keystroke: the app's refresh (`app.workbench.refresh`, what an edit
calls: render in the worker, the prompt's HTML) without a tokenizer, with one loaded ("Tokens" off:
the count only) and with "Tokens" on, side by side, interleaved,
on the SmolLM3 preset's multi-turn case (about 1,500 characters) and on a long prompt (the case with
a 20,000-character message). The tokenizer is a tiny byte-level BPE (400 tokens) with SmolLM3's
special tokens: it cuts text into about twice as many tokens as a real 50k-token vocabulary, so
the HTML part is pessimistic. Reports the median of each, `token_view_ms` (on minus no tokenizer) and the ratio.
Run: `python -m benchmarks.bench_tokens`."""

from __future__ import annotations

import copy
import statistics
import time

from app.state import Session
from app.workbench import refresh
from engine.presets import load_preset
from engine.workspace import Workspace
from tests.test_app_support import form_values
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
    ws = sess.workspace
    started = time.perf_counter()
    refresh(sess, ws.chat_template + ("\n" if n % 2 else ""), ws.response_template, ws.case_name, False, tokens,
            **form_values(sess))
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


if __name__ == "__main__":
    for long in (False, True):
        print(measure(long))
