"""A chain from real MCP clients: `nexus serve --stdio` as a child process (and its config edited
while it runs), and the HTTP frontend in both protocol eras; the upstream is a real stdio server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from support.gateway import running
from support.governance_gateway import document, stdio
from support.polling import eventually
from support.processes import VENV_BIN, child_env

WHO = {"type": "object", "properties": {"who": {"type": "string"}}, "required": ["who"]}


def greet_chain(greeting: str) -> dict[str, Any]:
    return {
        "description": f"Stamp a name, then answer with a {greeting}.",
        "input_schema": WHO,
        "steps": [{"id": "stamp", "tool": "gov.stamp_args", "arguments": {"a": "{{ input.who }}"}}],
        "result": greeting + ", {{ input.who }} ({{ steps.stamp }})",
    }


def config(tmp_path: Path, chains: dict[str, Any]) -> dict[str, Any]:
    doc = document(tmp_path / "offload", {"gov": stdio("clients")})
    doc["chains"] = chains
    return doc


def text(result: types.CallToolResult) -> str:
    first = result.content[0]
    assert isinstance(first, types.TextContent)
    return first.text


async def test_a_chain_over_stdio_follows_edits_of_the_config_file(tmp_path: Path) -> None:
    path = tmp_path / "nexus.json"
    path.write_text(json.dumps(config(tmp_path, {"greet": greet_chain("Hello")})))
    changed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    params = StdioServerParameters(
        command=str(VENV_BIN / "nexus"),
        args=["serve", "--stdio", "--wait-ready", "-c", str(path)],
        env=child_env(),
    )
    async with asyncio.timeout(60), Client(params, mode="legacy", message_handler=on_message) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert tools["greet"].input_schema == WHO and "gov.stamp_args" in tools
        result = await client.call_tool("greet", {"who": "Ada"})
        assert not result.is_error and text(result) == "Hello, Ada (clients:a=Ada:b=:1)"

        # The operator edits the file: the chain is replaced and another one added, live.
        path.write_text(
            json.dumps(config(tmp_path, {"greet": greet_chain("Good evening"), "hi": greet_chain("Hi")}))
        )
        with anyio.fail_after(20):
            await changed.wait()

        async def both_listed() -> bool:
            return {"greet", "hi"} <= {tool.name for tool in (await client.list_tools()).tools}

        await eventually(both_listed, what="the edited chains listed", interval=0.1)
        result = await client.call_tool("greet", {"who": "Ada"})
        assert text(result).startswith("Good evening, Ada (clients:a=Ada:b=:")


async def test_a_chain_over_http_in_both_eras(tmp_path: Path) -> None:
    async with running(config(tmp_path, {"greet": greet_chain("Hello")}), http=True) as runtime:
        for count, mode in enumerate(("legacy", "auto"), start=1):
            async with Client(runtime.url, mode=mode) as client:
                assert (client.protocol_version == "2026-07-28") == (mode == "auto")
                assert "greet" in {tool.name for tool in (await client.list_tools()).tools}
                result = await client.call_tool("greet", {"who": mode})
                assert not result.is_error and text(result) == f"Hello, {mode} (clients:a={mode}:b=:{count})"
                with pytest.raises(MCPError) as caught:  # the chain's own input schema is enforced
                    await client.call_tool("greet", {})
                assert "'who' is a required property" in caught.value.error.message
