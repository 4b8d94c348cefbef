"""The standard conversations of a behaviour diff: data (`conversations.json`, beside this module),
read here and nowhere else. Each kind of request a model gets once (plain chat, a system message,
several turns, tools offered, a tool call and its result, reasoning in history, content parts), with
the generation prompt on and off, so a change to any part of a chat template shows in at least one."""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import Any

from ..cases import Case

SUITE_FILE = Path(__file__).resolve().parent / "conversations.json"


@cache
def _data() -> dict[str, Any]:
    data = json.loads(SUITE_FILE.read_text(encoding="utf-8"))
    for item in data["conversations"]:  # a broken entry fails the first load, not a later diff
        _case(item, data["tools"])
    return data


def _case(item: dict, tools: dict[str, dict]) -> Case:
    values = copy.deepcopy(item)
    if values.get("tools") is not None:
        values["tools"] = [copy.deepcopy(tools[name]) for name in values["tools"]]
    return Case.from_dict(values)


def standard_conversations() -> list[Case]:
    """The standard conversations, as fresh cases the caller owns."""
    data = _data()
    return [_case(item, data["tools"]) for item in data["conversations"]]
