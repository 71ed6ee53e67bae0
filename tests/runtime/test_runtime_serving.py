"""The runtime as tests run it (support.gateway): HTTP on the port it bound, and what leaving does
to a call still in flight (drained when asked, cut at once otherwise)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import mcp_types as types
import pytest
from mcp import Client

from lifecycle.faults import faulty
from mcp_nexus.errors import UnavailableError
from support.gateway import running
from support.polling import eventually
from support.processes import port_open


def demo_document(**servers: Any) -> dict[str, Any]:
    return {
        "gateway": {"include_builtins": False, "offload_threshold": None},
        "servers": {
            "demo": {"transport": "embedded", "module": "support.demo_server:create_server"},
            **servers,
        },
    }


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_http_serves_mcp_on_the_port_it_bound_and_frees_it_on_the_way_out(mode: str) -> None:
    async with running(demo_document(), http=True) as runtime:
        port = runtime.port
        assert port and runtime.url == f"http://127.0.0.1:{port}/mcp"
        async with Client(runtime.url, mode=mode) as client:
            assert (client.protocol_version == "2026-07-28") == (mode == "auto")
            result = await client.call_tool("demo.echo", {"text": "over http"})
        assert isinstance(result.content[0], types.TextContent)
        assert result.content[0].text == "demo: over http"
    assert not port_open(port)


async def test_without_http_no_port_is_bound() -> None:
    async with running(demo_document()) as runtime:
        assert runtime.port is None and runtime.http_server is None
        assert "demo.echo" in runtime.gateway.catalog.tools


@pytest.mark.parametrize("drain", [False, True])
async def test_a_call_left_in_flight_is_drained_only_when_asked(drain: bool) -> None:
    seconds = 0.6
    async with running(demo_document(f=faulty("f")), drain=drain) as runtime:
        gateway = runtime.gateway
        left = asyncio.ensure_future(gateway.call_tool("f.slow", {"seconds": seconds}))
        await eventually(lambda: gateway.in_flight == 1, what="the call in flight")
        leaving = time.monotonic()
    took = time.monotonic() - leaving
    outcome = (await asyncio.gather(left, return_exceptions=True))[0]
    if drain:
        assert took >= seconds * 0.5, f"left after {took:.2f} s"
        assert (
            isinstance(outcome, types.CallToolResult) and outcome.content[0].text == f"f: slept {seconds:g}"
        )  # type: ignore[union-attr]
    else:
        assert took < seconds * 0.8, f"left after {took:.2f} s"
        assert isinstance(outcome, UnavailableError)  # cut: the server was stopped under it
