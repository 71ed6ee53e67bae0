"""`GET /metrics` (Prometheus text), `GET /api/metrics` (JSON) and `GET /api/calls` (the recent-call ring).

All three sit behind the same guard as the admin API (token, Host, Origin): they name
tools and servers, which is the operator's business.
"""

from __future__ import annotations

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from mcp_nexus.frontends.admin.json_io import AdminJSONResponse, error_response
from mcp_nexus.frontends.metrics.integrity_metrics import IntegrityCollector
from mcp_nexus.frontends.metrics.prometheus_collector import gateway_registry
from mcp_nexus.frontends.metrics.snapshot import MetricsReader
from mcp_nexus.frontends.metrics.step_metrics import StepMetricsCollector
from mcp_nexus.gateway import Gateway


def metrics_routes(gateway: Gateway, reader: MetricsReader | None = None) -> list[Route]:
    reader = reader or MetricsReader(gateway)
    registry = gateway_registry(reader)
    registry.register(IntegrityCollector(lambda: gateway.catalog.integrity))
    registry.register(StepMetricsCollector(lambda: gateway.governance.tool_steps))  # e.g. redactions

    async def prometheus(request: Request) -> Response:
        # On the loop on purpose: the tables are mutated by calls on this loop, and a read of
        # them from another thread could see a dict change size. A scrape costs well under 1 ms
        # for tens of tools (psutil reads a few /proc files per stdio child).
        body = generate_latest(registry)
        return Response(body, media_type=CONTENT_TYPE_LATEST)

    async def as_json(request: Request) -> AdminJSONResponse:
        return AdminJSONResponse(reader.snapshot())

    async def recent_calls(request: Request) -> AdminJSONResponse:
        unknown = sorted(set(request.query_params) - {"limit"})
        if unknown:
            return error_response(
                400, f"unknown query parameter(s) {', '.join(map(repr, unknown))}; expected: limit"
            )
        if len(request.query_params.getlist("limit")) > 1:
            return error_response(400, "'limit' given more than once")
        raw = request.query_params.get("limit", "100")
        if not raw.isdigit() or not 1 <= int(raw) <= 10_000:
            return error_response(400, f"'limit' must be a whole number from 1 to 10000, got {raw!r}")
        return AdminJSONResponse({"calls": gateway.metrics.recent.snapshot(int(raw))})

    return [
        Route("/metrics", prometheus, methods=["GET"]),
        Route("/api/metrics", as_json, methods=["GET"]),
        Route("/api/calls", recent_calls, methods=["GET"]),
    ]
