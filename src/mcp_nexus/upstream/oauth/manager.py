"""The gateway's OAuth logins: one per OAuth server, a login started by an operator, the NEEDS_AUTH state.

A session's provider never waits for a person: where a login is needed it tells the session
(`refused_for_login`) and raises `AuthorizationRequired`; the connect fails, and the upstream
puts itself in NEEDS_AUTH directly (never ERROR, so no reconnect loop hammers the authorization
server), its reason naming the login command. A session that was READY and loses its login (a
refused refresh, a step-up) is marked NEEDS_AUTH here (`_login_needed`).
`login()` runs the flow on a provider of its own: it hands the authorization URL out (to
`nexus auth login`, the dashboard, a test driver), waits for the browser to come back to
`/oauth/callback` (`complete()`), exchanges the code, and restarts the server, which then
finds the stored login. The `state` and `iss` of the callback reach the SDK as they came; the
SDK checks both.

One manager per gateway, made by its HTTP routes (`manager_for(gateway.events)`), which tell it
the callback URL, the servers and how to restart one. A session knows only its server's config:
it finds the manager whose servers hold that very config object (`manager_for_config`), or the
process's default one before any gateway's routes exist (a gateway connects its servers first).
That a server needs a login is kept by config object too (`_needed`), so the manager that
marks the server NEEDS_AUTH is the one that knows it, whichever made the session's provider.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import weakref
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlencode, urlparse, urlunparse

import httpx2
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata
from pydantic import AnyUrl

from mcp_nexus.config.schema import ServerConfig
from mcp_nexus.events import EventBus, ServerStateChanged
from mcp_nexus.upstream.oauth.errors import AuthorizationRequired, LoginFailed, login_command
from mcp_nexus.upstream.oauth.grants import unattended_auth
from mcp_nexus.upstream.oauth.probe import probe_server
from mcp_nexus.upstream.oauth.provider import NexusOAuthProvider
from mcp_nexus.upstream.oauth.sdk_flow_log import quiet_reported_flow_errors
from mcp_nexus.upstream.oauth.storage import VaultTokenStorage
from mcp_nexus.upstream.oauth.vault import EncryptedFileVault, TokenVault
from mcp_nexus.upstream.state import UpstreamState

logger = logging.getLogger(__name__)

CALLBACK_PATH = "/oauth/callback"
DEFAULT_CALLBACK_BASE = "http://127.0.0.1:8787"  # the gateway's default port, until the HTTP frontend says
LOGIN_TIMEOUT_S = 600.0  # how long a started login waits for the browser to come back
CLIENT_NAME = "Nexus MCP gateway"


@dataclass
class PendingLogin:
    """One login in progress: its authorization URL, then the code the callback brings."""

    server: str
    url: asyncio.Future[str] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    code: asyncio.Future[AuthorizationCodeResult] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )
    state: str | None = None
    task: asyncio.Task[None] | None = None
    started: float = field(default_factory=time.time)
    user: str | None = None  # a per-user login (per_user.py): the identity its token is stored for
    error: str | None = None  # why a per-user login failed (a server's own logins keep it on their entry)

    @property
    def active(self) -> bool:
        return self.task is not None and not self.task.done()

    async def url_or_end(self, timeout: float) -> None:
        """Wait until the authorization URL is known or the login ended (at most `timeout` s)."""
        assert self.task is not None
        waiting: asyncio.Future[Any] = asyncio.ensure_future(asyncio.shield(self.url))
        try:
            await asyncio.wait({waiting, self.task}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            waiting.cancel()


@dataclass
class ServerLogin:
    """What the manager knows of one OAuth server."""

    name: str
    required_scope: str | None = None  # a step-up: the scope the next login must ask for
    pending: PendingLogin | None = None
    last_error: str | None = None  # why the last login failed
    storage: VaultTokenStorage | None = None


class OAuthManager:
    def __init__(self, bus: EventBus | None, vault: TokenVault | None = None) -> None:
        self.bus = bus
        self.vault: TokenVault = vault if vault is not None else EncryptedFileVault()
        self.callback_base: str | None = None
        self.restart: Callable[[str], Awaitable[Any]] | None = None
        self.upstreams: Mapping[str, Any] = {}
        self.login_timeout = LOGIN_TIMEOUT_S
        self._servers: dict[str, ServerLogin] = {}
        self._by_state: dict[str, PendingLogin] = {}
        if bus is not None:
            bus.subscribe(ServerStateChanged, self._on_state)
        _managers.add(self)
        quiet_reported_flow_errors()  # each failure is this gateway's to report, in one line

    def configure(
        self,
        *,
        callback_base: str | None = None,
        restart: Callable[[str], Awaitable[Any]] | None = None,
        upstreams: Mapping[str, Any] | None = None,
        vault: TokenVault | None = None,
    ) -> None:
        """What the HTTP frontend knows: where the callback is, how to restart a server."""
        if callback_base is not None:
            self.callback_base = callback_base.rstrip("/")
        if restart is not None:
            self.restart = restart
        if upstreams is not None:
            self.upstreams = upstreams
            for upstream in upstreams.values():  # READY before we were told: no login needed
                self._on_state(ServerStateChanged(upstream))
        if vault is not None:
            self.vault = vault
            for entry in self._servers.values():
                entry.storage = None

    # -- per server ----------------------------------------------------------------------

    def entry(self, name: str) -> ServerLogin:
        entry = self._servers.get(name)
        if entry is None:
            entry = self._servers[name] = ServerLogin(name)
        return entry

    def redirect_uri(self, config: ServerConfig) -> str:
        assert config.auth is not None
        if config.auth.redirect_uri:
            return config.auth.redirect_uri
        return f"{self.callback_base or DEFAULT_CALLBACK_BASE}{CALLBACK_PATH}"

    def storage(self, config: ServerConfig) -> VaultTokenStorage:
        """The server's login storage (one per server, remade when its URL or settings change)."""
        assert config.auth is not None and config.url is not None
        entry = self.entry(config.name)
        redirect = self.redirect_uri(config)
        known = entry.storage
        if known is None or (known.server_url, known.redirect_uri, known.settings) != (
            config.url,
            redirect,
            config.auth,
        ):
            known = entry.storage = VaultTokenStorage(
                config.name, config.url, redirect, config.auth, self.vault
            )
        return known

    def _provider(
        self,
        config: ServerConfig,
        redirect_handler: Callable[[str], Awaitable[None]],
        callback_handler: Callable[[], Awaitable[AuthorizationCodeResult]],
        storage: VaultTokenStorage | None = None,
        needs_login: Callable[[str], Awaitable[None]] | None = None,
    ) -> httpx2.Auth:
        """`storage`: whose login (a user's, per_user.py); None: the server's own. `needs_login`:
        a session's (it never registers a client, provider.py); None: a login's."""
        assert config.auth is not None and config.url is not None
        settings = config.auth
        storage = storage if storage is not None else self.storage(config)
        if settings.grant != "authorization_code":  # no person: the SDK's extension providers (grants.py)
            return unattended_auth(config.name, config.url, settings, storage)
        metadata = OAuthClientMetadata(
            client_name=CLIENT_NAME,
            redirect_uris=[AnyUrl(self.redirect_uri(config))],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            scope=settings.scope,
            token_endpoint_auth_method=settings.token_endpoint_auth_method,
        )
        return NexusOAuthProvider(
            server_url=config.url,
            client_metadata=metadata,
            storage=storage,
            redirect_handler=redirect_handler,
            callback_handler=callback_handler,
            client_metadata_url=settings.client_metadata_url,
            needs_login=needs_login,
        )

    def owns(self, config: ServerConfig) -> bool:
        return any(upstream.config is config for upstream in self.upstreams.values())

    def session_auth(self, config: ServerConfig, refused: Callable[[str], None] | None = None) -> httpx2.Auth:
        """The provider of one session: stored login, refresh; a needed login raises, never waits.

        `refused` hears the reason (naming the login command) before the connect fails for it."""

        async def stop(why: str) -> None:
            login_needed(config, why)
            error = AuthorizationRequired(config.name, why)
            if refused is not None:
                refused(str(error))
            raise error

        async def refuse(authorization_url: str) -> None:
            await stop(await self._why(config, authorization_url))

        async def no_callback() -> AuthorizationCodeResult:  # never reached: refuse() raised
            raise AuthorizationRequired(config.name, "no login in progress")

        return self._provider(config, refuse, no_callback, needs_login=stop)

    async def _why(self, config: ServerConfig, authorization_url: str) -> str:
        storage = self.storage(config)
        summary = await storage.summary()
        asked = set(_query(authorization_url).get("scope", "").split())
        granted = set((summary.get("scope") or "").split())
        if summary["logged_in"] and asked and not asked <= granted:
            self.entry(config.name).required_scope = " ".join(sorted(asked | granted))
            return f"it asks for scope {' '.join(sorted(asked - granted))!r} beyond the login's"
        if summary["logged_in"]:
            return "the stored login was refused and could not be refreshed"
        return "no stored login"

    def _login_needed(self, config: ServerConfig, why: str) -> None:
        for upstream in self.upstreams.values():
            if upstream.config is config and upstream.state in (UpstreamState.READY, UpstreamState.DEGRADED):
                # A live session lost its login (a refused refresh, a step-up): its calls stop here.
                self._mark(upstream, why)

    def _mark(self, upstream: Any, why: str) -> None:
        message = str(AuthorizationRequired(upstream.name, why))
        upstream.last_error = message
        upstream.mark(UpstreamState.NEEDS_AUTH, message)

    def _on_state(self, event: ServerStateChanged) -> None:
        upstream = event.upstream
        if getattr(upstream.config, "auth", None) is not None and upstream.state == UpstreamState.READY:
            _needed.pop(id(upstream.config), None)  # the login works again

    # -- a login ---------------------------------------------------------------------------

    def _config(self, name: str) -> ServerConfig:
        upstream = self.upstreams.get(name)
        if upstream is None:
            raise LookupError(f"no server named {name!r}")
        config: ServerConfig = upstream.config
        if config.auth is None:
            raise LoginFailed(f"server {name!r} does not use OAuth (no 'auth' in its config)")
        return config

    async def login(self, name: str) -> dict[str, Any]:
        """Start a login (or join the one in progress): the authorization URL, or that none was needed."""
        config = self._config(name)
        entry = self.entry(name)
        pending = entry.pending
        if pending is None or not pending.active:
            pending = entry.pending = PendingLogin(name)
            entry.last_error = None
            pending.task = asyncio.create_task(
                self._run_login(config, entry, pending), name=f"oauth-login-{name}"
            )
        task = pending.task
        assert task is not None
        await pending.url_or_end(config.timeouts.connect + 10)
        if pending.url.done() and not pending.url.cancelled():
            return {"server": name, "status": "waiting", "authorization_url": pending.url.result()}
        if not task.done():
            raise LoginFailed(
                f"server {name!r}: no authorization URL within {config.timeouts.connect + 10:g} s"
            )
        error = task.exception()
        if error is not None:
            raise LoginFailed(str(error)) from None
        return {"server": name, "status": "logged_in", "authorization_url": None}

    def login_provider(
        self,
        config: ServerConfig,
        pending: PendingLogin,
        storage: VaultTokenStorage | None = None,
        scope: str | None = None,
    ) -> httpx2.Auth:
        """The provider of a login in progress: it hands the authorization URL (asking for `scope`
        as well) to `pending`, which the callback with its `state` finishes, and waits for it."""

        async def hand_out(authorization_url: str) -> None:
            state = _query(authorization_url).get("state")
            if state:  # the callback bringing this state finishes this login, no other
                pending.state = state
                self._by_state[state] = pending
            if scope:
                authorization_url = _with_scope(authorization_url, scope)
            if not pending.url.done():
                pending.url.set_result(authorization_url)

        async def wait_for_browser() -> AuthorizationCodeResult:
            try:
                return await asyncio.wait_for(asyncio.shield(pending.code), self.login_timeout)
            except TimeoutError:
                raise LoginFailed(f"no answer from the browser within {self.login_timeout:g} s") from None

        return self._provider(config, hand_out, wait_for_browser, storage=storage)

    async def _run_login(self, config: ServerConfig, entry: ServerLogin, pending: PendingLogin) -> None:
        storage = self.storage(config)
        try:
            if id(config) in _needed or entry.required_scope:
                await storage.clear_tokens()  # a refused or too narrow login: ask for a new one
            if not storage.settings.client_id and not await storage.registered_for_callback():
                await storage.forget_registration()  # made for another callback URL: register anew
            await probe_server(config, self.login_provider(config, pending, scope=entry.required_scope))
        except BaseException as exc:
            entry.last_error = _describe(exc)
            logger.warning("server %s: OAuth login failed: %s", config.name, entry.last_error)
            if not pending.url.done():
                pending.url.cancel()
            if isinstance(exc, Exception) and not isinstance(exc, LoginFailed):
                raise LoginFailed(entry.last_error) from None
            raise
        finally:
            if pending.state:
                self._by_state.pop(pending.state, None)
        _needed.pop(id(config), None)
        entry.required_scope = None
        logger.info("server %s: OAuth login done", config.name)
        if self.restart is not None:
            await self.restart(config.name)

    async def complete(self, params: Mapping[str, str]) -> tuple[str, str | None]:
        """The browser came back to `/oauth/callback`: (server, error or None once the login finished)."""
        state = params.get("state")
        pending = self._by_state.get(state or "")
        if pending is None:
            raise LookupError("no login is waiting for this callback (unknown or used 'state')")
        if "error" in params:
            detail = params.get("error_description")
            error = LoginFailed(
                f"the authorization server answered {params['error']}" + (f": {detail}" if detail else "")
            )
            if not pending.code.done():
                pending.code.set_exception(error)
        elif not pending.code.done():
            pending.code.set_result(
                AuthorizationCodeResult(code=params.get("code", ""), state=state, iss=params.get("iss"))
            )
        task = pending.task
        if task is not None:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(task), 30.0)
        if task is None or not task.done():
            return pending.server, None  # still finishing (the restart): status tells the end
        failed = task.cancelled() or task.exception()
        error_text = (pending.error or self.entry(pending.server).last_error) if failed else None
        return pending.server, error_text

    async def logout(self, name: str) -> bool:
        """Forget the server's login (tokens and registration); it needs a new login from now on."""
        config = self._config(name)
        entry = self.entry(name)
        if entry.pending is not None and entry.pending.task is not None:
            entry.pending.task.cancel()
        removed = await self.vault.delete(name)
        entry.storage = None
        login_needed(config, "logged out")
        if self.restart is not None and config.enabled:
            await self.restart(name)
        return removed

    async def status(self) -> list[dict[str, Any]]:
        """Every OAuth server's login, as may be shown: never a token or a secret."""
        names = sorted({n for n, u in self.upstreams.items() if u.config.auth is not None})
        return [await self.server_status(name) for name in names]

    async def server_status(self, name: str) -> dict[str, Any]:
        config = self._config(name)
        entry = self.entry(name)
        summary = await self.storage(config).summary()
        upstream = self.upstreams.get(name)
        why = _needed.get(id(config))
        expires_at = summary.get("expires_at")
        if entry.pending is not None and entry.pending.active:
            login = "in progress"
        elif why or (upstream is not None and upstream.state == UpstreamState.NEEDS_AUTH):
            login = "needed"
        elif summary["logged_in"]:
            login = "logged in"
        else:
            login = "none"
        return {
            "server": name,
            "state": str(upstream.state) if upstream is not None else None,
            "login": login,
            "reason": why,
            "last_error": entry.last_error,
            "login_command": login_command(name),
            "expires_in": None if expires_at is None else round(expires_at - time.time()),
            "scope": summary.get("scope"),
            "refreshable": summary["refreshable"],
            "client_id": summary.get("client_id"),
            "redirect_uri": self.redirect_uri(config),
        }


def _query(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlparse(url).query).items() if v}


def _with_scope(url: str, scope: str) -> str:
    """The authorization URL asking for `scope` as well (a step-up keeps what was granted)."""
    parts = urlparse(url)
    query = parse_qs(parts.query)
    asked = (query.get("scope") or [""])[0].split()
    query["scope"] = [" ".join(dict.fromkeys([*asked, *scope.split()]))]
    return urlunparse(parts._replace(query=urlencode({k: v[0] for k, v in query.items()})))


def _describe(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in exc.exceptions)
    if isinstance(exc, asyncio.CancelledError):
        return "cancelled"
    return str(exc) or type(exc).__name__


class _QuietLoginNeeded(logging.Filter):
    """The SDK logs every end of its flow as an error with a traceback; a needed login is
    expected (the server waits in NEEDS_AUTH, said once by the upstream), not an error."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, AuthorizationRequired)


logging.getLogger("mcp.client.auth.oauth2").addFilter(_QuietLoginNeeded())

_managers: weakref.WeakSet[OAuthManager] = weakref.WeakSet()
_by_bus: weakref.WeakKeyDictionary[EventBus, OAuthManager] = weakref.WeakKeyDictionary()
_default: list[OAuthManager] = []
# Why a server needs a login, by the id of its config object (dropped with the object).
_needed: dict[int, str] = {}


def login_needed(config: ServerConfig, why: str) -> None:
    """Record that this server needs a login; a manager serving it marks it NEEDS_AUTH."""
    key = id(config)
    if key not in _needed:
        weakref.finalize(config, _needed.pop, key, None)
    _needed[key] = why
    for manager in list(_managers):
        manager._login_needed(config, why)


def manager_for(bus: EventBus) -> OAuthManager:
    """The OAuth manager of the gateway whose event bus this is (made on first use)."""
    manager = _by_bus.get(bus)
    if manager is None:
        manager = _by_bus[bus] = OAuthManager(bus)
    return manager


def manager_for_config(config: ServerConfig) -> OAuthManager:
    """The manager of the gateway serving this config object, else the process's default one."""
    for manager in list(_managers):
        if manager.owns(config):
            return manager
    if not _default:
        _default.append(OAuthManager(None))
    return _default[0]
