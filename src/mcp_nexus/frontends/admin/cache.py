"""Admin endpoints of the result cache; mounted by the HTTP app behind its guard (token, Host, Origin).

POST /api/cache/clear   body {"tool": "<exposed name>"} or {} for everything -> {"cleared": n, ...}
GET  /api/cache         entries, bytes, evictions and per-tool hits/misses
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.routing import Route

from mcp_nexus.frontends.admin.json_io import (
    AdminJSONResponse,
    BadBodyError,
    error_response,
    read_json_object,
)
from mcp_nexus.gateway import Gateway


def cache_routes(gateway: Gateway) -> list[Route]:
    async def clear(request: Request) -> AdminJSONResponse:
        try:
            body = await read_json_object(request, '{"tool": "server.tool"}')
        except BadBodyError as exc:
            return exc.response()
        tool = body.get("tool")
        if tool is not None and not isinstance(tool, str):
            return error_response(
                400,
                f"'tool' must be a string naming an exposed tool, got {type(tool).__name__}",
                path="$.tool",
            )
        cache = gateway.governance.cache
        cleared = await cache.clear(tool)
        return AdminJSONResponse({"cleared": cleared, "tool": tool, "entries": cache.store.stats().entries})

    async def show(request: Request) -> AdminJSONResponse:
        cache = gateway.governance.cache
        stats = cache.store.stats()
        shared = await gateway.stores.cache_entries()  # in Redis: what every replica shares
        return AdminJSONResponse(
            {
                "entries": stats.entries if shared is None else shared,
                "bytes": stats.bytes,
                "evictions": stats.evictions,
                "tools": {
                    name: {"hits": c.hits, "misses": c.misses, "merged": c.merged}
                    for name, c in sorted(cache.counters.items())
                },
            }
        )

    return [Route("/api/cache/clear", clear, methods=["POST"]), Route("/api/cache", show, methods=["GET"])]
