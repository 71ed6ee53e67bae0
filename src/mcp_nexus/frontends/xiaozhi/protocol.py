"""JSON-RPC between a Xiaozhi peer and the gateway: the MCP server side, whatever carries the frames.

The same service answers a Xiaozhi endpoint (one JSON-RPC object per WebSocket frame) and a
device-protocol peer (JSON-RPC inside `type: mcp` envelopes); a `Dialect` holds what differs.
Calls run concurrently, each through the full pipeline as `Caller("xiaozhi", ...)`, under a
timeout shorter than the endpoint's own (~30 s) so the peer always gets an answer.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from mcp.shared.exceptions import MCPError
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from mcp_nexus import __version__
from mcp_nexus.frontends.xiaozhi.results import error_result, flatten
from mcp_nexus.frontends.xiaozhi.tool_view import ToolView, UnknownCursorError
from mcp_nexus.gateway import Gateway
from mcp_nexus.pipeline.call import Caller
from mcp_nexus.pipeline.errors import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    GatewayError,
)

logger = logging.getLogger(__name__)

Send = Callable[[dict[str, Any]], Awaitable[None]]
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


class FrameError(ValueError):
    """A frame that holds no JSON-RPC message."""


def decode_frame(frame: str | bytes) -> list[Any]:
    """The messages in one frame: text or binary, a trailing newline, a batch, or one object per line."""
    text = frame.decode("utf-8", errors="replace") if isinstance(frame, bytes) else frame
    text = text.strip()
    if not text:
        return []
    try:
        decoded = json.loads(text)
    except ValueError:
        try:  # several objects on separate lines in one frame
            return [json.loads(line) for line in text.splitlines() if line.strip()]
        except ValueError as exc:
            raise FrameError(f"not valid JSON: {text[:80]!r}") from exc
    return decoded if isinstance(decoded, list) else [decoded]


def encode(message: dict[str, Any]) -> str:
    return json.dumps(message, ensure_ascii=False, separators=(",", ":"))


def _error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _result(request_id: Any, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


class ToolService:
    """Answers one peer's requests with the gateway's tools; one instance per connection."""

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
        self.send = send
        self.page_bytes = page_bytes
        self.call_timeout = call_timeout
        self.client = client
        self.on_call = on_call
        self.on_established = on_established
        self.initialized = False  # we answered `initialize`: the session counts as established
        self.peer_name: str | None = None
        self.calls_served = 0
        self._calls: dict[Any, asyncio.Task[None]] = {}

    # -- input ---------------------------------------------------------------------------

    async def receive_frame(self, frame: str | bytes) -> None:
        try:
            messages = decode_frame(frame)
        except FrameError as exc:
            logger.warning("%s: ignored a frame that is %s", self.client, exc)
            if self.dialect.answers_parse_errors:
                await self.send(_error(None, PARSE_ERROR, f"Parse error: {exc}"))
            return
        for message in messages:
            await self.receive(message)

    async def receive(self, message: Any) -> None:
        if not isinstance(message, dict):
            logger.warning("%s: ignored a message that is not a JSON object", self.client)
            if self.dialect.answers_parse_errors:
                await self.send(_error(None, INVALID_REQUEST, "Invalid request: expected a JSON object"))
            return
        method = message.get("method")
        if method is None:
            return  # a response: we send no requests, so nothing waits for it
        if not isinstance(method, str):
            await self._reject(
                message.get("id"), INVALID_REQUEST, "Invalid request: 'method' must be a string"
            )
            return
        if "id" not in message:
            self._notification(method, message.get("params"))
            return
        request_id = message["id"]
        if self.dialect.numeric_ids_only and (
            isinstance(request_id, bool) or not isinstance(request_id, int | float)
        ):
            logger.warning(
                "%s: ignored %s with a non-numeric id %r (device rule)", self.client, method, request_id
            )
            return
        params = message.get("params")
        if params is None:
            params = {}
        if not isinstance(params, dict):
            await self._reject(request_id, INVALID_PARAMS, f"Invalid params for {method}: expected an object")
            return
        if method == "tools/call":
            self._start_call(request_id, params)
            return
        await self.send(self._answer(request_id, method, params))

    async def _reject(self, request_id: Any, code: int, message: str) -> None:
        logger.warning("%s: %s", self.client, message)
        await self.send(_error(request_id, code, message))

    def _notification(self, method: str, params: Any) -> None:
        if method == "notifications/initialized":
            self._established()
        elif method == "notifications/cancelled" and isinstance(params, dict):
            task = self._calls.get(params.get("requestId"))
            if task is not None:
                task.cancel()
        # everything else (progress, roots, ...) means nothing here

    def _established(self) -> None:
        if not self.initialized:
            self.initialized = True
            if self.on_established is not None:
                self.on_established()

    def _answer(self, request_id: Any, method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "initialize":
            return _result(request_id, self._initialize(params))
        if method == "ping":
            return _result(request_id, {})
        if method == "tools/list":
            cursor = params.get("cursor")
            if cursor is not None and not isinstance(cursor, str):
                return _error(request_id, INVALID_PARAMS, "Invalid params: 'cursor' must be a string")
            try:
                return _result(request_id, self.view.snapshot().page(cursor, self.page_bytes))
            except UnknownCursorError as exc:
                return _error(request_id, INVALID_PARAMS, str(exc))
        return _error(request_id, METHOD_NOT_FOUND, f"Method not found: {method}")

    def _initialize(self, params: dict[str, Any]) -> dict[str, Any]:
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

    def _start_call(self, request_id: Any, params: dict[str, Any]) -> None:
        task = asyncio.create_task(self._call(request_id, params), name=f"xiaozhi-call-{request_id}")
        self._calls[request_id] = task
        task.add_done_callback(lambda _t: self._calls.pop(request_id, None))

    async def _call(self, request_id: Any, params: dict[str, Any]) -> None:
        name = params.get("name")
        arguments = params.get("arguments")
        if not isinstance(name, str) or not name:
            await self._reject(
                request_id, INVALID_PARAMS, "Invalid params: tools/call needs 'name' (a string)"
            )
            return
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            await self._reject(request_id, INVALID_PARAMS, "Invalid params: 'arguments' must be an object")
            return
        result = await self._run(name, arguments)
        self.calls_served += 1
        if self.on_call is not None:
            self.on_call()
        await self.send(_result(request_id, result))

    async def _run(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        snapshot = self.view.snapshot()
        if name not in snapshot.names.to_original:
            return error_result(f"Unknown tool: {name}")
        original = snapshot.names.original(name)
        caller = Caller("xiaozhi", self.peer_name or self.client)
        try:
            async with asyncio.timeout(self.call_timeout):
                outcome = await self.gateway.call_tool_result(original, arguments, caller=caller)
        except TimeoutError:
            return error_result(f"Tool {name} did not answer within {self.call_timeout:g} s")
        except GatewayError as exc:
            return error_result(exc.message)
        except MCPError as exc:
            return error_result(exc.error.message)
        except Exception as exc:  # a bug costs one call, never the connection
            logger.exception("%s: tools/call %s failed", self.client, original)
            return error_result(f"Internal error: {exc}")
        return flatten(outcome)

    # -- output and lifetime ---------------------------------------------------------------

    async def notify_tools_changed(self) -> None:
        if self.dialect.sends_list_changed and self.initialized:
            await self.send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})

    @property
    def calls_in_flight(self) -> int:
        return len(self._calls)

    async def aclose(self) -> None:
        """Cancel the calls still running: their answers have nowhere to go."""
        tasks = list(self._calls.values())
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
