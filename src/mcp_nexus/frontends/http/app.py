"""The HTTP side: streamable-HTTP MCP at `/mcp` (both eras), the admin API at `/api`, a health probe,
all behind `HttpGuard`; handshake-era sessions behind `HttpSessionLimiter`.

In order, a request passes: ProfileMount (`/mcp/<profile>` served as `/mcp`), HttpGuard (Host,
Origin, token, body cap and budget), ProfileAccess (the token bound to that profile), the session
limits (http_sessions.py, `/mcp` only), the JSON-RPC check (mcp_http_check.py, POST `/mcp`),
then the routes.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Route

from mcp_nexus._sdk_seams import http_session_count
from mcp_nexus.frontends.admin.api import admin_routes
from mcp_nexus.frontends.admin.audit import audit_routes
from mcp_nexus.frontends.admin.cache import cache_routes
from mcp_nexus.frontends.admin.index import index_routes
from mcp_nexus.frontends.admin.integrity import integrity_routes
from mcp_nexus.frontends.admin.json_io import http_error
from mcp_nexus.frontends.admin.oauth import oauth_routes
from mcp_nexus.frontends.admin.stores import stores_routes
from mcp_nexus.frontends.dashboard import Dashboard
from mcp_nexus.frontends.dashboard.routes import LOGIN_PATH, PAGE_PATHS, STATIC_PREFIX
from mcp_nexus.frontends.http.admin_audit import AdminActions
from mcp_nexus.frontends.http.admin_roles import AdminRoles, principal_role
from mcp_nexus.frontends.http.resource_server import ResourceServer
from mcp_nexus.frontends.http.security import GuardSettings, HttpGuard
from mcp_nexus.frontends.mcp.event_store import BoundedEventStore
from mcp_nexus.frontends.mcp.http_check import McpMessageCheck
from mcp_nexus.frontends.mcp.http_sessions import HttpSessionLimiter, SessionLimits
from mcp_nexus.frontends.mcp.modern_call import ModernToolCall
from mcp_nexus.frontends.mcp.server import McpFrontend
from mcp_nexus.frontends.metrics.routes import metrics_routes
from mcp_nexus.frontends.metrics.snapshot import MetricsReader
from mcp_nexus.gateway import Gateway
from mcp_nexus.profiles.endpoint import ProfileAccess, ProfileMount

SESSION_CAP_SLACK = 64


def build_http_app(
    gateway: Gateway, *, manage_gateway: bool = True, port: int | None = None
) -> tuple[Any, McpFrontend]:
    """Return the guarded ASGI app and its MCP frontend; the app's lifespan starts and stops the gateway.

    `port`: the port the app is served on, where the config's says otherwise (`--port 0`: the one
    the kernel picked); the URLs the gateway hands out for itself (the OAuth callback) name it."""
    settings = gateway.config.gateway
    frontend = McpFrontend(gateway, "http")
    # Host/Origin are checked by HttpGuard for every route; the SDK's own check would only
    # duplicate it for /mcp with a narrower allow-list.
    mcp_app = frontend.server.streamable_http_app(
        streamable_http_path=settings.path,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        host=settings.host,
        # Resumable streams: a client that loses its SSE connection reconnects with
        # Last-Event-ID and gets what it missed; the retry hint tells it how soon.
        event_store=BoundedEventStore(),
        retry_interval=1000,
        # HttpGuard caps every body first; the SDK's own cap must not be the smaller one.
        max_request_body_size=settings.request_max_bytes,
        # Abandoned handshake-era sessions cost memory until they are closed: bound both.
        session_idle_timeout=settings.http_session_idle_timeout,
        # HttpSessionLimiter keeps to http_session_max (closing idle sessions for new ones); the
        # SDK's cap, a little above it, is the backstop while evicted sessions are being closed.
        max_sessions=settings.http_session_max + SESSION_CAP_SLACK,
    )
    session_manager = frontend.server.session_manager
    limits = SessionLimits(
        max_sessions=settings.http_session_max,
        max_per_client=settings.http_session_max_per_client,
        handshake_timeout=settings.http_session_handshake_timeout,
    )

    def http_status() -> dict[str, Any]:
        """The HTTP frontend's sessions, for /api/frontends and `nexus servers` (issue: idle sessions)."""
        return {
            "sessions": http_session_count(session_manager),
            "session_idle_timeout": settings.http_session_idle_timeout,
            "session_max": settings.http_session_max,
            "session_max_per_client": settings.http_session_max_per_client,
            "session_handshake_timeout": settings.http_session_handshake_timeout,
            **limiter.status(),
            "body_bytes_held": guard.body_budget.held if guard.body_budget is not None else 0,
        }

    gateway.status_providers["http"] = http_status
    reader = MetricsReader(gateway)
    dashboard = Dashboard(gateway, reader)
    # gateway.auth (docs/IDENTITY.md): OAuth access tokens for /mcp, its metadata open to all.
    resource_server = None if settings.auth is None else ResourceServer(settings.auth, mcp_path=settings.path)
    if resource_server is not None:
        gateway.status_providers["auth"] = resource_server.status

    async def healthz(request: Request) -> JSONResponse:
        states = {name: str(u.state) for name, u in gateway.upstreams.items()}
        return JSONResponse({"status": "ok", "servers": states, "tools": len(gateway.catalog.tool_list)})

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if manage_gateway:
            await gateway.start()
        try:
            async with session_manager.run(), limiter.running(), dashboard.running():
                yield
        finally:
            gateway.status_providers.pop("http", None)
            if resource_server is not None:
                gateway.status_providers.pop("auth", None)
                await resource_server.aclose()
            frontend.close()
            if manage_gateway:
                await gateway.stop()

    routes: list[BaseRoute] = [
        Route("/healthz", healthz),
        *(resource_server.routes() if resource_server is not None else ()),
        *admin_routes(gateway),
        *audit_routes(gateway),
        *cache_routes(gateway),
        *index_routes(gateway),
        *integrity_routes(gateway),
        *oauth_routes(gateway, port),
        *stores_routes(gateway),
        *metrics_routes(gateway, reader),
        *dashboard.routes(),
        *mcp_app.routes,
    ]
    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers={HTTPException: http_error})
    limiter = HttpSessionLimiter(
        McpMessageCheck(app, settings.path, frontend.lean_call, ModernToolCall(frontend)),
        settings.path,
        session_manager,
        limits,
    )
    guard = HttpGuard(
        # For the audit log (audit/); a token not bound to the profile of `/mcp/<profile>` is refused.
        # Roles (admin_roles.py): who the request is, and a viewer's POST refused, before any route.
        AdminActions(
            AdminRoles(
                ProfileAccess(limiter, gateway.profiles.admits),
                dashboard.logins,
                lambda: (gateway.config.gateway.auth, gateway.config.gateway.dashboard_login),
                mcp_path=settings.path,
                exempt=(LOGIN_PATH, "/logout"),
            ),
            gateway.events,
            settings.path,
        ),
        GuardSettings(
            token=settings.token,
            bind_host=settings.host,
            allowed_hosts=settings.allowed_hosts,
            allowed_origins=settings.allowed_origins,
            max_body_bytes=settings.request_max_bytes,
            body_budget_bytes=settings.request_body_budget_bytes,
            login_sessions=dashboard.logins,
            open_paths=(
                "/healthz",
                LOGIN_PATH,
                "/logout",
                "/oauth/callback",  # the browser back from an upstream's authorization server (admin/oauth.py)
                *(resource_server.metadata_paths if resource_server is not None else ()),
                *(route.path for route in (dashboard.oidc.routes() if dashboard.oidc is not None else ())),
            ),
            open_prefixes=(STATIC_PREFIX,),
            login_path=LOGIN_PATH,
            page_paths=PAGE_PATHS,
            cookie_prefixes=("/api/", "/metrics"),
            resource_server=resource_server,
            mcp_path=settings.path,
            login_required=dashboard.oidc is not None,
            bearer_role=lambda principal: principal_role(
                principal, gateway.config.gateway.auth, gateway.config.gateway.dashboard_login
            ),
        ),
    )
    # `/mcp/<profile>` is served as `/mcp` with the profile kept on the request (profiles/endpoint.py).
    return ProfileMount(guard, settings.path, lambda: gateway.config.profiles), frontend
