"""An MCP server on a WebSocket: `python -m nexus_test_plugin.ws_server [--port N]`.

The SDK's server session runs over the socket's frames (one JSON-RPC message per text frame);
each connection gets a session of its own. Prints `ws://127.0.0.1:<port>/mcp` when listening.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

from websockets.asyncio.server import serve

from nexus_test_plugin.echo_server import create_server
from nexus_test_plugin.ws_streams import message_streams


async def _session(ws: Any, name: str) -> None:
    server = create_server(name)
    lowlevel = server._lowlevel_server
    async with message_streams(ws) as (read, write):
        await lowlevel.run(read, write, lowlevel.create_initialization_options())


async def main(port: int, name: str) -> None:
    async with serve(lambda ws: _session(ws, name), "127.0.0.1", port, subprotocols=["mcp"]) as server:  # type: ignore[list-item]
        bound = next(iter(server.sockets)).getsockname()[1]
        print(f"ws://127.0.0.1:{bound}/mcp", flush=True)
        await asyncio.Future()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--name", default="ws-echo")
    args = parser.parse_args()
    asyncio.run(main(args.port, args.name))
