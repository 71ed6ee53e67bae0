"""The one way in for tools/call: every frontend decodes its framing and hands the request here.

A frontend (stdio and HTTP on both protocol eras, the SDK's path and the lean ones, the Xiaozhi
link) knows how its client reached it; this module knows what a tools/call is: it checks the
params, says who is calling (`client_caller`), runs the pipeline (`Gateway.call_tool`) and
maps the pipeline's errors to the protocol's (`MCPError`). What a frontend does with the
outcome afterwards (pre-serialise it, stamp the 2026-07-28 envelope, flatten it for a voice
endpoint) is its framing, not the call's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import mcp_types as types
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError

from mcp_nexus import tracing
from mcp_nexus.errors import GatewayError
from mcp_nexus.gateway import Gateway
from mcp_nexus.identity.principal import principal_of
from mcp_nexus.pipeline.call import Caller, DownstreamPeer, InputRound
from mcp_nexus.upstream.session import ToolOutcome


def call_params(params: Mapping[str, Any] | None) -> tuple[str, dict[str, Any] | None]:
    """The tool's name and arguments, or INVALID_PARAMS naming what is wrong."""
    name = (params or {}).get("name")
    arguments = (params or {}).get("arguments")
    if not isinstance(name, str) or not name:
        raise MCPError(types.INVALID_PARAMS, "Invalid params: tools/call needs 'name' (a string)")
    if arguments is not None and not isinstance(arguments, dict):
        raise MCPError(types.INVALID_PARAMS, "Invalid params: 'arguments' must be an object")
    return name, arguments


def client_caller(
    frontend: str,
    client: str | None,
    capabilities: types.ClientCapabilities | dict[str, Any] | None,
    *,
    peer: DownstreamPeer | None = None,
    request_id: Any = None,
    modern: bool = False,
    sees: Callable[[str], str | None] | None = None,
    user: Any = None,
    profile: str | None = None,
) -> Caller:
    """Who is calling, from what an MCP client declared (its name and capabilities) and, over
    HTTP with gateway.auth, the ASGI scope's `user` the token was validated into; `profile` is
    the one the way in names (`/mcp/<profile>`, `--profile`, a Xiaozhi endpoint's)."""
    if isinstance(capabilities, types.ClientCapabilities):
        capabilities = capabilities.model_dump(mode="json", by_alias=True, exclude_none=True)
    principal = principal_of(user)
    return Caller(
        frontend=frontend,
        client=client,
        peer=peer,
        request_id=request_id,
        capabilities=capabilities or {},
        modern=modern,
        sees=sees,
        principal=principal,
        profile=profile,
        access_token=user.access_token.token if principal is not None else None,
    )


def as_mcp_error(exc: GatewayError) -> MCPError:
    """The pipeline's error as the protocol's: code, message and data kept."""
    return MCPError(exc.code, exc.message, exc.data or None)


async def call_tool(
    gateway: Gateway,
    params: Mapping[str, Any] | None,
    caller: Caller,
    *,
    progress: ProgressFnT | None = None,
    round_: InputRound | None = None,
) -> ToolOutcome:
    """Run one tools/call through the pipeline; raises MCPError for whatever the caller did wrong or failed."""
    name, arguments = call_params(params)
    try:
        outcome = await gateway.call_tool(
            name,
            arguments,
            caller=caller,
            progress=progress,
            round_=round_,
            meta=tracing.caller_context((params or {}).get("_meta")),
        )
    except GatewayError as exc:
        raise as_mcp_error(exc) from exc
    return outcome


async def call_tool_final(
    gateway: Gateway, params: Mapping[str, Any] | None, caller: Caller
) -> types.CallToolResult:
    """`call_tool` for a caller that cannot answer input requests (a bridge, a voice endpoint):
    an input-required outcome is an error instead."""
    outcome = await call_tool(gateway, params, caller)
    if not isinstance(outcome, types.CallToolResult):
        name = (params or {}).get("name")
        raise MCPError(types.INTERNAL_ERROR, f"tool {name} asked for input this caller cannot give")
    return outcome


def encodable(outcome: ToolOutcome) -> ToolOutcome:
    """The result with any lone UTF-16 surrogate in its texts replaced (U+FFFD), so it can be encoded.

    For frontends whose serialiser refuses them (pydantic's JSON, the SDK's); our own JSON-RPC
    codec escapes them instead, so the stdio lean path keeps them as sent. A server may send `"\\ud800"` (valid JSON, not valid Unicode); the SDK's serialiser refuses it
    and the client would get an empty stream. ASCII texts (most) cost one O(1) check.
    """
    for item in getattr(outcome, "content", None) or ():
        text = getattr(item, "text", None)
        if isinstance(text, str) and not text.isascii():
            try:
                text.encode("utf-8")
            except UnicodeEncodeError:
                item.text = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return outcome
