"""Admin endpoints of tool integrity (docs/INTEGRITY.md); mounted by the HTTP app behind its guard.

GET  /api/integrity           held and flagged tools (with the pinned and current definitions,
                              the changed fields and what the scan found), findings counted by
                              kind, how many pins are kept and where
POST /api/integrity/approve   body {"name": "server.tool"} (or the exposed name), {"server": "s"}
                              (every held tool of one server) or {"all": true}
                              -> {"approved": [...], "pending": n}
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.routing import Route

from mcp_nexus.catalog.tool_integrity import Hold
from mcp_nexus.frontends.admin.json_io import (
    AdminJSONResponse,
    BadBodyError,
    error_response,
    read_json_object,
)
from mcp_nexus.gateway import Gateway

APPROVE_BODY = '{"name": "server.tool"} or {"server": "server"} or {"all": true}'


def integrity_status(gateway: Gateway) -> dict[str, Any]:
    integrity = gateway.catalog.integrity
    holds = integrity.pending()
    return {
        "pending": [hold.as_json() for hold in holds],
        "quarantined": sum(1 for hold in holds if hold.quarantined),
        "flags_total": dict(sorted(integrity.flags_total.items())),
        "pins": len(integrity.store.pins()),
        "path": integrity.store.location,
    }


def _named(gateway: Gateway, name: str) -> tuple[str, str] | None:
    """(server, tool) for "server.tool" or an exposed name among the held tools."""
    for hold in gateway.catalog.integrity.pending():
        if name == hold.exposed:
            return hold.server, hold.tool
    # The longest server name followed by "." wins (server and tool names may both hold dots).
    for server in sorted(gateway.upstreams, key=len, reverse=True):
        if name.startswith(server + "."):
            return server, name[len(server) + 1 :]
    return None


def integrity_routes(gateway: Gateway) -> list[Route]:
    async def show(request: Request) -> AdminJSONResponse:
        return AdminJSONResponse(integrity_status(gateway))

    async def approve(request: Request) -> AdminJSONResponse:
        try:
            body = await read_json_object(request, APPROVE_BODY)
        except BadBodyError as exc:
            return exc.response()
        server: str | None = None
        tool: str | None = None
        if body.get("all") is True:
            pass
        elif isinstance(body.get("name"), str):
            named = _named(gateway, body["name"])
            if named is None:
                return error_response(
                    404, f"no server named in {body['name']!r} (give it as server.tool)", path="$.name"
                )
            server, tool = named
        elif isinstance(body.get("server"), str):
            server = body["server"]
            if server not in gateway.upstreams:
                return error_response(404, f"no server named {server!r}", path="$.server")
        else:
            return error_response(400, f"the body must be {APPROVE_BODY}")
        approved: list[Hold] = gateway.approve_tools(server, tool)
        if tool is not None and not approved:
            return error_response(404, f"tool {tool!r} of server {server!r} is not held", path="$.name")
        return AdminJSONResponse(
            {
                "approved": [{"server": h.server, "tool": h.tool, "exposed": h.exposed} for h in approved],
                "pending": len(gateway.catalog.integrity.pending()),
            }
        )

    return [
        Route("/api/integrity", show, methods=["GET"]),
        Route("/api/integrity/approve", approve, methods=["POST"]),
    ]
