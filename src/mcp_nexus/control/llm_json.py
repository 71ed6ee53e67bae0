"""Reading the JSON object a model was asked to answer with (plans, revisions, completion checks)."""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


class BadAnswerError(ValueError):
    """The model's answer is not the JSON object asked for; the message quotes what it said."""


def json_object(text: str, what: str) -> dict[str, Any]:
    """The JSON object in `text` (a ```json fence around it is accepted); BadAnswerError naming `what` otherwise."""
    fenced = _FENCE.match(text)
    body = fenced.group(1) if fenced else text.strip()
    try:
        value = json.loads(body)
    except json.JSONDecodeError as exc:
        shown = body if len(body) <= 200 else body[:197] + "..."
        raise BadAnswerError(
            f"the model's {what} is not valid JSON ({exc.msg} at position {exc.pos}): {shown!r}"
        ) from None
    if not isinstance(value, dict):
        raise BadAnswerError(f"the model's {what} must be a JSON object, got {type(value).__name__}")
    return value


def string_list(value: Any, field: str, what: str) -> list[str]:
    """A non-empty list of step texts (strings, or objects with a `description`)."""
    if not isinstance(value, list) or not value:
        raise BadAnswerError(
            f"the model's {what} needs '{field}': a non-empty list of steps, got {json.dumps(value)[:100]}"
        )
    steps = []
    for item in value:
        text = item.get("description") if isinstance(item, dict) else item
        if not isinstance(text, str) or not text.strip():
            raise BadAnswerError(
                f"each of '{field}' in the model's {what} must be a step description, got {json.dumps(item)[:100]}"
            )
        steps.append(text.strip())
    return steps
