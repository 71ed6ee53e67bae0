"""A tool result as data a later step's template reads: what the tool meant, not how it was framed.

The same reading code mode gives a tool's result: its structured content when it has some,
else its text, JSON-decoded when it is JSON. A result the inner call's offload step saved to a
file (too large for the caller) is read back from that file: the chain's next step needs the
data, not the alert the model would have got. A result cut by a frontend's size limit cannot
be read back, and says so.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import mcp_types as types

from mcp_nexus.pipeline.steps.offload import offloaded_file
from mcp_nexus.pipeline.steps.size_limit import TRUNCATED_META_KEY

ReadOffloaded = Callable[[str], str]
"""Reads an offloaded result's payload by file name (the offload folder's `read_text`)."""


class UnreadableResult(ValueError):
    """A step result whose data did not survive the inner call (cut by a size limit)."""


def result_text(result: types.CallToolResult) -> str:
    """The result's text items, joined by newlines (what an error message quotes)."""
    return "\n".join(item.text for item in result.content if isinstance(item, types.TextContent))


def step_value(result: types.CallToolResult, read_offloaded: ReadOffloaded | None) -> Any:
    """The data of `result`: structured content, else its (offloaded) text, JSON-decoded when JSON."""
    if result.structured_content is not None:
        return result.structured_content
    name = offloaded_file(result)
    if name is not None and read_offloaded is not None:
        text = read_offloaded(name)
    else:
        cut = (result.meta or {}).get(TRUNCATED_META_KEY)
        if isinstance(cut, dict):
            raise UnreadableResult(
                f"its result ({cut.get('bytes')} bytes) was cut to {cut.get('limit')} bytes by the "
                "caller's result limit (gateway.result_limits; with offload on it would be read whole)"
            )
        text = result_text(result)
    return decoded(text)


def decoded(text: str) -> Any:
    """`text` JSON-decoded when it is a JSON document, else the text itself."""
    stripped = text.strip()
    if not stripped or stripped[0] not in '[{"-0123456789tfn':
        return text
    try:
        return json.loads(stripped)
    except ValueError:
        return text
