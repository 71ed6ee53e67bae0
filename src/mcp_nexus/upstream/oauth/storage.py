"""One server's login as the SDK's `TokenStorage`: read from and written to the encrypted vault.

The record is bound to the server URL it was made for: a login made for another URL is not
reused. A registration whose redirect URIs lack this gateway's callback (the gateway moved to
another port) still refreshes tokens; only a new login registers again (`forget_registration`).
A registration the authorization server refuses (`invalid_client`) is dropped with its tokens
(`forget_client`). The access token's expiry is kept as a time, not as the `expires_in` the
token came with, so a restarted gateway still knows when to refresh.
"""

from __future__ import annotations

import asyncio
import time
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol, runtime_checkable

from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyUrl

from mcp_nexus.config.oauth import OAuthSettings
from mcp_nexus.upstream.oauth.vault import TokenVault

# Refresh this long before the access token expires, or after 90% of a short lifetime: a call
# never starts with a token about to lapse on the way.
REFRESH_MARGIN_S = 60.0


@runtime_checkable
class SharedRefreshLock(Protocol):
    """A vault several replicas share, with a lock they all see (stores/redis_oauth.py)."""

    def refresh_lock(self, server: str) -> AbstractAsyncContextManager[None]: ...


class VaultTokenStorage:
    """The SDK `TokenStorage` of one server, over the gateway's vault."""

    def __init__(
        self, server: str, server_url: str, redirect_uri: str, settings: OAuthSettings, vault: TokenVault
    ) -> None:
        self.server = server
        self.server_url = server_url
        self.redirect_uri = redirect_uri
        self.settings = settings
        self.vault = vault
        self._record: dict[str, Any] | None = None
        self._local_refresh = asyncio.Lock()

    async def _load(self) -> dict[str, Any]:
        if self._record is None:
            record = await self.vault.load(self.server) or {}
            if record.get("server_url") != self.server_url:
                record = {}  # made for another URL: nothing in it applies here
            record["server_url"] = self.server_url
            self._record = record
        return self._record

    async def reload(self) -> None:
        """Forget what was read: the next use reads the vault again (another login wrote it)."""
        self._record = None

    async def _save(self) -> None:
        record = await self._load()
        record["saved_at"] = time.time()
        await self.vault.save(self.server, record)

    # -- TokenStorage ------------------------------------------------------------------

    async def get_tokens(self) -> OAuthToken | None:
        record = await self._load()
        tokens = record.get("tokens")
        if not tokens:
            return None
        token = OAuthToken.model_validate(tokens)
        expires_at = record.get("expires_at")
        if expires_at is not None:
            token.expires_in = max(0, int(expires_at - time.time()))
        return token

    async def set_tokens(self, tokens: OAuthToken) -> None:
        record = await self._load()
        record["tokens"] = tokens.model_dump(mode="json", exclude_none=True)
        now = time.time()
        record["issued_at"] = now
        record["expires_at"] = now + int(tokens.expires_in) if tokens.expires_in is not None else None
        await self._save()

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        settings = self.settings
        if settings.client_id:  # pre-registered: the config is the registration
            method = settings.token_endpoint_auth_method or (
                "client_secret_basic" if settings.client_secret else "none"
            )
            return OAuthClientInformationFull(
                client_id=settings.client_id,
                client_secret=settings.client_secret,
                redirect_uris=[AnyUrl(self.redirect_uri)],
                token_endpoint_auth_method=method,
            )
        info = (await self._load()).get("client_info")
        return OAuthClientInformationFull.model_validate(info) if info else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        if self.settings.client_id:
            return  # the config's registration is not stored (its secret stays in the config)
        record = await self._load()
        record["client_info"] = client_info.model_dump(mode="json", exclude_none=True)
        await self._save()

    # -- Nexus's own -------------------------------------------------------------------

    def refresh_lock(self) -> AbstractAsyncContextManager[Any]:
        """Held while this login is refreshed: whoever waited for it reads the stored login again
        and adopts the refreshed token instead of spending a refresh token that may be rotated.
        Shared by every replica when the vault is (Redis); else by this process's sessions."""
        if isinstance(self.vault, SharedRefreshLock):
            return self.vault.refresh_lock(self.server)
        return self._local_refresh

    async def refresh_due_at(self) -> float | None:
        """When the access token should be refreshed (None: no expiry known)."""
        record = await self._load()
        expires_at = record.get("expires_at")
        if expires_at is None or not record.get("tokens"):
            return None
        issued_at = float(record.get("issued_at") or expires_at)
        lifetime = max(0.0, float(expires_at) - issued_at)
        return float(expires_at) - min(REFRESH_MARGIN_S, lifetime / 10)

    async def registered_for_callback(self) -> bool:
        """Whether the stored registration may be sent to this gateway's callback."""
        info = (await self._load()).get("client_info") or {}
        return self.redirect_uri.rstrip("/") in {str(u).rstrip("/") for u in info.get("redirect_uris") or []}

    async def forget_registration(self) -> None:
        """Register again at the next login (the stored one names another callback)."""
        record = await self._load()
        record.pop("client_info", None)
        await self._save()

    async def forget_client(self, client_id: str) -> None:
        """The authorization server no longer knows the registered client `client_id`
        (`invalid_client`): drop the registration and the tokens issued to it, so that the next
        login registers anew. A registration stored since (another replica's new login) stays."""
        self._record = None  # read the vault again: another replica may have registered anew
        record = await self._load()
        if (record.get("client_info") or {}).get("client_id") not in (None, client_id):
            return
        for key in ("client_info", "tokens", "expires_at"):
            record.pop(key, None)
        await self._save()

    async def clear_tokens(self) -> None:
        """Drop the tokens, keep the registration (a new login reuses it)."""
        record = await self._load()
        record.pop("tokens", None)
        record.pop("expires_at", None)
        await self._save()

    async def summary(self) -> dict[str, Any]:
        """What may be shown about this login: never a token or a secret."""
        record = await self._load()
        tokens = record.get("tokens") or {}
        info = record.get("client_info") or {}
        return {
            "logged_in": bool(tokens.get("access_token")),
            "expires_at": record.get("expires_at"),
            "refreshable": bool(tokens.get("refresh_token")),
            "scope": tokens.get("scope"),
            "client_id": self.settings.client_id or info.get("client_id"),
            "registered": bool(self.settings.client_id or info),
            "saved_at": record.get("saved_at"),
        }
