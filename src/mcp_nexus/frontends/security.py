"""HTTP guard for everything Nexus serves: bearer token, Host and Origin checks.

Why: a browser page can reach a loopback port (DNS rebinding, cross-site POSTs), and any
host on the network can reach a non-loopback one. So Host and Origin must name us, and off
loopback a token is mandatory (the server refuses to start without one).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
from dataclasses import dataclass, field

from starlette.types import ASGIApp, Receive, Scope, Send

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]", "::1")


def is_loopback(host: str) -> bool:
    if host in ("localhost", "::1", "[::1]"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class TokenRequiredError(ValueError):
    """Raised when asked to listen off loopback without a token."""


def check_bind(host: str, token: str | None) -> None:
    if not is_loopback(host) and not token:
        raise TokenRequiredError(
            f"refusing to listen on {host}: a non-loopback address needs a bearer token "
            "(--token or NEXUS_TOKEN, or gateway.token in the config)"
        )


@dataclass
class GuardSettings:
    token: str | None = field(default=None, repr=False)
    bind_host: str = "127.0.0.1"
    allowed_hosts: list[str] = field(default_factory=list)
    allowed_origins: list[str] = field(default_factory=list)
    open_paths: tuple[str, ...] = ("/healthz",)


def _host_only(value: str) -> str:
    if value.startswith("["):
        return value[: value.find("]") + 1]
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class HttpGuard:
    def __init__(self, app: ASGIApp, settings: GuardSettings) -> None:
        self.app = app
        self.settings = settings
        self._loopback_only = is_loopback(settings.bind_host)

    def _host_ok(self, host: str | None) -> bool:
        if not host:
            return False
        name = _host_only(host)
        if host in self.settings.allowed_hosts or name in self.settings.allowed_hosts:
            return True
        if name in LOOPBACK_NAMES:
            return True
        # Off loopback the token is what protects us; an operator may still pin the names.
        return not self._loopback_only and not self.settings.allowed_hosts

    def _origin_ok(self, origin: str | None) -> bool:
        if not origin:
            return True  # not a browser, or same-origin navigation
        if origin in self.settings.allowed_origins:
            return True
        scheme, _, rest = origin.partition("://")
        return scheme in ("http", "https") and _host_only(rest) in LOOPBACK_NAMES

    def _token_ok(self, authorization: str | None) -> bool:
        token = self.settings.token
        if not token:
            return True
        if not authorization or not authorization.lower().startswith("bearer "):
            return False
        return hmac.compare_digest(authorization[7:].strip().encode(), token.encode())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        if not self._host_ok(headers.get("host")):
            await _deny(scope, send, 421, "invalid Host header")
            return
        if not self._origin_ok(headers.get("origin")):
            await _deny(scope, send, 403, "invalid Origin header")
            return
        if scope.get("path") not in self.settings.open_paths and not self._token_ok(
            headers.get("authorization")
        ):
            await _deny(scope, send, 401, "missing or invalid bearer token", challenge=True)
            return
        await self.app(scope, receive, send)


async def _deny(scope: Scope, send: Send, status: int, message: str, *, challenge: bool = False) -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008, "reason": message})
        return
    body = json.dumps({"error": message}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if challenge:
        headers.append((b"www-authenticate", b'Bearer realm="nexus"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
