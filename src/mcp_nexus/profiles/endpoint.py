"""`/mcp/<profile>`: each profile as its own MCP endpoint (both protocol eras) on the HTTP frontend.

Two small ASGI layers around the one `/mcp` app, so everything behind them (the guard, the
session limits, the lean paths, the SDK's transport) serves a profile's endpoint unchanged:

- `ProfileMount`, outermost: `/mcp/<name>` of a configured profile is served as `/mcp` with
  the name kept in the scope (`PROFILE_SCOPE_KEY`); `/mcp/<anything else>` is 404 naming the
  configured profiles. The guard then checks the credential exactly as for `/mcp` (a token
  issued for `/mcp` is accepted at `/mcp/<profile>`).
- `ProfileAccess`, after the guard has validated the token: a token caller not bound to the
  profile is answered 403 (`Profiles.admits`).

The frontends read the name back from the scope onto `Caller.profile`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from mcp_nexus.identity.principal import Principal, principal_of

PROFILE_SCOPE_KEY = "nexus.profile"


def scope_profile(request: Any) -> str | None:
    """The profile named by the path a request came in on (None: plain `/mcp`, or no request)."""
    scope = getattr(request, "scope", None)
    return scope.get(PROFILE_SCOPE_KEY) if isinstance(scope, dict) else None


async def _json(send: Send, status: int, body: dict[str, Any]) -> None:
    payload = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


class ProfileMount:
    def __init__(self, app: ASGIApp, mcp_path: str, profiles: Callable[[], Collection[str]]) -> None:
        self.app = app
        self.prefix = mcp_path.rstrip("/") + "/"
        self.profiles = profiles  # the configured names, read per request: a reload applies at once

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "") if scope["type"] in ("http", "websocket") else ""
        if not path.startswith(self.prefix) or not path[len(self.prefix) :].strip("/"):
            await self.app(scope, receive, send)
            return
        name = path[len(self.prefix) :].strip("/")
        configured = self.profiles()
        if name not in configured:
            if scope["type"] != "http":
                return  # a websocket to an unknown profile: closed unanswered
            known = ", ".join(sorted(configured)) or "none are configured"
            await _json(
                send, 404, {"error": "not_found", "error_description": f"no profile {name!r} ({known})"}
            )
            return
        inner = self.prefix.rstrip("/")
        scope = {**scope, "path": inner, "raw_path": inner.encode(), PROFILE_SCOPE_KEY: name}
        await self.app(scope, receive, send)


class ProfileAccess:
    def __init__(self, app: ASGIApp, admits: Callable[[str, Principal | None], bool]) -> None:
        self.app = app
        self.admits = admits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        profile = scope.get(PROFILE_SCOPE_KEY)
        if (
            profile is not None
            and scope["type"] == "http"
            and not self.admits(profile, principal_of(scope.get("user")))
        ):
            description = f"this token is not bound to profile {profile!r}"
            await _json(send, 403, {"error": "forbidden", "error_description": description})
            return
        await self.app(scope, receive, send)
