"""One JSON-RPC message per WebSocket text frame (the Xiaozhi endpoint's framing), as the MCP SDK's
stream pair: what its dispatcher (client side) and `Server.run` (server side) read and write."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage
from websockets.exceptions import ConnectionClosed

logger = logging.getLogger(__name__)

Streams = tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]


@contextlib.asynccontextmanager
async def message_streams(ws: Any) -> AsyncIterator[Streams]:
    """(read, write) over an open `websockets` connection; the read side ends when the socket closes."""
    read_in, read_out = anyio.create_memory_object_stream[SessionMessage | Exception](32)
    write_in, write_out = anyio.create_memory_object_stream[SessionMessage](32)

    async def from_socket() -> None:
        async with read_in:
            try:
                async for frame in ws:
                    if not isinstance(frame, str):
                        await read_in.send(ValueError("a binary frame: MCP over WebSocket uses text frames"))
                        continue
                    try:
                        message = types.jsonrpc_message_adapter.validate_json(frame, by_name=False)
                    except Exception as exc:  # a malformed frame is reported, the link goes on
                        await read_in.send(exc)
                        continue
                    await read_in.send(SessionMessage(message))
            except ConnectionClosed:
                pass

    async def to_socket() -> None:
        async with write_out:
            async for item in write_out:
                text = item.message.model_dump_json(by_alias=True, exclude_unset=True)
                try:
                    await ws.send(text)
                except ConnectionClosed:
                    return

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(from_socket)
        tasks.start_soon(to_socket)
        try:
            yield read_out, write_in
        finally:
            tasks.cancel_scope.cancel()
