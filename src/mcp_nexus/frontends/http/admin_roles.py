"""Who is using the admin API and the dashboard, and whether their role lets them act.

Roles: `viewer` reads what the dashboard shows (secrets are never shown to anyone); `admin` may
also act. Acting is any POST, PUT, PATCH or DELETE outside `/mcp` (a server restarted, the cache
cleared, a tool tried, an upstream logged in, an index action, a reload): one rule here for
every route, so a route added later is guarded too, and the page's hidden buttons are only
a convenience, not the protection. One narrow exemption: a user's own login to a per-user
upstream (`POST|DELETE /api/auth/{server}/login/me`, `own_login`), which acts on nothing but
that user's own credentials.

Who a request is (HttpGuard has already let it in):
- an access token of the identity provider (gateway.auth; its principal is the scope's user):
  `admin` with the admin scope, else the role its subject, groups or email map to
  (gateway.dashboard_login.roles);
- the static `gateway.token` as a bearer: the operator, `admin`;
- the dashboard's login cookie: the role of that login (session_cookie.py);
- nothing, on a gateway that asks for nothing (loopback, no token): the operator, `admin`.

The identity is put on the ASGI scope (`SCOPE_KEY`) for the audit log (admin_audit.py) and the
dashboard's overview (which hides what the role cannot do).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from starlette.requests import cookie_parser
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_nexus.config.dashboard_login import DashboardLoginSettings
from mcp_nexus.config.identity import ResourceServerSettings
from mcp_nexus.frontends.http.session_cookie import COOKIE_NAME, OPERATOR, LoginSessions, Role
from mcp_nexus.identity.principal import Principal, principal_of

SCOPE_KEY = "nexus.admin"
CHANGING_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# The one exemption from "acting needs admin": a user starting or forgetting their OWN login to a
# per-user upstream (admin/own_login.py). It touches only the caller's own credentials (the route
# refuses a caller that is not a user, and the login is bound to that user), so a viewer may.
OWN_LOGIN_PATH = re.compile(r"/api/auth/[^/]+/login/me")
OWN_LOGIN_METHODS = frozenset({"POST", "DELETE"})


def own_login(method: str, path: str) -> bool:
    """Whether a request is a user's own per-user login or logout (allowed to viewers)."""
    return method in OWN_LOGIN_METHODS and OWN_LOGIN_PATH.fullmatch(path) is not None


@dataclass(frozen=True, slots=True)
class AdminIdentity:
    who: str  # "user:<sub>" (a provider login or access token), else "operator"
    role: Role
    name: str | None = None  # for the page: the login's name or email
    method: str = "open"  # how it was established: open | token | login | oidc | bearer
    # The user as per-user rules see it (the access token's, or a provider login's); None: the operator.
    principal: Principal | None = None


def role_for(
    settings: DashboardLoginSettings | None,
    subject: str | None,
    groups: tuple[str, ...] | list[str],
    email: str | None,
) -> Role | None:
    """The role `gateway.dashboard_login.roles` gives a user; admin wins; None: no role."""
    if settings is None:
        return None
    wanted = {"*"}
    if subject:
        wanted.add(f"user:{subject}")
    wanted.update(f"group:{group}" for group in groups)
    if email:
        wanted.add(f"email:{email.lower()}")

    def named(entries: list[str]) -> bool:
        return any((entry.lower() if entry.startswith("email:") else entry) in wanted for entry in entries)

    if named(settings.roles.admin):
        return "admin"
    if named(settings.roles.viewer):
        return "viewer"
    return None


def verified_email(claims: dict[str, Any]) -> str | None:
    """The `email` claim when the provider says it is verified (else anyone could claim any address)."""
    email = claims.get("email")
    return email if isinstance(email, str) and claims.get("email_verified") is True else None


def principal_role(
    principal: Principal, auth: ResourceServerSettings | None, login: DashboardLoginSettings | None
) -> Role | None:
    """The role of an access token's principal on the admin API."""
    if auth is not None and auth.admin_scope and auth.admin_scope in principal.scopes:
        return "admin"
    return role_for(login, principal.subject, principal.groups, verified_email(principal.claims))


def identity_of(
    scope: Scope,
    logins: LoginSessions,
    auth: ResourceServerSettings | None,
    login: DashboardLoginSettings | None,
) -> AdminIdentity | None:
    """Who a request (already let in by HttpGuard) is; None: an access token with no role here."""
    principal = principal_of(scope.get("user"))
    if principal is not None:
        role = principal_role(principal, auth, login)
        if role is None:
            return None
        return AdminIdentity(principal.key, role, principal.subject, "bearer", principal)
    headers: dict[str, list[str]] = {}
    for key, value in scope.get("headers", []):
        headers.setdefault(key.decode("latin-1").lower(), []).append(value.decode("latin-1"))
    if headers.get("authorization"):
        return AdminIdentity(OPERATOR, "admin", None, "token")
    for header in headers.get("cookie", []):
        value = cookie_parser(header).get(COOKIE_NAME)
        found = logins.get(value) if value else None
        if found is not None and found.provider:
            user = Principal(found.issuer or "", found.who.removeprefix("user:"), None, groups=found.groups)
            return AdminIdentity(found.who, found.role, found.name, "oidc", user)
        if found is not None:
            return AdminIdentity(found.who, found.role, found.name, "login")
    return AdminIdentity(OPERATOR, "admin", None, "open")


class AdminRoles:
    """ASGI middleware inside HttpGuard: puts the identity on the scope; refuses a viewer's action."""

    def __init__(
        self,
        app: ASGIApp,
        logins: LoginSessions,
        settings: Callable[[], tuple[ResourceServerSettings | None, DashboardLoginSettings | None]],
        *,
        mcp_path: str,
        exempt: tuple[str, ...] = (),
    ) -> None:
        self.app = app
        self.logins = logins
        self.settings = settings
        self.mcp_path = mcp_path.rstrip("/")
        self.exempt = frozenset(exempt)  # the login form, logout: anyone may post there

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or path.rstrip("/") == self.mcp_path or path in self.exempt:
            await self.app(scope, receive, send)
            return
        identity = identity_of(scope, self.logins, *self.settings())
        if identity is not None:
            scope[SCOPE_KEY] = identity
        acting = scope["method"] in CHANGING_METHODS and not own_login(scope["method"], path)
        if identity is None or (acting and identity.role != "admin"):
            role = "no role" if identity is None else f"the {identity.role} role"
            who = identity.who if identity is not None else principal_key(scope)
            await _forbidden(
                send,
                f"{scope['method']} {path} needs the {'admin' if identity else 'viewer or admin'} role; "
                f"{who} has {role}",
                None if identity is None else identity.role,
            )
            return
        await self.app(scope, receive, send)


def principal_key(scope: Scope) -> str:
    principal = principal_of(scope.get("user"))
    return principal.key if principal is not None else OPERATOR


async def _forbidden(send: Send, message: str, role: Role | None) -> None:
    body = json.dumps({"error": message, "role": role, "required_role": "admin"}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 403,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
