"""A stand-in for `Upstream` with what the catalog and the route read, for unit tests without a server.

Its config is a real `ServerConfig` (priority, namespace and tool filters, given as config
fields, behave as configured); what it offers, its state and its answers are set by the test. `call_tool` answers from a
script: a result, an exception to raise, or a coroutine function of the call's arguments.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from typing import Any

import mcp_types as types

from mcp_nexus.upstream.state import UpstreamState
from support.gateway import server_config


def tool(
    name: str, *, description: str = "", input_schema: dict[str, Any] | None = None, **fields: Any
) -> types.Tool:
    schema = input_schema if input_schema is not None else {"type": "object"}
    return types.Tool(name=name, description=description or f"the tool {name}", input_schema=schema, **fields)


def answer(text: str, *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=error)


class StubUpstream:
    def __init__(
        self,
        name: str,
        offers: Iterable[types.Tool | str] = (),
        *,
        ready: bool = True,
        connecting: bool = False,
        answers: Iterable[Any] = (),
        **config: Any,
    ) -> None:
        entry = {"transport": "embedded", "module": "support.demo_server:create_server", **config}
        self.config = server_config(name, entry)
        self.tools = [tool(t) if isinstance(t, str) else t for t in offers]
        self.resources: list[types.Resource] = []
        self.resource_templates: list[types.ResourceTemplate] = []
        self.prompts: list[types.Prompt] = []
        self.capabilities = types.ServerCapabilities(tools=types.ToolsCapability())
        self.state = UpstreamState.READY if ready else UpstreamState.STOPPED
        self.connecting = connecting
        self.last_error: str | None = None
        self.next_attempt_at: float | None = None
        self.active_callers: list[Any] = []
        self.answers = list(answers)
        self.calls: list[dict[str, Any]] = []  # what each call_tool was given
        self._ready = asyncio.Event()
        if ready:
            self._ready.set()

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def is_ready(self) -> bool:
        return self.state in (UpstreamState.READY, UpstreamState.DEGRADED)

    def become_ready(self, offers: Iterable[types.Tool | str] = ()) -> None:
        """A server still connecting joins (with the tools it turned out to offer)."""
        self.tools = [tool(t) if isinstance(t, str) else t for t in offers] or self.tools
        self.state = UpstreamState.READY
        self.connecting = False
        self._ready.set()

    async def wait_ready(self, timeout: float) -> bool:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._ready.wait(), timeout)
        return self.is_ready

    async def call_tool(self, name: str, arguments: dict[str, Any] | None, **options: Any) -> Any:
        self.calls.append({"name": name, "arguments": arguments, **options})
        scripted = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(scripted, BaseException):
            raise scripted
        if callable(scripted):
            return await scripted(arguments)
        return scripted.model_copy()

    def __repr__(self) -> str:
        return f"StubUpstream({self.name!r}, {self.state})"
