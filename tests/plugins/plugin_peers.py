"""The test plugin's WebSocket MCP server as a real process, and MCP calls through a served gateway."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from support.processes import child_env


@contextmanager
def websocket_server(name: str = "ws-echo") -> Iterator[str]:
    """`python -m nexus_test_plugin.ws_server` on a free port: yields its ws:// URL."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "nexus_test_plugin.ws_server", "--port", "0", "--name", name],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=child_env(),
        start_new_session=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().decode().strip()
        assert url.startswith("ws://127.0.0.1:"), f"the WebSocket server did not start: {url!r}"
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def mcp_list_and_call(url: str, calls: list[tuple[str, dict[str, Any]]]) -> tuple[set[str], list[Any]]:
    """The tool names a client of `url` (the gateway's /mcp) sees, and the results of `calls` in turn."""
    async with Client(streamable_http_client(url), mode="legacy") as client:
        listed = await client.list_tools()
        results = [await client.call_tool(name, arguments) for name, arguments in calls]
    return {tool.name for tool in listed.tools}, results


def texts(result: Any) -> list[str]:
    return [item.text for item in result.content if getattr(item, "type", None) == "text"]
