"""An upstream's tools/call result read into the SDK's models: the same models and errors, validated cheaper.

`CallToolResult.content` is a list of a five-way union (text, image, audio, resource link,
embedded resource). pydantic validates a plain union in "smart" mode: every item is tried
against each member to pick the best match, although the members' `type` literals already
say which one it can be. Here the same model schema is compiled once with that union tagged
by `type`, so each item is validated against its own member only (about a tenth fewer
instructions for a one-text result, more for results with many items).

Same result, same errors: the tagged validator builds the very same `CallToolResult`
(class, fields, fields set). Whatever it refuses (an item without a `type`, which the
smart union still reads by its defaults, or anything malformed) goes through the
SDK's own `model_validate`, which then answers or raises exactly as before, so a hostile
upstream's malformed result still ends in the same clear error.
"""

from __future__ import annotations

import copy
from typing import Any

import mcp_types as types
from pydantic import ValidationError
from pydantic_core import SchemaValidator, core_schema


def _tagged_validator() -> SchemaValidator | None:
    """`CallToolResult`'s own schema with its content union tagged by `type`; None if the SDK's
    schema no longer has the shape this expects (then every result takes the SDK's path)."""
    schema: Any = copy.deepcopy(types.CallToolResult.__pydantic_core_schema__)
    try:
        content = schema["schema"]["fields"]["content"]["schema"]
        union = content["items_schema"]
        if schema["type"] != "model" or content["type"] != "list" or union["type"] != "union":
            return None
        choices: dict[str, Any] = {}
        for choice in union["choices"]:
            tag = choice["cls"].model_fields["type"].default
            if not isinstance(tag, str) or tag in choices:
                return None
            choices[tag] = choice
    except (KeyError, TypeError, AttributeError):
        return None
    content["items_schema"] = core_schema.tagged_union_schema(choices, discriminator="type")
    return SchemaValidator(schema)


_TAGGED = _tagged_validator()


def read_call_tool_result(raw: dict[str, Any]) -> types.CallToolResult:
    """`CallToolResult.model_validate(raw, by_name=False)`, cheaper for what it accepts."""
    if _TAGGED is not None:
        try:
            result: types.CallToolResult = _TAGGED.validate_python(raw, by_name=False)
            return result
        except ValidationError:
            pass  # the SDK's validation decides, and words the error
    return types.CallToolResult.model_validate(raw, by_name=False)


def read_tool_outcome(raw: dict[str, Any]) -> types.CallToolResult | types.InputRequiredResult:
    """A tools/call result as the upstream sent it: a final result, or (2026-07-28) a request for input."""
    if raw.get("resultType") == "input_required":
        return types.InputRequiredResult.model_validate(raw, by_name=False)
    return read_call_tool_result(raw)
