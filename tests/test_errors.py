"""The engine's one policy for quoting someone else's error text, and its redacted log."""

from __future__ import annotations

import logging

from engine.errors import log_failure, quoted, redact


def test_quoted_errors_are_one_short_redacted_line():
    error = RuntimeError("Bad request to https://user:pa55word@host/x with Authorization: Bearer abcdefghijkl\nsecond line")
    text = quoted(error)
    assert text.startswith("RuntimeError: Bad request") and "second line" not in text
    assert "pa55word" not in text and "abcdefghijkl" not in text
    assert len(quoted("x" * 1000)) == 200 and quoted(ValueError()) == "ValueError"
    assert quoted("token=hf_abcdefghijklmnop\x07") == "token=hf_***"


def test_redact_hides_the_given_secrets_and_anything_token_shaped():
    assert redact("key sk-live-123456 and hf_abcdefghijk", "sk-live-123456") == "key *** and hf_***"
    assert redact("api_key=abcd1234&x=1") == "api_key=***&x=1"


def test_failures_are_logged_with_their_traceback_and_never_a_token(caplog):
    caplog.set_level(logging.ERROR, logger="playground")
    try:
        raise ValueError("the server said hf_SECRETsecretSECRET1 is wrong")
    except ValueError as e:
        log_failure("Loading a model failed", e)
    assert "Loading a model failed" in caplog.text and "Traceback" in caplog.text and "ValueError" in caplog.text
    assert "hf_SECRETsecretSECRET1" not in caplog.text
