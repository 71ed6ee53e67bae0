"""Per-user logins: a server with `auth: {per_user: true}` is called with each user's own token.

Each user (a caller whose token names a subject: `Caller.identity` = `user:<sub>`) logs in to
the server once; the login is kept in the vault beside the server's own, under
`<server>#user:<sub>`, sealed the same way. A login is started for one user and bound to them:
the flow's `state` (which the SDK checks, with PKCE) leads the callback to the pending login of
that user, whose storage is the only one its code can be exchanged into; a login started by
alice can never store a token for bob.

A user without a login who calls the server's tool gets the login URL: as the URL-mode
elicitation error of MCP 2025-11-25 (-32042) when the client declared URL elicitation, else as
-32003 with the URL in the message. The server's own login (the operator's) lists its tools and
serves callers without a user (stdio, the static token); no caller's own token ever goes
upstream, only the token the upstream's authorization server issued for the user.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import httpx2
import mcp_types as types
from mcp.shared.auth import AuthorizationCodeResult
from mcp.shared.exceptions import MCPError, UrlElicitationRequiredError

from mcp_nexus.config.schema import ServerConfig
from mcp_nexus.errors import UnavailableError
from mcp_nexus.upstream.oauth.errors import AuthorizationRequired, LoginFailed
from mcp_nexus.upstream.oauth.manager import OAuthManager, PendingLogin, manager_for_config
from mcp_nexus.upstream.oauth.probe import probe_server
from mcp_nexus.upstream.oauth.storage import VaultTokenStorage

logger = logging.getLogger(__name__)

USER_PREFIX = "user:"


def is_per_user(config: ServerConfig) -> bool:
    return config.auth is not None and config.auth.per_user


def is_user(identity: str) -> bool:
    """A caller with a user of its own (a token naming a subject), not the operator's stand-ins."""
    return identity.startswith(USER_PREFIX)


def vault_key(server: str, identity: str) -> str:
    """Where a user's login to `server` is kept in the vault (server names are the operator's)."""
    return f"{server}#{identity}"


class UserLoginRequired(AuthorizationRequired):
    """The user has no usable login to the server (raised inside the session's OAuth flow)."""


class UserLogins:
    """The per-user logins of one gateway's OAuth manager: storages and logins in progress."""

    def __init__(self, manager: OAuthManager) -> None:
        self.manager = manager
        self._storages: dict[tuple[str, str], VaultTokenStorage] = {}
        self._pending: dict[tuple[str, str], PendingLogin] = {}

    def storage(self, config: ServerConfig, identity: str) -> VaultTokenStorage:
        assert config.auth is not None and config.url is not None
        redirect = self.manager.redirect_uri(config)
        known = self._storages.get((config.name, identity))
        if known is None or (known.server_url, known.redirect_uri, known.settings) != (
            config.url,
            redirect,
            config.auth,
        ):
            known = self._storages[(config.name, identity)] = VaultTokenStorage(
                vault_key(config.name, identity), config.url, redirect, config.auth, self.manager.vault
            )
        return known

    def session_auth(
        self, config: ServerConfig, identity: str, refused: Callable[[str], None]
    ) -> httpx2.Auth:
        """The OAuth client of one user's session: their stored login and its refresh, never a wait.

        A missing or refused login raises (the connect fails; `refused` hears why) and, unlike the
        server's own, leaves the server's state alone: only this user needs a login."""

        async def stop(why: str) -> None:
            refused(why)
            raise UserLoginRequired(config.name, f"{identity} has no usable login")

        async def refuse(authorization_url: str) -> None:
            await stop("no usable login")

        async def no_callback() -> AuthorizationCodeResult:  # never reached: refuse() raised
            raise UserLoginRequired(config.name, "no login in progress")

        return self.manager._provider(
            config, refuse, no_callback, storage=self.storage(config, identity), needs_login=stop
        )

    async def logged_in(self, config: ServerConfig, identity: str) -> bool:
        return bool((await self.storage(config, identity).summary())["logged_in"])

    async def login(self, config: ServerConfig, identity: str) -> str:
        """Start this user's login (or join theirs in progress): the authorization URL."""
        if not is_user(identity):
            raise LoginFailed(f"a per-user login needs a user (a token naming a subject), not {identity!r}")
        key = (config.name, identity)
        pending = self._pending.get(key)
        if pending is None or not pending.active:
            pending = self._pending[key] = PendingLogin(config.name, user=identity)
            pending.task = asyncio.create_task(
                self._run(config, identity, pending), name=f"oauth-login-{config.name}-{identity}"
            )
        task = pending.task
        assert task is not None
        await pending.url_or_end(config.timeouts.connect + 10)
        if pending.url.done() and not pending.url.cancelled():
            return pending.url.result()
        if task.done() and not task.cancelled() and task.exception() is None:
            raise LoginFailed(f"server {config.name!r}: {identity} is logged in already")
        raise LoginFailed(
            f"server {config.name!r}: no authorization URL for {identity}"
            + (f" ({pending.error})" if pending.error else "")
        )

    async def _run(self, config: ServerConfig, identity: str, pending: PendingLogin) -> None:
        manager = self.manager
        storage = self.storage(config, identity)
        try:
            await storage.clear_tokens()  # a login is started only for want of a usable one
            if not storage.settings.client_id and not await storage.registered_for_callback():
                await storage.forget_registration()
            await probe_server(config, manager.login_provider(config, pending, storage))
        except BaseException as exc:
            pending.error = str(exc) or type(exc).__name__
            # Cancelled: the gateway stopped with the login still waiting for its browser.
            level = logging.INFO if isinstance(exc, asyncio.CancelledError) else logging.WARNING
            logger.log(
                level, "server %s: the OAuth login of %s ended: %s", config.name, identity, pending.error
            )
            if not pending.url.done():
                pending.url.cancel()
            raise
        finally:
            if pending.state:
                manager._by_state.pop(pending.state, None)
        logger.info("server %s: OAuth login of %s done", config.name, identity)

    async def logout(self, config: ServerConfig, identity: str) -> bool:
        self._storages.pop((config.name, identity), None)
        return await self.manager.vault.delete(vault_key(config.name, identity))

    async def login_required(
        self, config: ServerConfig, identity: str, capabilities: dict[str, Any] | None
    ) -> MCPError | UnavailableError:
        """The error telling this user where to log in (a login for them is started here)."""
        url = await self.login(config, identity)
        message = f"server {config.name!r} needs your own login: open the URL, then call again"
        if _takes_url_elicitation(capabilities):
            elicitation = types.ElicitRequestURLParams(
                message=f"Log in to {config.name} (you, {identity}, call it with your own account)",
                url=url,
                elicitation_id=f"nexus-login-{config.name}",
            )
            return UrlElicitationRequiredError([elicitation], message)
        return UnavailableError(
            f"{message}: {url}", data={"server": config.name, "login_url": url, "user": identity}
        )


def _takes_url_elicitation(capabilities: dict[str, Any] | None) -> bool:
    """Whether the client declared URL-mode elicitation (MCP 2025-11-25: `elicitation: {url: {}}`)."""
    elicitation = (capabilities or {}).get("elicitation")
    return isinstance(elicitation, dict) and "url" in elicitation


_logins: dict[int, UserLogins] = {}


def user_logins(config: ServerConfig) -> UserLogins:
    """The per-user logins of the manager that serves this server's config."""
    manager = manager_for_config(config)
    logins = _logins.get(id(manager))
    if logins is None or logins.manager is not manager:
        logins = _logins[id(manager)] = UserLogins(manager)
    return logins
