"""What every check works from: both templates (as text, for locations), the cases and outputs to try,
and small helpers for showing text differences to a person."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from transformers.utils.chat_parsing.response_templates import ResponseTemplate

from ..cases import Case
from ..content_parts import PARTS_CONVERSATION, reads_parts
from ..engines import context_for
from ..render import RenderResult, render
from ..response_spec import locate
from .results import Location
from .template_fields import TemplateFields, analyse_fields


@dataclass
class Sample:
    """A model output and the case whose prompt it continues."""

    name: str
    case: Case
    output: str
    expected: dict | None = None
    # A recording (stored with a preset or case file), a run (an output a runner produced), or a
    # rendered turn (an assistant message the chat template itself wrote, when there are no outputs).
    origin: str = "recording"
    # The prompt the output continues, when already known (rendered turns); else rendered from the case.
    prompt: str | None = None

    @property
    def subject(self) -> str:
        return f"{self.origin} {self.name!r}"


@dataclass
class CheckContext:
    """Both templates and everything to exercise them with. Built by `run_checks`."""

    chat_template: str
    response_text: str
    spec: dict
    template: ResponseTemplate | None  # None: a chat template alone, no response template yet
    cases: list[Case]
    samples: list[Sample]
    special_tokens: dict = field(default_factory=dict)
    template_kwargs: dict = field(default_factory=dict)
    stop_tokens: list[str] = field(default_factory=list)
    # Fields the chat template drops on purpose, each with why (Preset.round_trip_differences).
    documented: dict[str, str] = field(default_factory=dict)
    tokenizer: Any = None
    random_splits: int = 200
    seed: int = 0
    default_cases: bool = False
    # What the model writes, for the robustness check (a library format's `variations`, with its
    # name): None takes a library format's when the response template is one, else the pair's own.
    claims: tuple[str, dict] | None = None

    @cached_property
    def fields(self) -> TemplateFields | None:
        """Which message fields the chat template reads (None if it does not parse)."""
        try:
            return analyse_fields(self.chat_template)
        except Exception:  # noqa: BLE001 - a syntax error is reported as a diagnostic elsewhere
            return None

    @cached_property
    def reads_parts(self) -> bool:
        """Whether the chat template reads content parts (measured: `engine.content_parts`)."""
        return reads_parts(lambda messages: self.render(Case("content parts probe", messages), add_generation_prompt=True))

    def render(
        self,
        case: Case,
        messages: list[dict] | None = None,
        add_generation_prompt: bool | None = None,
        continue_final_message: bool | str | None = None,
        chat_template: str | None = None,
    ) -> RenderResult:
        """Render `case` (or `messages` with the case's tools, documents and kwargs), with this
        context's chat template or another text of it (`chat_template`, for lints that edit it)."""
        return render(
            self.chat_template if chat_template is None else chat_template,
            copy.deepcopy(case.messages if messages is None else messages),
            case.tools,
            case.documents,
            add_generation_prompt=case.add_generation_prompt if add_generation_prompt is None else add_generation_prompt,
            continue_final_message=case.continue_final_message if continue_final_message is None else continue_final_message,
            template_kwargs={**self.template_kwargs, **case.template_kwargs},
            special_tokens={**self.special_tokens, **case.special_tokens},
        )

    def variables(self, case: Case) -> dict:
        """The variables `render` hands the template for `case`, as plain JSON data (what the other
        engines render with: `engines.context_for`)."""
        kwargs = {**self.special_tokens, **case.special_tokens, **self.template_kwargs, **case.template_kwargs}
        return context_for(case.messages, case.tools, case.documents, case.add_generation_prompt, kwargs)

    def prompt_for(self, sample: Sample) -> RenderResult:
        if sample.prompt is not None:
            return RenderResult(sample.prompt)
        return self.render(sample.case)

    def field_location(self, name: str | None, key: str | None = None) -> Location:
        """Where field `name` (or its `key`, e.g. "close") is written in the response template."""
        if name is None or name not in self.spec.get("fields", {}):
            return Location("response_template")
        path: tuple = ("fields", name, key) if key and key in self.spec["fields"][name] else ("fields", name)
        line, column = locate(self.response_text, path)
        return Location("response_template", line, column)

    def key_location(self, *path: str | int) -> Location:
        line, column = locate(self.response_text, tuple(path))
        return Location("response_template", line, column)

    def turn_end_tokens(self) -> list[str]:
        """Text that ends the model's turn: the stop tokens, and the eos token."""
        eos = self.special_tokens.get("eos_token")
        tokens = [*self.stop_tokens, *([eos] if isinstance(eos, str) else [])]
        return [t for t in dict.fromkeys(tokens) if t]

    def field_named_in(self, message: str) -> str | None:
        """The field an error message from transformers names (`Field 'x': …`, `['x']`), if any."""
        for name in self.template.fields:
            if f"'{name}'" in message:
                return name
        return None

    def anchor_hint(self, prompt: str) -> str:
        """Why a parse of output after `prompt` may go wrong: the start anchor is not in the prompt."""
        if self.template.start_anchor_re.search(prompt) is None:
            return "\n  (the start anchor does not occur in the prompt, so the parser also reads the prompt: see response_lint.start_anchor)"
        return ""

    def dropped_fields(self) -> dict[str, str]:
        """Fields the chat template does not render back, each with why: documented differences first,
        then fields it never reads (found in its AST)."""
        out = {name: f"documented: {why}" for name, why in self.documented.items()}
        fields = self.fields
        if fields is not None:
            for name in self.template.fields:
                if name not in out and not fields.reads(name):
                    out[name] = f"the chat template never renders `{name}`"
        return out


CALL_ID = "functions.get_weather:0"


def parts_case() -> Case:
    """The built-in conversation for templates that read content parts: a picture and a question as
    parts, an answer, a follow-up (`fitting` adds it when the template reads parts)."""
    return Case(name="content parts", messages=copy.deepcopy(PARTS_CONVERSATION),
                description="Built in: a picture and a question as content parts, an answer and a follow-up.")


def default_cases(fields: TemplateFields | None) -> list[Case]:
    """Cases to check with when none are given: a plain conversation, and one with a tool call when the
    chat template reads tools. Assistant messages carry reasoning when the template reads it, so the
    round trip exercises every field the template knows."""
    reads = fields.reads if fields is not None else (lambda name: False)
    answer: dict = {"role": "assistant", "content": "The capital of France is Paris."}
    if reads("reasoning_content"):
        answer["reasoning_content"] = "The user asks for the capital of France. That is Paris."
    cases = [
        Case(
            name="conversation",
            messages=[
                {"role": "system", "content": "You are a helpful assistant."},
                {"role": "user", "content": "What is the capital of France?"},
                answer,
                {"role": "user", "content": "And of Italy?"},
            ],
            description="Built in: a system prompt, a question, an answer and a follow-up.",
        )
    ]
    if fields is not None and "tools" in fields.variables and reads("tool_calls"):
        tool = {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Get the current weather in a city.",
                "parameters": {
                    "type": "object",
                    "properties": {"city": {"type": "string", "description": "The city"}},
                    "required": ["city"],
                },
            },
        }
        # Real conversations carry tool-call ids (servers assign them); this is the form Kimi K2 reads
        # the function name back from. Templates with their own rule (Mistral's) get theirs by fitting.
        call = {"role": "assistant", "tool_calls": [{"id": CALL_ID, "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]}
        cases.append(
            Case(
                name="tool call",
                messages=[
                    {"role": "user", "content": "What is the weather in Paris?"},
                    call,
                    {"role": "tool", "content": "22 degrees and sunny", "name": "get_weather", "tool_call_id": CALL_ID},
                    {"role": "assistant", "content": "It is 22 degrees and sunny in Paris."},
                    {"role": "user", "content": "Thanks!"},
                ],
                tools=[tool],
                description="Built in: a tool call, its result and the answer.",
            )
        )
    return cases
