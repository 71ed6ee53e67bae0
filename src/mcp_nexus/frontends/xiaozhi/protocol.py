"""JSON-RPC between a Xiaozhi peer and the gateway: the MCP server side, whatever carries the frames.

The same service answers a Xiaozhi endpoint (one JSON-RPC object per WebSocket frame) and a
device-protocol peer (JSON-RPC inside `type: mcp` envelopes); a `Dialect` holds what differs.
Calls run concurrently, each through the full pipeline as `Caller("xiaozhi", ...)`, under a
timeout shorter than the endpoint's own (~30 s) so the peer always gets an answer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from mcp_nexus import __version__
from mcp_nexus.frontends.mcp.first_list import settle_first_list
from mcp_nexus.frontends.tool_call_entry import call_params, call_tool_final, client_caller
from mcp_nexus.frontends.xiaozhi.results import error_result, flatten
from mcp_nexus.frontends.xiaozhi.tool_view import ToolView, UnknownCursorError
from mcp_nexus.gateway import Gateway
from mcp_nexus.jsonrpc import INVALID_PARAMS, METHOD_NOT_FOUND, JsonRpcPeer, PeerOptions, decode_checked
from mcp_nexus.jsonrpc import encode as encode_bytes
from mcp_nexus.jsonrpc.codec import ParseError

logger = logging.getLogger(__name__)

Send = Callable[[bytes], Awaitable[None]]
"""Sends one JSON-RPC message, already encoded as UTF-8 JSON, in whatever carries the frames."""
DEVICE_PROTOCOL_VERSION = "2024-11-05"
SERVER_INFO = {"name": "mcp-nexus", "version": __version__}


@dataclass(frozen=True, slots=True)
class Dialect:
    """What differs between the peers this service answers."""

    name: str
    numeric_ids_only: bool  # devices drop requests whose id is not a number
    fixed_protocol_version: str | None  # devices always answer 2024-11-05
    capabilities: dict[str, Any] = field(default_factory=dict)
    sends_list_changed: bool = False
    answers_parse_errors: bool = True
    tool_errors_as_results: bool = True  # the consumer reads content[0].text, even of an error


ENDPOINT = Dialect(
    "endpoint",
    numeric_ids_only=False,
    fixed_protocol_version=None,
    capabilities={"tools": {"listChanged": True}},
    sends_list_changed=True,
)
DEVICE = Dialect(
    "device",
    numeric_ids_only=True,
    fixed_protocol_version=DEVICE_PROTOCOL_VERSION,
    capabilities={"tools": {}},
    answers_parse_errors=False,
)


def encode(message: dict[str, Any]) -> str:
    """One message as JSON text (lone surrogates escaped, never bare NaN)."""
    return encode_bytes(message).decode("utf-8")


class ToolService:
    """Answers one peer's requests with the gateway's tools; one instance per connection.

    A thin user of the JSON-RPC core: the peer correlates, cancels and turns malformed
    messages into errors (or, for the device dialect, drops them); this class only knows
    the four methods a Xiaozhi peer uses.
    """

    def __init__(
        self,
        gateway: Gateway,
        view: ToolView,
        dialect: Dialect,
        *,
        send: Send,
        page_bytes: int,
        call_timeout: float,
        client: str,
        on_call: Callable[[], None] | None = None,
        on_established: Callable[[], None] | None = None,
    ) -> None:
        self.gateway = gateway
        self.view = view
        self.dialect = dialect
        self.page_bytes = page_bytes
        self.call_timeout = call_timeout
        self.client = client
        self.on_call = on_call
        self.on_established = on_established
        self.initialized = False  # we answered `initialize`: the session counts as established
        self.peer_name: str | None = None
        self.calls_served = 0
        self._listed: set[str] = set()  # list kinds this session asked for (the first one may wait)
        self.peer = JsonRpcPeer(
            send,
            PeerOptions(
                name=client,
                kind="websocket",
                can_send_request=False,
                answer_invalid=dialect.answers_parse_errors,
                numeric_ids_only=dialect.numeric_ids_only,
            ),
        )
        self.peer.serve(self._on_request, self._on_notify)

    # -- input ---------------------------------------------------------------------------

    async def receive_frame(self, frame: str | bytes) -> None:
        """One WebSocket frame: one message, a trailing newline, or (lenient) one message per line or a batch."""
        data = frame.encode("utf-8", "surrogatepass") if isinstance(frame, str) else frame
        data = data.strip()
        if not data:
            return
        try:
            decoded, may_hold_surrogates = decode_checked(data)
        except ParseError:
            lines = [line for line in data.splitlines() if line.strip()]
            if len(lines) < 2:
                await self.peer.feed(data)  # the core answers (or drops) the parse error
                return
            for line in lines:
                await self.peer.feed(line)
            return
        for message in decoded if isinstance(decoded, list) and decoded else [decoded]:
            await self.peer.feed_value(message, may_hold_surrogates=may_hold_surrogates)

    async def receive(self, message: Any) -> None:
        """One already decoded message (the device envelope carries them inside `payload`); its
        params are searched for lone surrogates (device messages are small)."""
        await self.peer.feed_value(message)

    async def _on_notify(self, ctx: Any, method: str, params: Mapping[str, Any] | None) -> None:
        if method == "notifications/initialized":
            self._established()
        # everything else (progress, roots, ...) means nothing here; cancellation is the core's

    def _established(self) -> None:
        if not self.initialized:
            self.initialized = True
            if self.on_established is not None:
                self.on_established()

    async def _on_request(self, ctx: Any, method: str, params: Mapping[str, Any] | None) -> dict[str, Any]:
        params = params or {}
        if method == "tools/call":
            return await self._call(params)
        if method == "initialize":
            return self._initialize(params)
        if method == "ping":
            return {}
        if method == "tools/list":
            cursor = params.get("cursor")
            if cursor is not None and not isinstance(cursor, str):
                raise MCPError(INVALID_PARAMS, "Invalid params: 'cursor' must be a string")
            if cursor is None:
                gateway = self.gateway
                await settle_first_list(
                    gateway, gateway.config.gateway.first_list_wait, "tools", self._listed
                )
            try:
                return self.view.snapshot().page(cursor, self.page_bytes)
            except UnknownCursorError as exc:
                raise MCPError(INVALID_PARAMS, str(exc)) from exc
        raise MCPError(METHOD_NOT_FOUND, f"Method not found: {method}")

    def _initialize(self, params: Mapping[str, Any]) -> dict[str, Any]:
        info = params.get("clientInfo")
        if isinstance(info, dict) and isinstance(info.get("name"), str):
            self.peer_name = info["name"]
        asked = params.get("protocolVersion")
        version = self.dialect.fixed_protocol_version or (
            asked if asked in HANDSHAKE_PROTOCOL_VERSIONS else HANDSHAKE_PROTOCOL_VERSIONS[-1]
        )
        # Established once answered: some endpoints never send notifications/initialized.
        self._established()
        return {
            "protocolVersion": version,
            "capabilities": self.dialect.capabilities,
            "serverInfo": SERVER_INFO,
        }

    # -- tools/call ----------------------------------------------------------------------

    async def _call(self, params: Mapping[str, Any]) -> dict[str, Any]:
        name, arguments = call_params(params)
        result = await self._run(name, arguments or {})
        self.calls_served += 1
        if self.on_call is not None:
            self.on_call()
        return result

    async def _run(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        snapshot = self.view.snapshot()
        if name not in snapshot.names.to_original:
            return error_result(f"Unknown tool: {name}")
        original = snapshot.names.original(name)
        # An endpoint is one agent whatever its client calls itself (cloud endpoints all send the
        # same name): its calls are the endpoint's (its files, private cache, limits). A device peer
        # is named by its own initialize.
        who = self.client if self.dialect is ENDPOINT else (self.peer_name or self.client)
        caller = client_caller("xiaozhi", who, None, sees=self.view.name_for, profile=self.view.profile)
        request = {"name": original, "arguments": arguments}
        try:
            # Shorter than the endpoint's own wait (~30 s), so the peer always hears back.
            async with asyncio.timeout(self.call_timeout):
                outcome = await call_tool_final(self.gateway, request, caller)
        except TimeoutError:
            return error_result(f"Tool {name} did not answer within {self.call_timeout:g} s")
        except MCPError as exc:
            return error_result(f"{exc.error.message} (error {exc.error.code})")
        return flatten(outcome)

    # -- output and lifetime ---------------------------------------------------------------

    async def notify_tools_changed(self) -> None:
        if self.dialect.sends_list_changed and self.initialized:
            await self.peer.notify("notifications/tools/list_changed", None)

    @property
    def calls_in_flight(self) -> int:
        return self.peer.in_flight

    async def aclose(self) -> None:
        """Cancel the calls still running: their answers have nowhere to go."""
        await self.peer.aclose("connection closed")
