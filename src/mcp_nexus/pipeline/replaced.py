"""The error flag of a result the gateway replaced (offload preview, truncation)."""

from __future__ import annotations

import mcp_types as types

from mcp_nexus.pipeline.call import ToolCall


def replaced_is_error(call: ToolCall, original: types.CallToolResult) -> bool:
    """True when the original was an error, or when its tool declares an output schema.

    A tool with an `outputSchema` must return matching `structuredContent` unless the result
    is an error, and clients check that. A preview or a cut text cannot match, so such a
    replacement is flagged as an error (its text says what happened and what to do).
    """
    return bool(original.is_error) or call.declares_output_schema
