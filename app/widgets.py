"""Small Gradio building blocks the panels share: an exact-text code editor and a streaming HTML view."""

from __future__ import annotations

from typing import Any

import gradio as gr


class ExactText(str):
    """Editor text that `gr.Code`'s own `postprocess` (which strips it) leaves as it is. Needed on top
    of `exact_code`'s override: when an event's answer leaves a component out, Gradio re-creates that
    session's copy of it from its constructor arguments, a plain `gr.Code` without the override, and
    every later value for that session goes through the copy (after a failed Hub load, say)."""

    def strip(self, chars: str | None = None) -> ExactText:
        return self

    lstrip = rstrip = strip


def keep_exact_text(value: str | None) -> str | None:
    """What the editors send to the page: the text exactly as set (see `exact_code`)."""
    if value is not None and not isinstance(value, str):
        raise ValueError("a code editor's value must be text")
    return value


def exact_code(**kwargs: Any) -> gr.Code:
    """A `gr.Code` editor that keeps its text exactly. Gradio's Code strips leading and trailing
    whitespace from values the app sets (its `postprocess`), and templates care about every byte: a
    chat template's final newline is part of the file an author publishes. The browser side keeps
    whitespace as typed, so replacing this one step is enough; tests/test_app_editors.py and the
    browser tests (a preset load and a share link keep a final newline) check it. Values for it are
    also sent as `ExactText` (`wiring` does that for every component marked `keeps_exact_text`).

    The override is set on the instance rather than in a subclass because Gradio writes a `.pyi`
    stub next to any module that defines a component subclass."""
    editor = gr.Code(**kwargs)
    editor.postprocess = keep_exact_text  # type: ignore[method-assign]
    editor.keeps_exact_text = True  # type: ignore[attr-defined]
    return editor


def exact_value(component: Any, value: Any) -> Any:
    """`value` (or a `gr.update`'s value) as `ExactText` for an editor that keeps its text exactly."""
    if not getattr(component, "keeps_exact_text", False):
        return value
    if isinstance(value, str):
        return ExactText(value)
    if isinstance(value, dict) and isinstance(value.get("value"), str):
        return {**value, "value": ExactText(value["value"])}
    return value


# The stream and events views: the server sends [run, pages, tail, count] (`live_views.view_value`).
# Pages only grow (the last one, or by a new page) during a run, and Gradio sends them as diffs, so
# the script appends just the new HTML to the page and replaces the short tail, instead of
# re-parsing the whole output's HTML on every update. A new run id (or shrinking pages) starts
# over; anything else (the update a run's last message sends for a view it leaves as it is) is
# ignored.
_INCREMENTAL_JS = """
const stable = element.querySelector('.inc-stable');
const tail = element.querySelector('.inc-tail');
const box = element.querySelector('.inc-scroll');
let run = null, done = [];
function apply() {
  const v = props.value;
  if (!Array.isArray(v)) return;
  const [id, pages, last, count] = v;
  let restart = id !== run || pages.length < done.length;
  for (let i = 0; !restart && i < done.length; i++) { if ((pages[i] || '').length < done[i]) restart = true; }
  if (restart) { stable.innerHTML = ''; done = []; run = id; }
  const follow = box && box.scrollHeight - box.scrollTop - box.clientHeight < 40;
  for (let i = 0; i < pages.length; i++) {
    const have = done[i] || 0;
    if (pages[i].length > have) { stable.insertAdjacentHTML('beforeend', pages[i].slice(have)); done[i] = pages[i].length; }
  }
  tail.innerHTML = last || '';
  if (box && follow) box.scrollTop = box.scrollHeight;
  element.dataset.run = String(id || '');
  element.dataset.count = String(count || 0);
}
apply();
watch('value', apply);
"""


def incremental_html(kind: str, value: list | None = None, **kwargs: Any) -> gr.HTML:
    """A view fed with `live_views.view_value` values: `kind` "stream" (a pre-wrapped text block)
    or "events" (a table body)."""
    if kind == "events":
        template = (
            '<div class="inc-scroll events-scroll"><table class="events"><thead><tr><th>event</th>'
            "<th>field</th><th>text or value</th><th title=\"yes: raw text of a structured region, parsed when it "
            "closes; no: already part of the final value\">dirty (?)</th></tr></thead>"
            '<tbody class="inc-stable"></tbody><tbody class="inc-tail"></tbody></table></div>'
        )
    else:
        template = '<div class="inc-scroll stream-scroll"><div class="stream-text"><span class="inc-stable"></span><span class="inc-tail"></span></div></div>'
    return gr.HTML(
        value=value or ["", [], "", 0],
        html_template=template,
        js_on_load=_INCREMENTAL_JS,
        apply_default_css=False,
        **kwargs,
    )
