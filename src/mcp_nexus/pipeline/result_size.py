"""The size of a tool result in bytes, measured once per result and shared by the steps that need it.

Measured as a client would receive it, without serialising the whole result: UTF-8 bytes of
the text items (free for ASCII text), the JSON of other items, plus the structured content.
"""

from __future__ import annotations

import json

import mcp_types as types
import orjson

from mcp_nexus.pipeline.call import ToolCall


def text_bytes(text: str) -> int:
    # str.isascii() is O(1) in CPython: most results never need the encode copy.
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def measure(result: types.CallToolResult) -> int:
    size = 0
    for item in result.content:
        if isinstance(item, types.TextContent):
            size += text_bytes(item.text)
        else:
            size += len(item.model_dump_json(by_alias=True, exclude_none=True))
    if result.structured_content is not None:
        size += _json_bytes(result.structured_content)
    return size


def _json_bytes(value: object) -> int:
    try:
        return len(orjson.dumps(value, default=str, option=orjson.OPT_NON_STR_KEYS))
    except TypeError:
        # A lone surrogate (orjson refuses it) must be measured, not crash the call.
        encoded = json.dumps(value, ensure_ascii=False, default=str)
        return len(encoded.encode("utf-8", "surrogatepass"))


def result_size(call: ToolCall, result: types.CallToolResult) -> int:
    """`measure(result)`, remembered on the call so a later step does not measure it again."""
    known = call.measured
    if known is not None and known[0] is result:
        return known[1]
    size = measure(result)
    call.measured = (result, size)
    return size


def remember_size(call: ToolCall, result: types.CallToolResult, size: int) -> None:
    """A step that builds a result whose size it already knows saves the next step a measure."""
    call.measured = (result, size)
