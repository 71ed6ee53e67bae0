"""OAuth logins to upstream servers over HTTP (docs/OAUTH.md); mounted by the HTTP app.

GET  /api/auth                      every OAuth server's login: state, needed or not and why,
                                    expiry, scope (never a token or a secret)
GET  /api/auth/{server}             one server's
POST /api/auth/{server}/login       start a login -> {"authorization_url": ...} to open in a
                                    browser (null when the stored login still works)
POST /api/auth/{server}/logout      forget the login; the server waits in NEEDS_AUTH
GET|POST|DELETE /api/auth/me, /api/auth/{server}/login/me
                                    a user's own login to a per-user server (own_login.py)
GET  /oauth/callback                where the authorization server sends the browser back: open
                                    to the browser (no admin token), answered only for a `state`
                                    of a login started here
"""

from __future__ import annotations

import html
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from mcp_nexus.frontends.admin.json_io import AdminJSONResponse, error_response
from mcp_nexus.frontends.admin.own_login import own_login_routes
from mcp_nexus.gateway import Gateway
from mcp_nexus.upstream.oauth.errors import LoginFailed
from mcp_nexus.upstream.oauth.manager import CALLBACK_PATH, OAuthManager, manager_for

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")


def callback_base(host: str, port: int) -> str:
    """The gateway as the operator's browser reaches it on this machine (loopback, RFC 8252)."""
    if host not in LOOPBACK_NAMES:
        host = "127.0.0.1"  # a gateway on 0.0.0.0 is reached on loopback from its own machine
    return f"http://{'[::1]' if host == '::1' else host}:{port}"


def oauth_manager(gateway: Gateway, port: int | None = None) -> OAuthManager:
    """The gateway's OAuth manager, told where its callback is and how to restart a server."""
    settings = gateway.config.gateway
    manager = manager_for(gateway.events)
    manager.configure(
        callback_base=callback_base(settings.host, port or settings.port),
        restart=gateway.servers.restart,
        upstreams=gateway.upstreams,
    )
    return manager


def oauth_routes(gateway: Gateway, port: int | None = None) -> list[Route]:
    manager = oauth_manager(gateway, port)

    def _unknown(name: str) -> AdminJSONResponse | None:
        upstream = gateway.upstreams.get(name)
        if upstream is None:
            return error_response(404, f"no server named {name!r}", known=sorted(gateway.upstreams))
        if upstream.config.auth is None:
            return error_response(400, f"server {name!r} does not use OAuth (no 'auth' in its config)")
        return None

    async def status(request: Request) -> AdminJSONResponse:
        return AdminJSONResponse({"servers": await manager.status()})

    async def one(request: Request) -> AdminJSONResponse:
        name = request.path_params["server"]
        return _unknown(name) or AdminJSONResponse(await manager.server_status(name))

    async def login(request: Request) -> AdminJSONResponse:
        name = request.path_params["server"]
        if (refused := _unknown(name)) is not None:
            return refused
        try:
            started: dict[str, Any] = await manager.login(name)
        except LoginFailed as exc:
            return error_response(502, str(exc), server=name)
        return AdminJSONResponse(started)

    async def logout(request: Request) -> AdminJSONResponse:
        name = request.path_params["server"]
        if (refused := _unknown(name)) is not None:
            return refused
        removed = await manager.logout(name)
        return AdminJSONResponse({"server": name, "removed": removed})

    async def callback(request: Request) -> HTMLResponse:
        try:
            server, error = await manager.complete(dict(request.query_params))
        except LookupError as exc:
            return _page(400, "Login not completed", str(exc))
        if error:
            return _page(400, f"Login to {server} failed", error)
        return _page(200, f"Logged in to {server}", "Nexus has the login. You can close this tab.")

    return [
        *own_login_routes(gateway),  # first: /api/auth/me is not a server's /api/auth/{server}
        Route("/api/auth", status, methods=["GET"]),
        Route("/api/auth/{server}", one, methods=["GET"]),
        Route("/api/auth/{server}/login", login, methods=["POST"]),
        Route("/api/auth/{server}/logout", logout, methods=["POST"]),
        Route(CALLBACK_PATH, callback, methods=["GET"]),
    ]


def _page(status: int, title: str, text: str) -> HTMLResponse:
    body = (
        f"<!doctype html><meta charset=utf-8><title>{html.escape(title)}</title>"
        f"<body style='font-family:sans-serif;max-width:40em;margin:3em auto'><h1>{html.escape(title)}</h1><p>{html.escape(text)}</p>"
    )
    return HTMLResponse(body, status_code=status, headers={"Cache-Control": "no-store"})
