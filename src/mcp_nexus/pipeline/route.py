"""The last step: send the call to the best candidate server, falling back by priority.

A candidate is skipped when it is not ready, its transport fails or it times out; an
answer from the tool itself, even `isError`, is final (it is the tool's own verdict).
"""

from __future__ import annotations

import logging
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

from mcp_nexus.catalog.catalog import Catalog
from mcp_nexus.pipeline.call import ToolCall, ToolOutcome
from mcp_nexus.pipeline.errors import GatewayError, ToolTimeoutError, UnavailableError, UnknownToolError
from mcp_nexus.upstream.upstream import UpstreamUnavailable

logger = logging.getLogger(__name__)

SERVER_META_KEY = "nexus/server"
OUTPUT_SCHEMA_NOTE = "declares_output_schema"


class RouteStep:
    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog

    async def __call__(self, call: ToolCall) -> ToolOutcome:
        entry = self.catalog.tools.get(call.name)
        if entry is None:
            raise UnknownToolError(f"Unknown tool: {call.name}", data={"tool": call.name})
        if entry.tool.output_schema is not None:
            # Steps that replace a result (offload, size limit) must then mark it isError:
            # a preview cannot match the declared schema, and clients validate non-error results.
            call.notes[OUTPUT_SCHEMA_NOTE] = True
        if entry.local is not None:
            call.notes["server"] = "nexus"
            return await entry.local.handler(call.arguments)
        tried: list[str] = []
        last_error: Exception | None = None
        for route in entry.candidates:
            upstream = route.upstream
            tried.append(upstream.name)
            if not upstream.is_ready:
                last_error = UpstreamUnavailable(f"server {upstream.name!r} is {upstream.state}")
                continue
            timeout = call.notes.get("timeouts", {}).get(upstream.name, call.notes.get("timeout"))
            if call.caller.session is not None:
                upstream.active_callers.append(call.caller)
            try:
                result = await upstream.call_tool(
                    route.tool.name,
                    call.arguments,
                    progress=call.progress,
                    timeout=timeout,
                    meta=call.meta,
                    input_responses=call.input_responses,
                    request_state=call.request_state,
                    client_capabilities=call.caller.capabilities,
                    pass_input_required=call.caller.modern,
                )
            except MCPError as exc:
                if exc.error.code == types.CONNECTION_CLOSED:
                    last_error = UpstreamUnavailable(f"server {upstream.name!r} closed the connection")
                    continue
                if exc.error.code == types.REQUEST_TIMEOUT or "timed out" in exc.error.message.lower():
                    seconds = timeout if timeout is not None else upstream.config.timeouts.call
                    last_error = ToolTimeoutError(
                        f"tool {call.name} did not answer within {seconds:g} s on server {upstream.name!r};"
                        " the call was cancelled",
                        data={"server": upstream.name, "tool": call.name, "timeout": seconds},
                    )
                    logger.info("call %s: server %s timed out, trying the next", call.name, upstream.name)
                    continue
                # A JSON-RPC error from the server itself is its answer, passed on as such.
                raise
            except (UpstreamUnavailable, OSError, TimeoutError) as exc:
                last_error = exc
                logger.info("call %s: server %s failed (%s), trying the next", call.name, upstream.name, exc)
                continue
            finally:
                if call.caller.session is not None:
                    _remove_last(upstream.active_callers, call.caller)
            call.notes["server"] = upstream.name
            return _with_server_meta(result, upstream.name)
        if isinstance(last_error, GatewayError):
            last_error.data["servers_tried"] = tried
            raise last_error
        raise UnavailableError(
            f"no server could answer {call.name}: {last_error} (tried {', '.join(tried)})",
            data={"servers_tried": tried, "tool": call.name},
        )


def _remove_last(items: list[Any], value: Any) -> None:
    for index in range(len(items) - 1, -1, -1):
        if items[index] is value:
            del items[index]
            return


def _with_server_meta(result: ToolOutcome, server: str) -> ToolOutcome:
    meta = dict(result.meta or {})
    # The upstream's identity stamp would contradict ours: the SDK stamps Nexus's own serverInfo.
    meta.pop("io.modelcontextprotocol/serverInfo", None)
    meta[SERVER_META_KEY] = server
    result.meta = meta
    return result
