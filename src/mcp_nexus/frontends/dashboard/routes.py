"""The dashboard's routes: the page, login/logout, its static files, live events and a few JSON views.

    GET  /                   the single-page dashboard (redirects to /login when a token is needed)
    GET  /login, POST /login the login form; a right token sets a fresh session cookie (session_cookie.py);
                             failed attempts are throttled per address (429 with Retry-After)
    POST /logout             revokes that login and drops the cookie
    GET  /dashboard/oidc/... the login through the identity provider (gateway.dashboard_login,
                             frontends/http/oidc_login.py): the login page offers it beside the token
    GET  /ui/static/...      the page's CSS, JS and icon (shipped in the package; no data, no CDN)
    GET  /api/events         server-sent events: servers (on every state change), call (each call), resync
    GET  /api/dashboard      what the page needs at load: servers, frontends, tools with policies, history,
                             and who is looking with which role (the page hides what a viewer cannot do)
(the Tasks page reads `GET /api/tasks` of admin/tasks.py, the control plane's tasks, only when
/api/dashboard says the control plane is on; the call log opens offloaded results through
`GET /api/offload/{file}` of admin/offload.py, to their owner only)

Everything but /login and the static files sits behind the admin API's guard (token, Host,
Origin). Server actions, reload and "try it" use the admin API itself (`/api/servers/...`,
`/api/reload`, `/api/tools/{name}/call`), so the dashboard can do nothing the API cannot.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import html
import json
from collections.abc import AsyncIterator
from importlib import resources
from typing import Any

from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from mcp_nexus.events import ServerStateChanged
from mcp_nexus.frontends.admin.api import frontend_status, server_status
from mcp_nexus.frontends.admin.json_io import AdminJSONResponse
from mcp_nexus.frontends.admin.offload import api_caller
from mcp_nexus.frontends.dashboard.events import EventHub
from mcp_nexus.frontends.dashboard.history import MetricsHistory
from mcp_nexus.frontends.http.admin_roles import SCOPE_KEY, AdminIdentity
from mcp_nexus.frontends.http.oidc_login import LOGIN_PATH as OIDC_LOGIN_PATH
from mcp_nexus.frontends.http.oidc_login import OidcLogin
from mcp_nexus.frontends.http.session_cookie import (
    COOKIE_NAME,
    LoginSessions,
    LoginThrottle,
    clearing_cookie_header,
    cookie_header,
)
from mcp_nexus.frontends.metrics.snapshot import MetricsReader
from mcp_nexus.gateway import Gateway
from mcp_nexus.pipeline.policy import is_read_only
from mcp_nexus.pipeline.recent_calls import CallRecord, record_dict

STATIC_PREFIX = "/ui/static/"
LOGIN_PATH = "/login"
DRAIN_CHECK_S = 0.25  # how often an idle event stream looks whether the gateway is shutting down
PAGE_PATHS = ("/",)
_STATIC = resources.files("mcp_nexus.frontends.dashboard") / "static"
# The page may only run its own script and talk to its own origin (no inline script, no CDN).
_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
)
_HEADERS = {
    "content-security-policy": _CSP,
    "x-content-type-options": "nosniff",
    # "same-origin", not "no-referrer": with no-referrer the browser sends `Origin: null` on the
    # login form's POST, which the guard (rightly) refuses.
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
}


def _page(name: str) -> str:
    return (_STATIC / name).read_text(encoding="utf-8")


class Dashboard:
    """The dashboard of one gateway: its event hub, metrics history and routes."""

    def __init__(self, gateway: Gateway, reader: MetricsReader) -> None:
        self.gateway = gateway
        self.reader = reader
        self.hub = EventHub()
        self.history = MetricsHistory(gateway.metrics)
        self._unsubscribe: list[Any] = []
        provider = gateway.config.gateway.dashboard_login
        self.logins = (
            LoginSessions() if provider is None else LoginSessions(max_sessions=provider.max_sessions)
        )
        self.login_throttle = LoginThrottle(gateway.config.gateway.login_failures_per_minute)
        # gateway.dashboard_login: the login through the identity provider (read at start).
        self.oidc = None if provider is None else OidcLogin(provider, self.logins, self._login_page)

    # -- lifetime (the HTTP app's lifespan) -----------------------------------------------------

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        self._unsubscribe = [
            self.gateway.events.subscribe(ServerStateChanged, self._on_state),
            self.gateway.metrics.recent.subscribe(self._on_call),
        ]
        self.history.start()
        try:
            yield
        finally:
            for undo in self._unsubscribe:
                undo()
            self.hub.shutdown()
            await self.history.stop()
            if self.oidc is not None:
                await self.oidc.aclose()

    def _on_call(self, record: CallRecord) -> None:
        if self.hub.viewers:  # nothing to build when no page is open
            self.hub.publish("call", record_dict(record))

    def _on_state(self, event: ServerStateChanged) -> None:
        supervisor = self.gateway.supervisors.get(event.upstream.name)
        if supervisor is not None and self.hub.viewers:
            self.hub.publish("server", server_status(supervisor, history=False))

    # -- views ----------------------------------------------------------------------------------

    def tool_rows(self) -> list[dict[str, Any]]:
        rows = []
        policies = self.gateway.governance.policies
        for name, entry in self.gateway.catalog.tools.items():
            tool = entry.tool
            hints = tool.annotations
            policy = policies.resolve(name)
            candidates = [route.upstream.name for route in entry.candidates]
            chain = (entry.local.details or {}).get("chain") if entry.local is not None else None
            tags = [
                tag
                for tag, on in (
                    ("read-only", is_read_only(tool)),
                    ("destructive", bool(hints and hints.destructive_hint)),
                    ("idempotent", bool(hints and hints.idempotent_hint)),
                    ("open-world", bool(hints and hints.open_world_hint)),
                    ("gateway", entry.local is not None),
                    ("chain", chain is not None),
                )
                if on
            ]
            rows.append(
                {
                    "name": name,
                    "server": candidates[0] if candidates else "nexus",
                    "fallbacks": candidates[1:],
                    "description": tool.description or "",
                    "tags": tags,
                    "read_only": is_read_only(tool),
                    "destructive": bool(hints and hints.destructive_hint),
                    "cache_ttl": policy.cache_ttl if policy else 0,
                    "rate_limit": policy.rate_limit if policy else None,
                    "timeout": policy.timeout if policy else None,
                    "offload_threshold": policy.offload_threshold if policy else None,
                    "input_schema": tool.input_schema,
                    "chain": chain,  # a chain's steps (docs/CHAINS.md), None for any other tool
                }
            )
        return rows

    def overview(self, viewer: str, identity: AdminIdentity | None = None) -> dict[str, Any]:
        """What the page needs at load; `viewer` is how its "try it" calls show in the call log,
        `identity` who is looking (admin_roles.py): a viewer's page hides the actions."""
        gateway = self.gateway
        control = getattr(gateway, "control", None)
        return {
            "servers": [server_status(s, history=False) for s in gateway.supervisors.values()],
            "frontends": frontend_status(gateway),
            "tools": self.tool_rows(),
            "metrics": self.reader.snapshot(),
            "history": self.history.as_dict(),
            "calls": gateway.metrics.recent.snapshot(200),
            "control": control is not None,
            # the call log offers "open" on offloaded results this viewer owns (admin/offload.py)
            "viewer": viewer,
            "reloadable": gateway.config_source is not None,
            "token_required": gateway.config.gateway.token is not None or self.oidc is not None,
            "user": None
            if identity is None
            else {"who": identity.who, "name": identity.name, "method": identity.method},
            "role": "admin" if identity is None else identity.role,
        }

    # -- routes ---------------------------------------------------------------------------------

    def routes(self) -> list[Route | Mount]:
        gateway = self.gateway

        async def index(request: Request) -> Response:
            return HTMLResponse(_page("index.html"), headers=_HEADERS)

        async def login_form(request: Request) -> Response:
            return self._login_page(None, 200)

        async def login(request: Request) -> Response:
            token = gateway.config.gateway.token
            if token is None:
                if self.oidc is not None:
                    return self._login_page(f"Log in with {self.oidc.settings.provider_label}.", 400)
                return RedirectResponse("/", status_code=303)
            client = request.client.host if request.client else ""
            wait = self.login_throttle.retry_after(client)
            if wait is not None:  # too many failures from this address: not even checked
                response = self._login_page(f"Too many failed logins: try again in {wait} s.", 429)
                response.headers["retry-after"] = str(wait)
                return response
            form = await request.form()
            given = form.get("token")
            if not isinstance(given, str) or not given:
                return self._login_page("Enter the gateway's token.", 400)
            if not hmac.compare_digest(given.encode("utf-8", "surrogatepass"), token.encode()):
                self.login_throttle.failed(client)
                return self._login_page("That token is not this gateway's.", 401)
            self.login_throttle.succeeded(client)
            response = RedirectResponse("/", status_code=303)
            response.headers["set-cookie"] = cookie_header(
                self.logins.create(), secure=request.url.scheme == "https", max_age=self.logins.max_age
            )
            return response

        async def logout(request: Request) -> Response:
            value = request.cookies.get(COOKIE_NAME)
            if value:
                self.logins.revoke(value)  # this login ends everywhere its cookie was copied
            response = RedirectResponse(LOGIN_PATH, status_code=303)
            response.headers["set-cookie"] = clearing_cookie_header()
            return response

        async def overview(request: Request) -> AdminJSONResponse:
            caller = api_caller(request)
            # the call log's "open" link: calls this page's "try it" made show this frontend:client
            viewer = f"{caller.frontend}:{caller.client or '-'}"
            return AdminJSONResponse(self.overview(viewer, request.scope.get(SCOPE_KEY)))

        async def history(request: Request) -> AdminJSONResponse:
            return AdminJSONResponse({"history": self.history.as_dict(), "metrics": self.reader.snapshot()})

        async def events(request: Request) -> Response:
            queue = self.hub.open()

            async def stream() -> AsyncIterator[ServerSentEvent]:
                try:
                    yield _sse(
                        "hello",
                        {"servers": [server_status(s, history=False) for s in gateway.supervisors.values()]},
                    )
                    while True:
                        try:
                            item = await asyncio.wait_for(queue.get(), DRAIN_CHECK_S)
                        except TimeoutError:
                            # The runtime drains the gateway before it stops the HTTP server:
                            # end the stream then, or the server waits for it and cuts it short.
                            if gateway.draining:
                                return
                            continue
                        if item is None:
                            return
                        yield _sse(*item)
                        if self.hub.caught_up(queue):
                            yield _sse("resync", {})
                finally:
                    self.hub.close(queue)

            return EventSourceResponse(stream(), ping=15, headers={"cache-control": "no-store"})

        return [
            Route("/", index, methods=["GET"]),
            Route(LOGIN_PATH, login_form, methods=["GET"]),
            Route(LOGIN_PATH, login, methods=["POST"]),
            Route("/logout", logout, methods=["POST"]),
            Route("/api/events", events, methods=["GET"]),
            Route("/api/dashboard", overview, methods=["GET"]),
            Route("/api/dashboard/history", history, methods=["GET"]),
            *(self.oidc.routes() if self.oidc is not None else ()),
            Mount(STATIC_PREFIX.rstrip("/"), StaticFiles(directory=str(_STATIC)), name="dashboard-static"),
        ]

    def _login_page(self, error: str | None, status: int) -> Response:
        needs_token = self.gateway.config.gateway.token is not None
        provider = self.gateway.config.gateway.dashboard_login
        message = (
            f'<p class="error" role="alert">{html.escape(error)}</p>'
            if error
            else (
                ""
                if needs_token or provider is not None
                else '<p class="note">This gateway has no token: <a href="/">open the dashboard</a>.</p>'
            )
        )
        body = _page("login.html").replace("<!--MESSAGE-->", message)
        if provider is not None:
            label = html.escape(provider.provider_label)
            body = body.replace(
                "<!--PROVIDER-->",
                f'<a class="button provider" id="oidc-login" href="{OIDC_LOGIN_PATH}">Log in with {label}</a>'
                + ('<p class="muted or">or with the gateway\'s token:</p>' if needs_token else ""),
            )
        if not needs_token and provider is not None:
            # No static token: the provider is the only way in.
            start, end = body.index("<!--TOKEN-->"), body.index("<!--/TOKEN-->")
            body = body[:start] + body[end:]
        return HTMLResponse(body, status_code=status, headers=_HEADERS)


def _sse(event: str, data: Any) -> ServerSentEvent:
    return ServerSentEvent(data=json.dumps(data, default=str), event=event)
