"""The guard and the role middleware together, as the HTTP app stacks them, over a real ASGI round trip.

With `gateway.dashboard_login` and no static token, the dashboard and admin API need a login
while `/mcp` stays as it was; a viewer's login reads but may not change anything; an admin's may.
"""

from __future__ import annotations

import httpx2
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from mcp_nexus.frontends.http.admin_roles import SCOPE_KEY, AdminRoles
from mcp_nexus.frontends.http.security import GuardSettings, HttpGuard
from mcp_nexus.frontends.http.session_cookie import COOKIE_NAME, LoginSessions


async def _who(request: Request) -> JSONResponse:
    identity = request.scope.get(SCOPE_KEY)
    return JSONResponse(
        {"who": identity.who if identity else None, "role": identity.role if identity else None}
    )


def _cookie(value: str) -> dict[str, str]:
    return {"cookie": f"{COOKIE_NAME}={value}"}


def _app(logins: LoginSessions) -> HttpGuard:
    routes = [
        Route("/api/thing", _who, methods=["GET", "POST"]),
        Route("/mcp", _who, methods=["POST"]),
        Route("/", _who, methods=["GET"]),
    ]
    roles = AdminRoles(
        Starlette(routes=routes), logins, lambda: (None, None), mcp_path="/mcp", exempt=("/login",)
    )
    return HttpGuard(
        roles,
        GuardSettings(
            login_sessions=logins,
            login_path="/login",
            page_paths=("/",),
            cookie_prefixes=("/api/",),
            login_required=True,
        ),
    )


async def test_without_a_static_token_a_provider_login_is_needed_and_its_role_counts() -> None:
    logins = LoginSessions()
    viewer = logins.create("user:bob", "viewer", issuer="http://idp", groups=("eng",))
    admin = logins.create("user:alice", "admin", issuer="http://idp")
    transport = httpx2.ASGITransport(app=_app(logins))
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        assert (await client.get("/api/thing")).status_code == 401
        assert (await client.get("/")).headers["location"] == "/login"
        assert (await client.post("/mcp", json={})).json() == {"who": None, "role": None}  # /mcp: as before
        read = await client.get("/api/thing", headers=_cookie(viewer))
        assert read.json() == {"who": "user:bob", "role": "viewer"}
        refused = await client.post("/api/thing", headers=_cookie(viewer))
        assert refused.status_code == 403
        assert refused.json() == {
            "error": "POST /api/thing needs the admin role; user:bob has the viewer role",
            "role": "viewer",
            "required_role": "admin",
        }
        done = await client.post("/api/thing", headers=_cookie(admin))
        assert done.json() == {"who": "user:alice", "role": "admin"}
        logins.revoke(admin)
        assert (await client.post("/api/thing", headers=_cookie(admin))).status_code == 401


def test_a_provider_login_ends_at_its_own_lifetime() -> None:
    now = [0.0]
    logins = LoginSessions(max_age=3600, max_sessions=2, clock=lambda: now[0])
    short = logins.create("user:bob", "viewer", max_age=60)
    token_login = logins.create()
    now[0] = 61
    assert logins.get(short) is None and logins.get(token_login) is not None
    for _ in range(2):
        logins.create("user:carol", "viewer")
    assert logins.get(token_login) is None  # beyond max_sessions the oldest ends
