"""One test per SDK seam (src/mcp_nexus/_sdk_seams.py): each fails loudly if the SDK reshapes what it relies on."""

from __future__ import annotations

from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CLIENT_CAPABILITIES_META_KEY

from mcp_nexus._sdk_seams import (
    CAPABILITIES_OVERRIDE_KEY,
    caller_wants_progress,
    connection_of,
    forward_client_capabilities,
)


def _server(seen: dict[str, Any]) -> MCPServer:
    server = MCPServer("seams")

    @server.tool()
    async def report(ctx: Context) -> str:
        seen["connection"] = connection_of(ctx.request_context.session)
        seen["progress"] = caller_wants_progress(ctx.request_context)
        seen["capabilities"] = ctx.request_context.session.client_capabilities
        return "ok"

    return server


async def test_seam_1_capabilities_override_replaces_the_stamped_ones() -> None:
    seen: dict[str, Any] = {}
    async with Client(_server(seen), mode="auto") as client:
        session = client.session
        assert session.protocol_version == "2026-07-28"
        forward_client_capabilities(session)
        data: dict[str, Any] = {
            "method": "tools/call",
            "params": {"_meta": {CAPABILITIES_OVERRIDE_KEY: {"x": {}}}},
        }
        session._stamp(data, {})
        assert data["params"]["_meta"][CLIENT_CAPABILITIES_META_KEY] == {"x": {}}
        assert CAPABILITIES_OVERRIDE_KEY not in data["params"]["_meta"]
        # Through a real call: the server sees exactly the caller's (empty) capabilities.
        await session.send_request(
            types.CallToolRequest(
                params=types.CallToolRequestParams(
                    name="report", arguments={}, _meta={CAPABILITIES_OVERRIDE_KEY: {}}
                )  # type: ignore[arg-type]
            ),
            types.CallToolResult,
        )
        assert seen["capabilities"] is not None and seen["capabilities"].sampling is None


async def test_seam_2_connection_of_a_server_session() -> None:
    seen: dict[str, Any] = {}
    async with Client(_server(seen), mode="legacy") as client:
        await client.call_tool("report", {})
    connection = seen["connection"]
    assert hasattr(connection, "outbound") and isinstance(connection.state, dict)


@pytest.mark.parametrize("with_progress", [False, True])
async def test_seam_3_caller_wants_progress(with_progress: bool) -> None:
    seen: dict[str, Any] = {}

    async def progress(value: float, total: float | None, message: str | None) -> None:
        return None

    async with Client(_server(seen), mode="legacy") as client:
        await client.call_tool("report", {}, progress_callback=progress if with_progress else None)
    assert seen["progress"] is with_progress


def test_a_missing_seam_is_reported_not_ignored() -> None:
    from mcp_nexus._sdk_seams import SdkSeamMissing

    class Bare:
        pass

    with pytest.raises(SdkSeamMissing):
        forward_client_capabilities(Bare())  # type: ignore[arg-type]
    with pytest.raises(SdkSeamMissing):
        connection_of(Bare())


async def test_seam_4_http_session_count() -> None:
    from mcp.server import Server

    from mcp_nexus._sdk_seams import http_session_count

    server: Server[object] = Server("seams")
    server.streamable_http_app()
    assert http_session_count(server.session_manager) == 0


async def test_seam_4_touch_http_session_knows_open_and_closed_sessions() -> None:
    from mcp.server import Server

    from mcp_nexus._sdk_seams import touch_http_session

    server: Server[object] = Server("seams")
    server.streamable_http_app()
    assert touch_http_session(server.session_manager, "no-such-session") is False
