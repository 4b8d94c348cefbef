"""Step-through: after a run, the state at any chunk, re-traced by the engine."""

from __future__ import annotations

import html
import re

from app.run_stream import RunUpdate, stream_run
from app.state import LastRun
from engine.workspace import PASTED, RunSettings
from app.step_panel import EMPTY, step_view
from tests.test_app_support import RESPONSE, session


def test_step_view_before_any_run():
    assert step_view(session(), 3) == EMPTY


def test_each_position_shows_segments_pending_events_and_message_so_far():
    import json

    sess = session()
    sess.last_run = LastRun(
        prompt="<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
        tools=None,
        response_spec=json.loads(RESPONSE),
        chunks=["<think>Hm", "m.</thi", "nk>Hello <|im", "_end|>"],
        tokens=[2, 4, 7, 8],
        seconds=[0.1, 0.2, 0.3, 0.4],
    )
    start = step_view(sess, 0)
    assert "Before the first chunk" in start and "nothing held back" in start

    two = step_view(sess, 2)
    assert "Chunk 2 of 4" in two and '<code class="chunk">m.&lt;/thi</code>' in two
    # "</thi" may still become </think>: held back, and not yet part of the reasoning.
    assert '<pre class="pending-box">&lt;/thi</pre>' in two and "delimiter of reasoning_content" in two
    assert re.search(r'<tr class="latest-row"><td>region_chunk</td>', two)
    assert '&quot;reasoning_content&quot;' not in two  # the region is still open: not in the message yet

    three = step_view(sess, 3)
    assert '<pre class="pending-box">&lt;|im</pre>' in three
    assert "&quot;reasoning_content&quot;: &quot;Hmm.&quot;" in three  # closed: now in the message so far

    end = step_view(sess, 99)  # clamped to "after the end of output"
    assert "End of output" in end and 'data-position="5"' in end
    assert "&quot;content&quot;: &quot;Hello&quot;" in end
    assert "Segments (" in end and html.escape("<|im_end|>") in end


def test_step_through_follows_a_real_run():
    sess = session()
    list(stream_run(sess, RunSettings(recording=PASTED, pasted="Just an answer.<|im_end|>"), interval=0))
    total = len(sess.last_run.chunks)
    assert total >= 3
    middle = step_view(sess, 2)
    assert f"Chunk 2 of {total}" in middle and "Just an" in middle


def test_a_run_leaves_the_replay_to_the_slider():
    """At its last position the replay is the whole output again: built when the author moves the
    slider, not sent at the end of every run."""
    sess = session()
    updates = list(stream_run(sess, RunSettings(recording=PASTED, pasted="Just an answer.<|im_end|>"), interval=0))
    assert updates[0].step_view == EMPTY  # a new run clears the last one's replay
    shown = RunUpdate.shown(updates).step_view
    assert f"({len(sess.last_run.chunks)} chunks" in shown and "Move the slider" in shown and "step-view" not in shown
