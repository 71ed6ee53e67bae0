"""Admin endpoint of the shared stores; mounted by the HTTP app behind its guard (token, Host, Origin).

GET /api/stores   where cache, limits and events live, whether Redis answers (a `warning` while it
                  does not: each replica is then on its own), and how many results Redis holds
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.routing import Route

from mcp_nexus.frontends.admin.json_io import AdminJSONResponse
from mcp_nexus.gateway import Gateway


def stores_routes(gateway: Gateway) -> list[Route]:
    async def show(request: Request) -> AdminJSONResponse:
        status = await gateway.stores.status()
        status["fanout"] = {"published": gateway.fanout.published, "applied": gateway.fanout.applied}
        return AdminJSONResponse(status)

    return [Route("/api/stores", show, methods=["GET"])]
