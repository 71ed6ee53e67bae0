"""A small tool set behind a real tool channel, for the channel's own tests and attack tests.

`ToolBench` is a `ToolReach` (code_channel.py) whose calls are answered in-process by a few tools
(echo, big, boom, runs_code) and recorded with the caller that made them; `code_mode(sandbox, ...)`
builds the real `CodeMode` over a real sandbox with the bounds a test gives.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types

from mcp_nexus.catalog.index_entry import IndexEntry
from mcp_nexus.config.schema import GatewaySettings
from mcp_nexus.pipeline.call import Caller
from mcp_nexus.pipeline.code_channel import ToolReach
from mcp_nexus.pipeline.code_mode import CodeMode, NestedRunError
from mcp_nexus.sandbox import Sandbox

TOOLS = [
    types.Tool(
        name="t.echo", description="Answer with the arguments, as JSON.", input_schema={"type": "object"}
    ),
    types.Tool(
        name="t.big",
        description="Answer with `bytes` bytes of text.",
        input_schema={"type": "object", "properties": {"bytes": {"type": "integer"}}, "required": ["bytes"]},
    ),
    types.Tool(name="t.boom", description="Raise inside the gateway.", input_schema={"type": "object"}),
    types.Tool(
        name="t.runs_code",
        description="Run code itself (like a chain with a Python body).",
        input_schema={"type": "object"},
    ),
    types.Tool(name="python_sandbox", description="Run Python.", input_schema={"type": "object"}),
]


def _text(text: str, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=error)


class ToolBench:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str | None]] = []  # (name, caller.via) of every call that reached a tool
        self.mode: CodeMode | None = None

    async def call(self, name: str, arguments: dict[str, Any], caller: Caller) -> types.CallToolResult:
        self.calls.append((name, caller.via))
        if name == "t.echo":
            return _text(json.dumps(arguments))
        if name == "t.big":
            return _text("x" * int(arguments["bytes"]))
        if name == "t.boom":
            raise RuntimeError("a bug behind the tool")
        if name == "t.runs_code":
            assert self.mode is not None
            try:
                await self.mode.run("print('inner')", caller)
            except NestedRunError as exc:
                return _text(str(exc), error=True)
            return _text("ran code inside code")
        return _text(f"unknown tool {name}", error=True)

    def search(self, query: str, limit: int) -> list[IndexEntry]:
        return [
            IndexEntry(
                name=tool.name,
                tool_name=tool.name.split(".")[-1],
                description=tool.description or "",
                input_schema=tool.input_schema,
                server_id="t",
            )
            for tool in TOOLS
            if any(word in (tool.description or "").lower() for word in query.lower().split())
        ][:limit]

    def reach(self) -> ToolReach:
        return ToolReach(
            call=self.call,
            tools=lambda: TOOLS,
            search=self.search,
            read_offloaded=None,
            separator=lambda: ".",
        )


def code_mode(sandbox: Sandbox, bench: ToolBench, **bounds: int) -> CodeMode:
    """A CodeMode over `sandbox` whose channel reaches `bench`; `bounds` are sandbox_* settings."""
    settings = GatewaySettings(**{f"sandbox_{key}": value for key, value in bounds.items()})
    mode = CodeMode(sandbox, bench.reach(), lambda: settings)
    bench.mode = mode
    return mode
