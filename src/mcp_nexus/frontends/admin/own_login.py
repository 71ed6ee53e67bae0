"""A user's own login to per-user upstream servers (`auth: {per_user: true}`, docs/OAUTH.md).

GET    /api/auth/me                   the per-user servers and whether the caller has a login to each
POST   /api/auth/{server}/login/me    start the caller's own login -> {"authorization_url": ...}
DELETE /api/auth/{server}/login/me    forget the caller's own login (and close their open session)

The caller is the dashboard's login (its cookie) or an access-token caller: a user
(`user:<sub>`), never the operator (the static token, an open loopback gateway), whose shared
login is /api/auth/{server}/login. A viewer may use these routes too (admin_roles.py exempts
exactly them): they act only on the caller's own credentials, and the login started here is
bound to the caller (per_user.py): its callback stores a token for that user only.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.routing import Route

from mcp_nexus.config.schema import ServerConfig
from mcp_nexus.frontends.admin.json_io import AdminJSONResponse, error_response
from mcp_nexus.frontends.admin.offload import api_caller
from mcp_nexus.gateway import Gateway
from mcp_nexus.upstream.oauth.errors import LoginFailed
from mcp_nexus.upstream.oauth.per_user import is_per_user, is_user, user_logins
from mcp_nexus.upstream.user_sessions import user_sessions


def own_login_routes(gateway: Gateway) -> list[Route]:
    # The OAuth manager is configured (its callback, the upstreams) by oauth_routes, which mounts these.

    def _user(request: Request) -> str | AdminJSONResponse:
        identity = api_caller(request).identity
        if is_user(identity):
            return identity
        return error_response(
            400,
            f"your own login needs a user (a dashboard login or an access token naming a subject); "
            f"this request is {identity!r}. The operator's shared login is POST /api/auth/{{server}}/login",
            caller=identity,
        )

    def _per_user_server(name: str) -> ServerConfig | AdminJSONResponse:
        upstream = gateway.upstreams.get(name)
        if upstream is None:
            return error_response(404, f"no server named {name!r}", known=sorted(gateway.upstreams))
        config = upstream.config
        if not is_per_user(config):
            return error_response(
                400,
                f"server {name!r} is not per-user (no 'auth: {{per_user: true}}'): it has one shared login",
            )
        assert config.auth is not None
        if config.auth.token_exchange is not None:
            return error_response(
                400,
                f"server {name!r} exchanges each caller's own access token (token_exchange): no login to start",
            )
        return config

    async def mine(request: Request) -> AdminJSONResponse:
        user = _user(request)
        if isinstance(user, AdminJSONResponse):
            return user
        servers: list[dict[str, Any]] = []
        for name in sorted(gateway.upstreams):
            config = gateway.upstreams[name].config
            if not is_per_user(config) or config.auth is None:
                continue
            exchange = config.auth.token_exchange is not None
            logged_in = None if exchange else await user_logins(config).logged_in(config, user)
            servers.append({"server": name, "logged_in": logged_in, "token_exchange": exchange})
        return AdminJSONResponse({"user": user, "servers": servers})

    def _target(request: Request) -> tuple[str, ServerConfig] | AdminJSONResponse:
        """The calling user and the per-user server of the path, or the answer saying which is wrong."""
        user = _user(request)
        if isinstance(user, AdminJSONResponse):
            return user
        config = _per_user_server(request.path_params["server"])
        return config if isinstance(config, AdminJSONResponse) else (user, config)

    async def login(request: Request) -> AdminJSONResponse:
        target = _target(request)
        if isinstance(target, AdminJSONResponse):
            return target
        user, config = target
        try:
            url = await user_logins(config).login(config, user)
        except LoginFailed as exc:
            return error_response(502, str(exc), server=config.name, user=user)
        return AdminJSONResponse({"server": config.name, "user": user, "authorization_url": url})

    async def logout(request: Request) -> AdminJSONResponse:
        target = _target(request)
        if isinstance(target, AdminJSONResponse):
            return target
        user, config = target
        removed = await user_logins(config).logout(config, user)
        # Their open session still holds the token it connected with: it goes too.
        await user_sessions(gateway.upstreams[config.name]).close_user(user)
        return AdminJSONResponse({"server": config.name, "user": user, "removed": removed})

    return [
        Route("/api/auth/me", mine, methods=["GET"]),
        Route("/api/auth/{server}/login/me", login, methods=["POST"]),
        Route("/api/auth/{server}/login/me", logout, methods=["DELETE"]),
    ]
