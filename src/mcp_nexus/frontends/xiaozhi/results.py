"""Tool results as Xiaozhi peers read them: one text item (only `content[0].text` is used)."""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types


def _item_text(item: Any) -> str:
    if isinstance(item, types.TextContent):
        return item.text
    if isinstance(item, types.EmbeddedResource):
        resource = item.resource
        if isinstance(resource, types.TextResourceContents):
            return resource.text
        return f"[binary resource {resource.uri} ({resource.mime_type or 'unknown type'})]"
    if isinstance(item, types.ResourceLink):
        return f"[resource {item.uri}]"
    if isinstance(item, types.ImageContent | types.AudioContent):
        kind = "image" if isinstance(item, types.ImageContent) else "audio"
        return f"[{kind} {item.mime_type}, {len(item.data) * 3 // 4} bytes, not shown]"
    return json.dumps(item.model_dump(mode="json", by_alias=True, exclude_none=True), ensure_ascii=False)


def flatten(result: types.CallToolResult) -> dict[str, Any]:
    """Every content item merged into the first text item; `isError` kept."""
    parts = [_item_text(item) for item in result.content]
    if not parts and result.structured_content is not None:
        parts = [json.dumps(result.structured_content, ensure_ascii=False)]
    return {"content": [{"type": "text", "text": "\n".join(parts)}], "isError": bool(result.is_error)}


def error_result(message: str) -> dict[str, Any]:
    """A failed call as the endpoint understands failures: `isError` with the message as the text."""
    return {"content": [{"type": "text", "text": message}], "isError": True}
