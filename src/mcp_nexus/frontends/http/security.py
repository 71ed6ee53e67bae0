"""HTTP guard for everything Nexus serves: Host and Origin checks, bearer token, body cap.

Why: a browser page can reach a loopback port (DNS rebinding, cross-site POSTs), and any
host on the network can reach a non-loopback one. So Host and Origin must name us (parsed
strictly, see http_authority.py), and off loopback a token is mandatory (the server refuses
to start without one, or with one shorter than MIN_TOKEN_CHARS, unless `gateway.auth` makes it
a resource server: then OAuth access tokens are checked, resource_server.py, and the principal
they name is put on the ASGI scope as its `user` for the frontends and the SDK's session binding). Every request body is capped
here once for all routes (body_limit.py), after the token is checked: a method or open route
that takes no body refuses one unread, an open route (the login form) takes a small one, and
all bodies held at once share one budget. The threat model is in docs/SECURITY.md.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import cookie_parser
from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_nexus.frontends.http.authority import (
    Authority,
    MalformedAuthorityError,
    parse_authority,
    parse_origin,
)
from mcp_nexus.frontends.http.body_limit import (
    DEFAULT_MAX_BODY_BYTES,
    BadContentLengthError,
    BodyBudget,
    BodyBudgetSpentError,
    BodyTooLargeError,
    Reservation,
    declared_length,
    read_capped,
)
from mcp_nexus.frontends.http.resource_server import ResourceServer
from mcp_nexus.frontends.http.session_cookie import COOKIE_NAME, LoginSessions
from mcp_nexus.identity.principal import Principal, PrincipalUser
from mcp_nexus.identity.token_errors import InsufficientScope, TokenRejected

logger = logging.getLogger(__name__)

MIN_TOKEN_CHARS = 16
"""Shortest gateway.token accepted off loopback (on loopback a shorter one is only warned about)."""

BODYLESS_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "DELETE"})
"""No route of the gateway reads a body with these methods: one sent anyway is refused unread."""

OPEN_BODY_MAX_BYTES = 16 * 1024
"""Largest body an open route (no token needed: the login form) takes."""

CHALLENGE = 'Bearer realm="nexus"'

_GUARDED_HEADERS = {
    name.encode("latin-1"): name
    for name in ("host", "origin", "authorization", "cookie", "content-length", "transfer-encoding")
}
"""The headers the guard reads, by their raw lowercase name."""

HOST_VERDICTS_KEPT = 256
"""Distinct Host values whose verdict is remembered; beyond that the memory starts afresh."""
"""What a request without the static token is told (gateway.auth's challenge says more)."""


def is_loopback(host: str) -> bool:
    """Whether a bind address (`--host`) is loopback-only: `localhost`, 127.0.0.0/8 or ::1."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class TokenRequiredError(ValueError):
    """Raised when asked to listen off loopback without a token."""


def check_bind(host: str, token: str | None, *, resource_server: bool = False) -> None:
    """Refuse a non-loopback bind without a token (or OAuth, `gateway.auth`) or with a short one;
    warn about a short one on loopback."""
    if not is_loopback(host) and not token and not resource_server:
        raise TokenRequiredError(
            f"refusing to listen on {host}: a non-loopback address needs a bearer token "
            "(--token or NEXUS_TOKEN, or gateway.token in the config)"
        )
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        problem = (
            f"gateway.token (--token, NEXUS_TOKEN) is {len(token)} characters long; "
            f"at least {MIN_TOKEN_CHARS} are required off loopback (e.g. `python -c "
            '"import secrets; print(secrets.token_urlsafe(24))"`)'
        )
        if not is_loopback(host):
            raise TokenRequiredError(f"refusing to listen on {host}: {problem}")
        logger.warning("weak token: %s", problem)


@dataclass
class GuardSettings:
    token: str | None = field(default=None, repr=False)
    bind_host: str = "127.0.0.1"
    allowed_hosts: list[str] = field(default_factory=list)
    allowed_origins: list[str] = field(default_factory=list)
    open_paths: tuple[str, ...] = ("/healthz",)
    open_prefixes: tuple[str, ...] = ()  # e.g. the dashboard's static files (no data in them)
    # Pages a browser opens: without a valid token they redirect to the login page instead of 401.
    login_path: str | None = None
    page_paths: tuple[str, ...] = ()
    # Where the login cookie counts (the pages and their APIs); never `/mcp`: MCP clients use the token.
    cookie_prefixes: tuple[str, ...] = ()
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    # Bytes of bodies held at once by all requests together (None: no shared budget).
    body_budget_bytes: int | None = None
    # The dashboard's logins (session_cookie.py): a cookie counts while its login is not revoked.
    login_sessions: LoginSessions | None = field(default=None, repr=False)
    # OAuth access tokens (gateway.auth): accepted on `mcp_path` with the required scopes, on the
    # other guarded routes only with the admin scope. With it, no route is open for want of a token.
    resource_server: ResourceServer | None = field(default=None, repr=False)
    mcp_path: str = "/mcp"
    # The dashboard logs in through an identity provider (gateway.dashboard_login): then every
    # guarded route but `mcp_path` needs a login or a token even without gateway.token.
    login_required: bool = False
    # The role an access token without the admin scope has on the admin API (admin_roles.py);
    # None: such a token is refused there (403 insufficient_scope).
    bearer_role: Callable[[Principal], str | None] | None = field(default=None, repr=False)


class _Denied(Exception):
    def __init__(self, status: int, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status, self.message, self.extra = status, message, extra


def _allowed_entry(entry: str, parse: Callable[[str], Any]) -> tuple[str, Any]:
    """An allow-list entry as (exact text, parsed form or None); `:*` means any port."""
    text = entry.strip()
    wildcard = text.endswith(":*")
    try:
        parsed = parse(text[:-2] if wildcard else text)
    except MalformedAuthorityError:
        parsed = None  # still honoured as an exact (case-insensitive) match
    return text.lower(), (parsed, wildcard)


def _same_host(allowed: Authority, wildcard: bool, seen: Authority) -> bool:
    # An entry without a port (or with `:*`) allows every port of that host.
    return allowed.host == seen.host and (wildcard or allowed.port is None or allowed.port == seen.port)


class HttpGuard:
    """ASGI middleware in front of every route: Host, Origin, bearer token, then the body cap."""

    def __init__(self, app: ASGIApp, settings: GuardSettings) -> None:
        self.app = app
        self.settings = settings
        self._loopback_only = is_loopback(settings.bind_host)
        self._hosts = [_allowed_entry(h, parse_authority) for h in settings.allowed_hosts]
        self._origins = [_allowed_entry(o, parse_origin) for o in settings.allowed_origins]
        self._host_verdicts: dict[str, tuple[int, str] | None] = {}
        budget = settings.body_budget_bytes
        self.body_budget = None if budget is None else BodyBudget(max(budget, settings.max_body_bytes))

    def _check_host(self, values: list[str]) -> None:
        if len(values) != 1:
            raise _Denied(400, f"invalid Host header: exactly one is required, got {len(values)}")
        # A client sends the same Host on every request: its verdict is kept, not parsed anew
        # (parsing a dotted quad through ipaddress was a tenth of a 2026-07-28 call's own time).
        value = values[0]
        if value in self._host_verdicts:
            verdict = self._host_verdicts[value]
        else:
            if len(self._host_verdicts) >= HOST_VERDICTS_KEPT:
                self._host_verdicts.clear()  # bounded: a client inventing names cannot grow it
            verdict = self._host_verdicts[value] = self._judge_host(value)
        if verdict is not None:
            raise _Denied(*verdict)

    def _judge_host(self, value: str) -> tuple[int, str] | None:
        """None when the Host `value` names this gateway; else (status, message) of the refusal."""
        try:
            host = parse_authority(value)
        except MalformedAuthorityError as exc:
            return 400, f"invalid Host header: {exc}"
        if host.is_loopback or any(
            text == value.lower() or (parsed is not None and _same_host(parsed, wildcard, host))
            for text, (parsed, wildcard) in self._hosts
        ):
            return None
        # Off loopback the token is what protects us; an operator may still pin the names.
        if self._loopback_only or self._hosts:
            return 421, "invalid Host header: not a name of this gateway (see gateway.allowed_hosts)"
        return None

    def _check_origin(self, values: list[str]) -> None:
        if not values:
            return  # not a browser, or a same-origin navigation
        if len(values) > 1:
            raise _Denied(403, f"invalid Origin header: at most one is allowed, got {len(values)}")
        try:
            origin = parse_origin(values[0])
        except MalformedAuthorityError as exc:
            if any(text == values[0].lower() for text, _ in self._origins):
                return  # an operator may allow a value we cannot parse (e.g. "null") on purpose
            raise _Denied(403, f"invalid Origin header: {exc}") from None
        for text, (parsed, wildcard) in self._origins:
            if text == values[0].lower() or (
                parsed is not None
                and parsed.scheme == origin.scheme
                and _same_host(parsed.authority, wildcard, origin.authority)
            ):
                return
        if origin.scheme in ("http", "https") and origin.authority.is_loopback:
            return
        raise _Denied(403, "invalid Origin header: not a loopback origin (see gateway.allowed_origins)")

    async def _check_token(self, scope: Scope, path: str, values: list[str], cookies: list[str]) -> None:
        token = self.settings.token
        server = self.settings.resource_server
        if (
            (
                not token
                and server is None
                and (
                    not self.settings.login_required or path.rstrip("/") == self.settings.mcp_path.rstrip("/")
                )
            )
            or path in self.settings.open_paths
            or path.startswith(self.settings.open_prefixes)
        ):
            return
        given = values[0] if len(values) == 1 else ""
        bearer = given[7:].strip() if given[:7].lower() == "bearer " else ""
        if token and bearer and hmac.compare_digest(bearer.encode(), token.encode()):
            return
        admin = path.rstrip("/") != self.settings.mcp_path.rstrip("/")
        if server is not None and bearer:
            try:
                scope["user"] = await self._authenticate(server, bearer, admin)
            except TokenRejected as rejected:
                raise _Denied(
                    rejected.status,
                    rejected.error,
                    error_description=rejected.description,
                    challenge=server.challenge(rejected, admin=admin) if rejected.status != 503 else None,
                    retry_after=1 if rejected.status == 503 else None,
                ) from None
            return
        # The dashboard's login cookie (session_cookie.py): only when no Authorization header was sent.
        if (
            not values
            and self.settings.login_path is not None
            and (path in self.settings.page_paths or path.startswith(self.settings.cookie_prefixes))
        ):
            logins = self.settings.login_sessions
            for header in cookies:
                session = cookie_parser(header).get(COOKIE_NAME)
                if session and logins is not None and logins.valid(session):
                    return
        if path in self.settings.page_paths and self.settings.login_path is not None:
            raise _Denied(303, "log in first", location=self.settings.login_path)
        if server is not None and not (admin and token):
            raise _Denied(
                401,
                "unauthorized",
                error_description="this endpoint needs a bearer token (see resource_metadata)",
                challenge=server.challenge(admin=admin),
            )
        raise _Denied(401, "missing or invalid bearer token", challenge=CHALLENGE)

    async def _authenticate(self, server: ResourceServer, bearer: str, admin: bool) -> PrincipalUser:
        """The token's user; on the admin API a token without the admin scope may still have a role."""
        try:
            return await server.authenticate(bearer, admin=admin)
        except InsufficientScope:
            role_of = self.settings.bearer_role
            if not admin or role_of is None:
                raise
            principal = await server.verifier.verify(bearer)  # remembered: not validated twice
            if role_of(principal) is None:
                raise
            return PrincipalUser(principal, bearer)

    def _body_limit(self, scope: Scope) -> int:
        """The largest body this request may send: none for a bodyless method, a little for an open route."""
        path = scope.get("path", "")
        if scope.get("method", "GET") in BODYLESS_METHODS:
            return 0
        if path in self.settings.open_paths or path.startswith(self.settings.open_prefixes):
            return min(OPEN_BODY_MAX_BYTES, self.settings.max_body_bytes)
        return self.settings.max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers: dict[str, list[str]] = {}
        for key, value in scope.get("headers", []):
            name = _GUARDED_HEADERS.get(key.lower())
            if name is not None:  # only what the checks read is decoded (a request has ~15 more)
                headers.setdefault(name, []).append(value.decode("latin-1"))
        reservation = Reservation(self.body_budget)
        limit = self.settings.max_body_bytes
        try:
            self._check_host(headers.get("host", []))
            self._check_origin(headers.get("origin", []))
            await self._check_token(
                scope, scope.get("path", ""), headers.get("authorization", []), headers.get("cookie", [])
            )
            if scope["type"] == "http":
                limit = self._body_limit(scope)
                declared = declared_length(headers.get("content-length", []))
                if limit == 0 and (declared or "transfer-encoding" in headers):
                    raise _Denied(
                        413,
                        f"{scope.get('method')} {scope.get('path')} takes no request body",
                        close=True,
                        limit=0,
                    )
                receive = await read_capped(receive, limit, declared, reservation)
        except _Denied as denied:
            await _deny(scope, send, denied.status, denied.message, **denied.extra)
            return
        except BadContentLengthError as exc:
            await _deny(scope, send, 400, str(exc), close=True)
            return
        except BodyTooLargeError as exc:
            await _deny(scope, send, 413, str(exc), close=True, limit=limit)
            return
        except BodyBudgetSpentError as exc:
            await _deny(scope, send, 503, str(exc), close=True, retry_after=1)
            return
        try:
            await self.app(scope, receive, send)
        finally:
            reservation.release()


async def _deny(
    scope: Scope,
    send: Send,
    status: int,
    message: str,
    *,
    challenge: str | None = None,
    close: bool = False,
    location: str | None = None,
    retry_after: int | None = None,
    **extra: Any,
) -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008, "reason": message})
        return
    body = json.dumps({"error": message, **extra}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if location is not None:
        headers.append((b"location", location.encode()))
    if challenge:
        headers.append((b"www-authenticate", challenge.encode()))
    if retry_after is not None:
        headers.append((b"retry-after", str(retry_after).encode()))
    if close:
        # The rest of an unread body would otherwise be received (and thrown away) on this connection.
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
