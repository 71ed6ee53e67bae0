"""Serve the gateway over this process's stdin/stdout (for desktop MCP clients).

The bytes, ids, cancellation and errors are our JSON-RPC core's (jsonrpc/): one bad line
costs one error answer, never the process. The MCP semantics are the SDK's `ServerRunner`
running on that core (initialize, lists, resources, prompts, both protocol eras, as over
HTTP). The client's first request decides the era, as the SDK's own stdio server does.

tools/call takes a lean path on both eras: straight from the peer to `Gateway.call_tool`
(every governance step still runs), skipping the SDK's per-request context building and
result re-validation (handshake era: below, answered as pre-serialised JSON; 2026-07-28:
frontends/mcp/modern_call.py, for plain calls).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, BinaryIO, TypeVar

import mcp_types as types
from mcp.server.connection import Connection, NotifyOnlyOutbound
from mcp.server.runner import ServerRunner, serve_one
from mcp.shared.dispatcher import CallOptions
from mcp.shared.exceptions import MCPError, NoBackChannelError
from mcp.shared.inbound import InboundLadderRejection, classify_inbound_request
from mcp_types import PROTOCOL_VERSION_META_KEY, UNSUPPORTED_PROTOCOL_VERSION
from pydantic import BaseModel
from pydantic_core import PydanticSerializationError

from mcp_nexus.frontends.mcp.modern_call import ModernToolCall
from mcp_nexus.frontends.mcp.server import McpFrontend
from mcp_nexus.frontends.tool_call_entry import call_tool, client_caller
from mcp_nexus.gateway import Gateway
from mcp_nexus.jsonrpc import JsonRpcPeer, PeerOptions, RawResult
from mcp_nexus.jsonrpc.leading_id import request_id
from mcp_nexus.jsonrpc.lines import LINE_LIMIT, LineSplitter
from mcp_nexus.jsonrpc.stream_ends import open_output, read_lines

logger = logging.getLogger(__name__)

ResultT = TypeVar("ResultT", bound=BaseModel)


class StdioClient:
    """The downstream client as the lean path sees it (a `DownstreamPeer`): relays reach it through the core."""

    def __init__(self, peer: JsonRpcPeer) -> None:
        self._peer = peer

    @property
    def can_send_request(self) -> bool:
        return not self._peer.closed

    async def send_request(self, request: Any, result_type: type[ResultT]) -> ResultT:
        body = request.model_dump(mode="json", by_alias=True, exclude_none=True)
        raw = await self._peer.send_raw_request(body["method"], body.get("params"))
        return result_type.model_validate(raw, by_name=False)

    async def send_log_message(
        self, level: Any, data: Any, logger: str | None = None, related_request_id: Any = None
    ) -> None:
        params: dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        await self._peer.notify("notifications/message", params)


class _NoServerRequests:
    """A 2026-07-28 request's dispatch context: the era forbids server-initiated requests."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    @property
    def transport(self) -> Any:
        return replace(self._inner.transport, can_send_request=False)

    @property
    def can_send_request(self) -> bool:
        return False

    async def send_raw_request(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> dict[str, Any]:
        raise NoBackChannelError(method)


def _has_modern_envelope(params: Mapping[str, Any] | None) -> bool:
    meta = (params or {}).get("_meta")
    return isinstance(meta, Mapping) and PROTOCOL_VERSION_META_KEY in meta


class StdioServer:
    def __init__(self, gateway: Gateway, profile: str | None = None) -> None:
        self.gateway = gateway
        self.frontend = McpFrontend(gateway, "stdio", profile=profile)
        self.modern_call = ModernToolCall(self.frontend)
        self.peer: JsonRpcPeer | None = None
        self._era: str | None = None  # "legacy" or "modern", decided by the first request
        self._runner: ServerRunner[Any] | None = None
        self._connection: Connection | None = None
        self._lifespan: Any = None
        self._client: StdioClient | None = None
        # (client params, client name, capabilities as JSON): made once per initialize, not per call.
        self._known_client: tuple[Any, str | None, dict[str, Any]] | None = None

    async def serve(self, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
        # Pipes, sockets and terminals are watched by the loop; files and /dev/null are not (stream_ends).
        output = await open_output(stdout or sys.stdout.buffer)
        self.peer = peer = JsonRpcPeer(output.write, PeerOptions(name="stdio frontend"))
        self._client = StdioClient(peer)
        peer.serve(self._on_request, self._on_notify)

        server = self.frontend.server
        try:
            async with server.lifespan(server) as lifespan_state:
                self._lifespan = lifespan_state
                # Read only once the lifespan is there: the first request builds the runner on it.
                lines = LineSplitter(peer.receive, lambda prefix: self._overrun(peer, prefix))
                reading = await read_lines(stdin or sys.stdin.buffer, lines)
                try:
                    await lines.ended
                finally:
                    reading.close()
                # stdin ended: what was read is still answered (`echo request | nexus serve --stdio`).
                await peer.finish(self.gateway.config.gateway.shutdown_grace, "stdin closed")
        finally:
            await peer.aclose("stdin closed")
            self.frontend.close()
            await output.aclose()

    @staticmethod
    def _overrun(peer: JsonRpcPeer, prefix: bytes) -> None:
        # Answered with the request's own id where it leads the line: the client stops waiting.
        error = {"code": -32600, "message": f"message larger than {LINE_LIMIT} bytes"}
        peer.send_error_soon(request_id(prefix), error)

    # -- era and dispatch --------------------------------------------------------------------

    def _decide_era(self, method: str, params: Mapping[str, Any] | None) -> str:
        if self._era is None:
            self._era = "modern" if method != "initialize" and _has_modern_envelope(params) else "legacy"
            self.gateway.client_era.tell(modern=self._era == "modern")
            if self._era == "legacy":
                assert self.peer is not None
                self._connection = Connection.for_loop(self.peer)
                self._runner = ServerRunner(
                    self.frontend.server,
                    self._connection,
                    self._lifespan,
                    init_options=self.frontend.server.create_initialization_options(),
                )
        return self._era

    async def _on_request(self, dctx: Any, method: str, params: Mapping[str, Any] | None) -> Any:
        if self._decide_era(method, params) == "modern":
            return await self._modern(dctx, method, params)
        if method != "initialize" and _has_modern_envelope(params):
            raise MCPError(
                types.INVALID_REQUEST,
                "this connection serves the handshake protocol era; "
                "requests carrying the 2026-07-28 envelope are not accepted on it",
            )
        connection = self._connection
        assert connection is not None and self._runner is not None
        if method == "tools/call" and connection.initialized.is_set() and params is not None:
            return await self._call_tool(dctx, params, connection)
        return await self._runner.on_request(dctx, method, params)

    async def _on_notify(self, dctx: Any, method: str, params: Mapping[str, Any] | None) -> None:
        if self._runner is not None:
            await self._runner.on_notify(dctx, method, params)

    async def _modern(self, dctx: Any, method: str, params: Mapping[str, Any] | None) -> Any:
        if method == "initialize":
            raise MCPError(
                UNSUPPORTED_PROTOCOL_VERSION,
                "connection is serving the 2026-07-28 protocol; the initialize handshake is not accepted",
            )
        route = classify_inbound_request({"method": method, "params": params})
        if isinstance(route, InboundLadderRejection):
            raise MCPError(route.code, route.message, route.data)
        if method == "tools/call" and dctx.progress_token is None and self.modern_call.accepts(params):
            assert params is not None
            return await self.modern_call.call(dctx.request_id, params)
        assert self.peer is not None
        connection = Connection.from_envelope(
            route.protocol_version,
            route.client_info,
            route.client_capabilities,
            outbound=NotifyOnlyOutbound(self.peer),
        )
        return await serve_one(
            self.frontend.server,
            _NoServerRequests(dctx),  # type: ignore[arg-type]
            method,
            params,
            connection=connection,
            lifespan_state=self._lifespan,
        )

    # -- the lean tools/call -----------------------------------------------------------------

    async def _call_tool(
        self, dctx: Any, params: Mapping[str, Any], connection: Connection
    ) -> RawResult | dict[str, Any]:
        known = self._known_client
        if known is None or known[0] is not connection.client_params:
            client_params = connection.client_params
            known = self._known_client = (
                client_params,
                client_params.client_info.name if client_params is not None else None,
                connection.client_capabilities.model_dump(mode="json", by_alias=True, exclude_none=True)
                if connection.client_capabilities
                else {},
            )
        caller = client_caller(
            "stdio",
            known[1],
            known[2],
            peer=self._client,
            request_id=dctx.request_id,
            profile=self.frontend.profile,
        )
        progress = None
        if dctx.progress_token is not None:

            async def progress(value: float, total: float | None, message: str | None) -> None:
                await dctx.progress(value, total, message)

        outcome = await call_tool(self.gateway, params, caller, progress=progress)  # type: ignore[arg-type]
        # pydantic-core serialises the result to JSON in one pass; only the envelope is ours.
        try:
            return RawResult(outcome.model_dump_json(by_alias=True, exclude_none=True).encode())
        except PydanticSerializationError:  # a lone surrogate from an upstream: escaped, as on the SDK path
            return outcome.model_dump(mode="json", by_alias=True, exclude_none=True)


async def serve_stdio(gateway: Gateway, profile: str | None = None) -> None:
    """Serve one client on stdin/stdout; `profile` (`--profile`) is the view it gets (docs/IDENTITY.md)."""
    # One client on the other end of the pipes while this runs (for /api/frontends and /metrics).
    gateway.status_providers["stdio"] = lambda: {"sessions": 1}
    try:
        with contextlib.suppress(asyncio.CancelledError):
            await StdioServer(gateway, profile).serve()
    finally:
        gateway.status_providers.pop("stdio", None)
