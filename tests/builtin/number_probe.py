"""An embedded test server that reports the Python type of each argument it received.

Its parameters are typed `Any` with a hand-written JSON schema, so neither pydantic nor the
SDK converts anything: what it reports is exactly what the gateway forwarded.
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from pydantic import WithJsonSchema

Percent = Annotated[Any, WithJsonSchema({"type": "integer", "minimum": 0, "maximum": 100})]
Ratio = Annotated[Any, WithJsonSchema({"type": "number"})]
MaybeCount = Annotated[Any, WithJsonSchema({"anyOf": [{"type": "integer"}, {"type": "null"}]})]
Counts = Annotated[Any, WithJsonSchema({"type": "array", "items": {"type": "integer"}})]
Label = Annotated[Any, WithJsonSchema({"type": "string"})]


def create_server() -> MCPServer:
    server = MCPServer("number-probe")

    def received(
        level: Percent,
        ratio: Ratio = None,
        maybe: MaybeCount = None,
        counts: Counts = None,
        label: Label = None,
    ) -> dict[str, Any]:
        """Echo each argument with the name of its Python type."""
        values = {"level": level, "ratio": ratio, "maybe": maybe, "counts": counts, "label": label}
        return {
            name: {
                "value": value,
                "type": type(value).__name__,
                "items": [type(item).__name__ for item in value] if isinstance(value, list) else None,
            }
            for name, value in values.items()
            if value is not None
        }

    server.add_tool(received)
    return server
