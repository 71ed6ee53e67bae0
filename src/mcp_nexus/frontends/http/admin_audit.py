"""Admin actions over HTTP as events: every request that may change something, outside `/mcp`.

Sits inside HttpGuard (so the token was checked and its principal is on the scope), outside
AdminRoles (admin_roles.py: who it is, and a viewer's attempt refused with 403, recorded too) and
in front of the routes: a POST, PUT, PATCH or DELETE to the admin API or the dashboard (a login,
a reload, a server stopped, a cache cleared, tools approved) is published as `AdminAction`
once answered, with its status and who asked: the access token's user, the user of a login
through the identity provider (`user:<sub>`), else "operator" (the static token or its login). Reads are not actions. Nothing is published while nobody
subscribes (the audit log off).
"""

from __future__ import annotations

import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from mcp_nexus.audit.admin_action import AdminAction
from mcp_nexus.events import EventBus
from mcp_nexus.frontends.http.admin_roles import SCOPE_KEY
from mcp_nexus.identity.principal import principal_of

CHANGING_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


class AdminActions:
    def __init__(self, app: ASGIApp, bus: EventBus, mcp_path: str) -> None:
        self.app = app
        self.bus = bus
        self.mcp_path = mcp_path.rstrip("/")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] not in CHANGING_METHODS
            or scope["path"].rstrip("/") == self.mcp_path
            or not self.bus.wants(AdminAction)
        ):
            await self.app(scope, receive, send)
            return
        started, status = time.perf_counter(), 500

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            principal = principal_of(scope.get("user"))
            identity = scope.get(SCOPE_KEY)  # set by AdminRoles, further in, on this same scope
            client = scope.get("client")
            who = (
                principal.key
                if principal is not None
                else identity.who
                if identity is not None
                else "operator"
            )
            self.bus.publish(
                AdminAction(
                    method=scope["method"],
                    path=scope["path"],
                    status=status,
                    who=who,
                    client_id=principal.client_id if principal is not None else None,
                    address=client[0] if client else None,
                    seconds=time.perf_counter() - started,
                )
            )
