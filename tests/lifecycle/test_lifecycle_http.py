"""An HTTP upstream that goes away and comes back is reconnected (real servers, real sockets)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

import pytest

from lifecycle.faults import document, text
from mcp_nexus.upstream.state import UpstreamState
from support.gateway import running_gateway
from support.polling import eventually
from support.processes import NODE_BIN, child_env, free_port, require, running, wait_for_port

RECONNECT = {"backoff_min": 0.2, "backoff_max": 0.5, "max_attempts": 0, "reset_after": 5}


@contextmanager
def http_server(kind: str, port: int) -> Iterator[None]:
    if kind == "faulty":
        args = [sys.executable, "-m", "support.faulty_server", "--name", "web", "--http", str(port)]
        env = child_env()
    else:
        args = [require(NODE_BIN / "mcp-server-everything"), "streamableHttp"]
        env = child_env(PORT=str(port))
    with running(args, env=env) as proc:
        wait_for_port(port, proc=proc)
        yield


def probe_call(kind: str) -> tuple[str, dict[str, Any], str]:
    if kind == "faulty":
        return "web.echo", {"text": "hi"}, "web: hi"
    return "web.echo", {"message": "hi"}, "Echo: hi"


@pytest.mark.parametrize("kind", ["faulty", "everything"])
async def test_http_upstream_going_away_and_coming_back_is_reconnected(kind: str) -> None:
    port = free_port()
    server = {
        "url": f"http://127.0.0.1:{port}/mcp",
        "restart": RECONNECT,
        "autoReconnect": True,
        "health": {"interval": 0.3, "timeout": 0.5, "threshold": 2},
    }
    tool, arguments, expected = probe_call(kind)
    with ExitStack() as first_server:
        first_server.enter_context(http_server(kind, port))
        async with running_gateway(document({"web": server})) as gw:
            upstream = gw.upstreams["web"]
            assert upstream.state == UpstreamState.READY, upstream.last_error
            assert text(await gw.call_tool(tool, arguments)) == expected
            first_server.close()  # the server goes away
            lost = (UpstreamState.CRASHED, UpstreamState.ERROR)
            await eventually(lambda: upstream.state in lost, what="the loss noticed")
            await eventually(lambda: tool not in gw.catalog.tools, what="tools removed")
            await asyncio.sleep(0.6)  # a few failed attempts while it is away
            assert upstream.state != UpstreamState.READY and tool not in gw.catalog.tools
            with http_server(kind, port):  # ... and comes back on the same address
                await eventually(lambda: upstream.state == UpstreamState.READY, timeout=15, what="reconnect")
                await eventually(lambda: tool in gw.catalog.tools, what="tools back")
                assert text(await gw.call_tool(tool, arguments)) == expected
            assert any(c.reason.startswith("reconnect attempt") for c in upstream.history)
