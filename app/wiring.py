"""Events wired by name, not by position.

Every component the page's events touch is registered once under a name (`Wiring.add`). A handler
is a plain function whose parameters are named after the components it reads (plus, as keyword
catch-alls, groups such as the case form: `**form`), and which returns (or yields) a dict from
component names to new values; names it leaves out keep their value. So adding a control can never
shift the values after it, and a test calls a handler with keywords and reads its result by name.

Gradio's own special parameters (`gr.OAuthToken`, `gr.SelectData`, …) work as usual: any handler
parameter that is not a component name is passed through, with its annotation, for Gradio to fill.
"""

from __future__ import annotations

import inspect
import json
import typing
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import gradio as gr

from engine import limits
from engine.errors import logger
from engine.server_guard import serving

from . import visitors
from .state import Session
from .widgets import exact_value


class Wiring:
    """The page's components by name, and `on` to connect events to handlers by those names."""

    def __init__(self) -> None:
        self.components: dict[str, gr.components.Component] = {}
        self.served: dict[str, Any] = {}  # what the page is served showing, by name (page.set_first_view)

    def add(self, **components: Any) -> None:
        for name, component in components.items():
            if name in self.components and self.components[name] is not component:
                raise ValueError(f"Two components are named {name!r}")
            self.components[name] = component

    def __getitem__(self, name: str) -> Any:
        return self.components[name]

    def on(self, triggers: Any, handler: Callable | None, inputs: Sequence[str] = (), outputs: Sequence[str] = (),
           **options: Any) -> Any:
        """`gr.on(triggers, …)` with `handler` reading and writing components by name. `handler`
        None runs only the `js=` option in the browser (values still travel by position there)."""
        in_components = [self.components[name] for name in inputs]
        out_components = [self.components[name] for name in outputs]
        fn = None if handler is None else by_name(handler, list(inputs), {n: self.components[n] for n in outputs}, self)
        if not isinstance(triggers, (list, tuple)):
            return triggers(fn, in_components, out_components, **options) if callable(triggers) else None
        return gr.on(triggers, fn, in_components, out_components, **options)


def by_name(handler: Callable, inputs: list[str], outputs: dict[str, Any], page: Wiring | None = None) -> Callable:
    """A Gradio callback that calls `handler(**{name: value})` and turns the names of its result into
    components. Keeps `handler`'s extra (non-component) parameters in its signature, so Gradio still
    injects OAuth tokens, select data and requests into them. Every call is attended to
    (`visitors.attending`: its client named and counted, the session's memory counted after)."""
    signature = inspect.signature(handler)
    special = [p for p in signature.parameters.values()
               if p.name not in inputs and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]  # fmt: skip
    hints = typing.get_type_hints(handler) if special else {}
    parameters = [inspect.Parameter(f"value_{i}", inspect.Parameter.POSITIONAL_ONLY) for i in range(len(inputs))]
    parameters += [p.replace(kind=inspect.Parameter.POSITIONAL_OR_KEYWORD, default=inspect.Parameter.empty) for p in special]
    # Gradio fills a parameter annotated gr.Request with the request (who sent it, from where).
    parameters.append(inspect.Parameter(REQUEST, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=None))
    count, extra = len(inputs), len(special)

    def named(args: tuple, keywords: dict[str, Any]) -> tuple[dict[str, Any], Any]:
        """The handler's values by name, and the request (Gradio passes both by position)."""
        values = dict(zip(inputs, args[:count]))
        values.update(zip((p.name for p in special), args[count:count + extra]))
        values.update({k: v for k, v in keywords.items() if k != REQUEST})
        request = args[count + extra] if len(args) > count + extra else keywords.get(REQUEST)
        return values, request

    def to_components(result: Any, session: Session | None = None) -> Any:
        if result is None:
            return {}
        unknown = set(result) - set(outputs)
        if unknown:
            raise KeyError(f"{handler.__name__} returned values for {sorted(unknown)}, which are not its outputs")
        if session is not None:
            if page is not None and ("", "served") not in session.sent:  # the page as served, before any answer
                session.sent[("", "served")] = 0
                not_shown_yet(session, page.components, page.served)
            result = not_shown_yet(session, outputs, result)
        if not result and outputs:  # nothing changes: Gradio needs at least one output named
            return {next(iter(outputs.values())): gr.skip()}
        result = within_budget(handler.__name__, result, outputs)
        return {outputs[name]: exact_value(outputs[name], value) for name, value in result.items()}

    if inspect.isgeneratorfunction(handler):
        def call(*args: Any, **keywords: Any) -> Iterable[Any]:
            values, request = named(args, keywords)
            session = _session(values)
            with visitors.attending(request, session) as client:
                steps = handler(**values)
                while True:
                    with serving(client):  # each step may run on another thread
                        try:
                            result = next(steps)
                        except StopIteration:
                            break
                    _shown(session, values, result)
                    yield to_components(result, session)
    else:
        def call(*args: Any, **keywords: Any) -> Any:
            values, request = named(args, keywords)
            session = _session(values)
            with visitors.attending(request, session) as client, serving(client):
                result = handler(**values)
            _shown(session, values, result)
            return to_components(result, session)

    call.__name__ = getattr(handler, "__name__", "handler")
    call.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    call.__annotations__ = {p.name: hints[p.name] for p in special if p.name in hints} | {REQUEST: gr.Request}
    call.input_names = tuple(inputs)  # type: ignore[attr-defined]  # for tests that drive every handler
    call.output_names = {id(component): name for name, component in outputs.items()}  # type: ignore[attr-defined]
    return call


# The name of the request parameter every callback takes (Gradio fills it; handlers never see it).
REQUEST = "playground_request"
# Views: what the server writes for the page (the visitor's own texts, in editors and text boxes, are
# bounded by the workspace's limits instead).
VIEWS = (gr.HTML, gr.Markdown)


def answer_size(result: dict[str, Any], outputs: dict[str, Any]) -> int:
    """The bytes of the views in one answer (`limits.MAX_ANSWER_BYTES` bounds them). The streamed
    views of a run (lists of pages, sent as diffs) are not counted: each update sends what they gained."""
    return sum(len(value) for name, value in result.items() if isinstance(value, str) and isinstance(outputs[name], VIEWS))


def within_budget(handler: str, result: dict[str, Any], outputs: dict[str, Any]) -> dict[str, Any]:
    """`result`, with its largest views replaced by a note while its views are over the answer's
    budget. Each view bounds itself first (the prompt, diagnostics, provenance from the worker):
    this is the net under them, so that no answer, however a new view is written, carries more."""
    size = answer_size(result, outputs)
    if size <= limits.MAX_ANSWER_BYTES:
        return result
    result = dict(result)
    views = sorted((name for name, value in result.items() if isinstance(value, str) and isinstance(outputs[name], VIEWS)),
                   key=lambda name: len(result[name]), reverse=True)
    for name in views:
        logger.warning("An answer over its budget: %s's %s is %s bytes (the answer %s, over %s): cut", handler, name,
                       len(result[name]), size, limits.MAX_ANSWER_BYTES)
        size -= len(result[name])
        result[name] = (f'<div class="stale-banner view-cut">This view is not shown: it is {len(result[name]) // 1000:,} kB, '
                        f"over the {limits.MAX_ANSWER_BYTES // 1000:,} kB an answer to the page may carry.</div>")
        size += len(result[name])
        if size <= limits.MAX_ANSWER_BYTES:
            break
    return result


def _session(values: dict[str, Any]) -> Session | None:
    session = values.get("session")
    return session if isinstance(session, Session) else None


def _shown(session: Session | None, values: dict[str, Any], result: Any) -> None:
    if session is not None:
        visitors.note_shown(session, {**values, **(result if isinstance(result, dict) else {})})


# ----- what the page already shows -----------------------------------------------------------------
# Gradio builds a component for every `gr.update` an answer carries (and for every output an answer
# leaves out), to keep its copy of the page: a preset's answer carried 16 updates, most of them setting
# what the page already showed (the case form's controls hidden as they were, the step slider hidden).
# A component's props (its choices, label, help, visibility) are only ever set by the server, so what
# this page was last sent of them is known: an update leaves those out, and one left with a value only
# is sent as that value (the page applies it as it did; Gradio builds nothing for it).


def _key(value: Any) -> int:
    try:
        return hash(json.dumps(value, sort_keys=True, default=str))
    except (TypeError, ValueError):
        return id(value)


def not_shown_yet(session: Session, outputs: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """`result` with each update's props this session's page was last sent left out (see above),
    noting what it sends."""
    sent = session.sent
    kept: dict[str, Any] = {}
    for name, value in result.items():
        if not (isinstance(value, dict) and value.get("__type__") == "update"):
            kept[name] = value
            continue
        props = {k: v for k, v in value.items() if k not in ("__type__", "value")}
        fresh = {k: v for k, v in props.items() if sent.get((name, k)) != _key(v)}
        sent.update({(name, k): _key(v) for k, v in fresh.items()})
        if fresh:
            kept[name] = {"__type__": "update", **fresh, **({"value": value["value"]} if "value" in value else {})}
        elif "value" in value:
            kept[name] = value["value"]
    return kept
