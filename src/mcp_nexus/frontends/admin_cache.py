"""Admin endpoints of the result cache; mounted by the HTTP app behind its guard (token, Host, Origin).

POST /api/cache/clear   body {"tool": "<exposed name>"} or {} for everything -> {"cleared": n, ...}
GET  /api/cache         entries, bytes, evictions and per-tool hits/misses
"""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from mcp_nexus.gateway import Gateway


def _bad(message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=400)


def cache_routes(gateway: Gateway) -> list[Route]:
    async def clear(request: Request) -> JSONResponse:
        raw = await request.body()
        try:
            body: Any = json.loads(raw) if raw.strip() else {}
        except ValueError as exc:
            return _bad(f'the body must be JSON like {{"tool": "server.tool"}}: {exc}')
        if not isinstance(body, dict):
            return _bad('the body must be a JSON object like {"tool": "server.tool"}')
        tool = body.get("tool")
        if tool is not None and not isinstance(tool, str):
            return _bad(f"'tool' must be a string naming an exposed tool, got {tool!r}")
        cache = gateway.governance.cache
        cleared = await cache.clear(tool)
        return JSONResponse({"cleared": cleared, "tool": tool, "entries": cache.store.stats().entries})

    async def show(request: Request) -> JSONResponse:
        cache = gateway.governance.cache
        stats = cache.store.stats()
        return JSONResponse(
            {
                "entries": stats.entries,
                "bytes": stats.bytes,
                "evictions": stats.evictions,
                "tools": {
                    name: {"hits": c.hits, "misses": c.misses, "merged": c.merged}
                    for name, c in sorted(cache.counters.items())
                },
            }
        )

    return [Route("/api/cache/clear", clear, methods=["POST"]), Route("/api/cache", show, methods=["GET"])]
