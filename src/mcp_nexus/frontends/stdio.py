"""Serve the gateway over this process's stdin/stdout (for desktop MCP clients).

The SDK server owns the protocol (initialize, lists, resources, prompts, notifications),
but on a handshake-era session tools/call takes a fast lane: this loop reads stdin
itself, decodes each line once, and answers tools/call straight from the pipeline. Why:
the SDK's stdio server hands every line to a worker thread and through several task
hops, which costs more than the whole relay should (see docs/PERFORMANCE.md). Every
governance step still runs: the fast lane calls `Gateway.call_tool` like any frontend.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import sys
from typing import Any, BinaryIO

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import BaseModel, ValidationError

from mcp_nexus.frontends.mcp_server import McpFrontend
from mcp_nexus.gateway import Gateway
from mcp_nexus.pipeline.call import Caller
from mcp_nexus.pipeline.errors import GatewayError

logger = logging.getLogger(__name__)

_LINE_LIMIT = 512 * 1024 * 1024
_OUR_ID_PREFIX = "nxs-"


class _LineWriter:
    """Writes whole JSON-RPC lines to stdout; one `write` per message keeps lines intact."""

    def __init__(self, transport: asyncio.WriteTransport) -> None:
        self._transport = transport

    def send(self, message: dict[str, Any]) -> None:
        self._transport.write(json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode() + b"\n")

    def send_raw(self, line: bytes) -> None:
        self._transport.write(line)

    def send_model(self, message: BaseModel) -> None:
        self._transport.write(message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n")


class StdioPeer:
    """The downstream client as the fast lane sees it: enough of a session to relay to it."""

    can_send_request = True

    def __init__(self, writer: _LineWriter) -> None:
        self._writer = writer
        self._ids = itertools.count(1)
        self.pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.client_name: str | None = None
        self.capabilities: dict[str, Any] = {}

    async def send_request(self, request: BaseModel, result_type: type[BaseModel]) -> Any:
        """A server-to-client request (sampling, elicitation) relayed from an upstream."""
        request_id = f"{_OUR_ID_PREFIX}{next(self._ids)}"
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[request_id] = future
        body = request.model_dump(mode="json", by_alias=True, exclude_none=True)
        try:
            self._writer.send({"jsonrpc": "2.0", "id": request_id, **body})
            response = await future
        finally:
            self.pending.pop(request_id, None)
        if "error" in response:
            error = response["error"]
            raise MCPError(
                error.get("code", types.INTERNAL_ERROR), error.get("message", ""), error.get("data")
            )
        return result_type.model_validate(response.get("result") or {}, by_name=False)

    async def send_log_message(
        self, level: str, data: Any, logger_name: str | None = None, related_request_id: Any = None
    ) -> None:
        params: dict[str, Any] = {"level": level, "data": data}
        if logger_name is not None:
            params["logger"] = logger_name
        self._writer.send({"jsonrpc": "2.0", "method": "notifications/message", "params": params})


class StdioServer:
    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.frontend = McpFrontend(gateway, "stdio")
        self._fast = False  # set once a handshake-era session is initialized
        self._pending_fast = False
        self._calls: dict[Any, asyncio.Task[None]] = {}

    async def serve(self, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=_LINE_LIMIT)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin or sys.stdin.buffer)
        transport, _ = await loop.connect_write_pipe(asyncio.Protocol, stdout or sys.stdout.buffer)
        writer = _LineWriter(transport)
        self.peer = StdioPeer(writer)
        to_sdk, sdk_reads = anyio.create_memory_object_stream[SessionMessage | Exception](64)
        sdk_writes, from_sdk = anyio.create_memory_object_stream[SessionMessage](64)
        server = self.frontend.server
        sdk_task = asyncio.create_task(
            server.run(sdk_reads, sdk_writes, server.create_initialization_options()), name="sdk-stdio-server"
        )
        pump_task = asyncio.create_task(self._pump(from_sdk, writer), name="sdk-stdout-pump")
        try:
            await self._read_loop(reader, to_sdk, writer)
        finally:
            to_sdk.close()
            for task in list(self._calls.values()):
                task.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(sdk_task, 5)
            pump_task.cancel()
            with contextlib.suppress(BaseException):
                await pump_task
            self.frontend.close()
            transport.close()

    @staticmethod
    async def _pump(from_sdk: MemoryObjectReceiveStream[SessionMessage], writer: _LineWriter) -> None:
        async for session_message in from_sdk:
            writer.send_model(session_message.message)

    async def _read_loop(
        self,
        reader: asyncio.StreamReader,
        to_sdk: MemoryObjectSendStream[SessionMessage | Exception],
        writer: _LineWriter,
    ) -> None:
        while True:
            try:
                line = await reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as partial:
                line = partial.partial
                if not line.strip():
                    return
            except asyncio.LimitOverrunError:
                writer.send(_error(None, types.INVALID_REQUEST, f"message larger than {_LINE_LIMIT} bytes"))
                await reader.read(_LINE_LIMIT)
                continue
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                writer.send(_error(None, types.PARSE_ERROR, "Parse error: not valid JSON"))
                continue
            if isinstance(message, dict) and self._take_fast(message, writer):
                continue
            try:
                parsed = types.jsonrpc_message_adapter.validate_python(message, by_name=False)
            except ValidationError as exc:
                request_id = message.get("id") if isinstance(message, dict) else None
                writer.send(
                    _error(request_id, types.INVALID_REQUEST, f"Invalid request: {exc.errors()[0]['msg']}")
                )
                continue
            await to_sdk.send(SessionMessage(parsed))

    def _take_fast(self, message: dict[str, Any], writer: _LineWriter) -> bool:
        """Handle what the fast lane owns; False hands the message to the SDK server."""
        method = message.get("method")
        message_id = message.get("id")
        if method is None:
            # A response: to one of our relayed requests, or to the SDK's.
            if isinstance(message_id, str) and message_id.startswith(_OUR_ID_PREFIX):
                future = self.peer.pending.get(message_id)
                if future is not None and not future.done():
                    future.set_result(message)
                return True
            return False
        if method == "initialize":
            params = message.get("params") or {}
            self._fast = False
            if params.get("protocolVersion") in HANDSHAKE_PROTOCOL_VERSIONS:
                info = params.get("clientInfo") or {}
                self.peer.client_name = info.get("name") if isinstance(info, dict) else None
                caps = params.get("capabilities")
                self.peer.capabilities = caps if isinstance(caps, dict) else {}
                self._pending_fast = True
            return False
        if method == "notifications/initialized":
            self._fast = self._pending_fast
            return False
        if method == "notifications/cancelled":
            request_id = (message.get("params") or {}).get("requestId")
            task = self._calls.get(request_id)
            if task is not None:
                task.cancel()
                return True
            return False
        if method == "tools/call" and self._fast and message_id is not None:
            params = message.get("params")
            if not isinstance(params, dict) or not isinstance(params.get("name"), str):
                writer.send(
                    _error(message_id, types.INVALID_PARAMS, "tools/call needs params.name (a string)")
                )
                return True
            arguments = params.get("arguments")
            if arguments is not None and not isinstance(arguments, dict):
                writer.send(
                    _error(message_id, types.INVALID_PARAMS, "tools/call params.arguments must be an object")
                )
                return True
            task = asyncio.create_task(self._call(message_id, params, writer))
            self._calls[message_id] = task
            task.add_done_callback(lambda _task: self._calls.pop(message_id, None))
            return True
        return False

    async def _call(self, message_id: Any, params: dict[str, Any], writer: _LineWriter) -> None:
        meta = params.get("_meta") or {}
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        progress = None
        if token is not None:

            async def progress(value: float, total: float | None, message: str | None) -> None:
                note: dict[str, Any] = {"progressToken": token, "progress": value}
                if total is not None:
                    note["total"] = total
                if message is not None:
                    note["message"] = message
                writer.send({"jsonrpc": "2.0", "method": "notifications/progress", "params": note})

        caller = Caller("stdio", self.peer.client_name, self.peer, message_id, self.peer.capabilities, False)
        try:
            outcome = await self.gateway.call_tool(
                params["name"],
                params.get("arguments"),
                caller=caller,
                progress=progress,  # type: ignore[arg-type]
            )
        except asyncio.CancelledError:
            return  # the client cancelled: no response, as the protocol says
        except GatewayError as exc:
            writer.send(_error(message_id, exc.code, exc.message, exc.data or None))
            return
        except MCPError as exc:
            writer.send(
                {
                    "jsonrpc": "2.0",
                    "id": message_id,
                    "error": exc.error.model_dump(mode="json", exclude_none=True),
                }
            )
            return
        except Exception as exc:  # a bug must cost one call, never the session
            logger.exception("tools/call %s failed", params.get("name"))
            writer.send(_error(message_id, types.INTERNAL_ERROR, f"Internal error: {exc}"))
            return
        # pydantic-core serialises the result to JSON in one pass; only the envelope is ours.
        writer.send_raw(
            b'{"jsonrpc":"2.0","id":'
            + json.dumps(message_id).encode()
            + b',"result":'
            + outcome.model_dump_json(by_alias=True, exclude_none=True).encode()
            + b"}\n"
        )


def _error(message_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": message_id, "error": error}


async def serve_stdio(gateway: Gateway) -> None:
    await StdioServer(gateway).serve()
