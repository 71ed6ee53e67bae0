"""The SDK's `OAuthClientProvider` with what a long-running gateway adds to it.

- Refresh on 401: the SDK answers a 401 with a whole new authorization; a token the server
  revoked or that expired early is first refreshed (once), and only a refused refresh leads to
  a new authorization.
- Refresh ahead of expiry: the SDK refreshes once the expiry has passed and knows no expiry
  for a token read back from storage; the expiry kept with the login (storage.py), less a
  margin, is given to it before each request.
- One login for several replicas (or sessions): before refreshing (ahead of expiry, on a 401)
  and after a refused refresh, the stored login is read again; a token another replica already
  refreshed is adopted instead of refreshing with a refresh token the authorization server has
  rotated away (which would cost the login).
- No interaction in the background: `redirect_handler` is Nexus's (manager.py). A session's
  provider raises `AuthorizationRequired` where the SDK would send a person to the browser;
  only a login's provider hands the authorization URL out. The request that needed the login
  is then sent once more and its own 401/403 answered to the transport, which turns it into
  the JSON-RPC error of that one request: a session that was open stays open (its server is
  NEEDS_AUTH meanwhile), a connect fails as it would without a login.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable

import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata, OAuthToken

from mcp_nexus.upstream.oauth.errors import AuthorizationRequired
from mcp_nexus.upstream.oauth.storage import VaultTokenStorage

logger = logging.getLogger(__name__)

# After a refused refresh, the winner of a race between replicas may still be saving what it
# got: the stored login is read once more after this pause before the refusal counts.
REREAD_AFTER_S = 0.3


class NexusOAuthProvider(OAuthClientProvider):
    """One server's OAuth client: the SDK's flow, a refresh on 401, expiry known across restarts."""

    def __init__(
        self,
        *,
        server_url: str,
        client_metadata: OAuthClientMetadata,
        storage: VaultTokenStorage,
        redirect_handler: Callable[[str], Awaitable[None]],
        callback_handler: Callable[[], Awaitable[AuthorizationCodeResult]],
        client_metadata_url: str | None = None,
    ) -> None:
        super().__init__(
            server_url=server_url,
            client_metadata=client_metadata,
            storage=storage,
            redirect_handler=redirect_handler,
            callback_handler=callback_handler,
            client_metadata_url=client_metadata_url,
        )
        self.vault_storage = storage
        self.refreshes = 0  # refreshes this provider asked for (tests and status)

    async def _due(self) -> None:
        """Tell the SDK when the current token stops being good enough to send."""
        context = self.context
        due = await self.vault_storage.refresh_due_at()
        if (
            due is not None
            and due <= time.time()
            and context.current_tokens is not None
            and await self._adopt_stored()  # about to refresh: another replica may have done it already
        ):
            due = await self.vault_storage.refresh_due_at()
        if due is not None and (context.token_expiry_time is None or due < context.token_expiry_time):
            context.token_expiry_time = due

    async def _stored_newer(self) -> OAuthToken | None:
        """The stored tokens when they are not the ones this provider holds (written elsewhere)."""
        if not self._initialized:
            return None  # the SDK reads the stored login itself on first use
        storage = self.vault_storage
        await storage.reload()
        stored = await storage.get_tokens()
        current = self.context.current_tokens
        if stored is None or (current is not None and stored.access_token == current.access_token):
            return None
        return stored

    async def _adopt_stored(self, wait: float = 0.0) -> bool:
        """Take the stored login when another replica (or session) refreshed it; whether it did."""
        stored = await self._stored_newer()
        if stored is None and wait:
            await asyncio.sleep(wait)
            stored = await self._stored_newer()
        if stored is None:
            return False
        self.context.current_tokens = stored
        self.context.update_token_expiry(stored)
        self.context.client_info = await self.vault_storage.get_client_info()
        logger.info("server at %s: using the login refreshed elsewhere", self.context.server_url)
        return True

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        await self._due()
        flow = super().async_auth_flow(request)
        retried = adopted = False
        # The login's refresh lock (storage.refresh_lock), held from just before a refresh goes
        # out until the flow's next request: by then the SDK has saved what the refresh got.
        refresh_lock = contextlib.AsyncExitStack()
        locked = False
        try:
            outgoing = await flow.__anext__()
            while True:
                if _is_refresh(outgoing) and not locked:
                    await refresh_lock.enter_async_context(self.vault_storage.refresh_lock())
                    locked = True
                    if not adopted and await self._adopt_stored():
                        # Refreshed by another replica while this one waited: no refresh here.
                        adopted = True
                        await flow.aclose()
                        flow = super().async_auth_flow(request)
                        outgoing = await flow.__anext__()
                        continue
                elif locked and not _is_refresh(outgoing):
                    await refresh_lock.aclose()
                    locked = False
                response = yield outgoing
                if (
                    not adopted
                    and (
                        (outgoing is request and response.status_code == 401)
                        or (_is_refresh(outgoing) and response.status_code != 200)
                    )
                    and await self._adopt_stored(wait=0.0 if outgoing is request else REREAD_AFTER_S)
                ):
                    # Refreshed by another replica: the request goes again with that token.
                    adopted = True
                    await flow.aclose()
                    flow = super().async_auth_flow(request)
                    outgoing = await flow.__anext__()
                    continue
                if (
                    outgoing is request
                    and response.status_code == 401
                    and not retried
                    and self.context.can_refresh_token()
                ):
                    # A 401 on a token we hold: refresh first (the SDK would authorize anew).
                    retried = True
                    await flow.aclose()
                    self.context.token_expiry_time = (
                        1.0  # long past (0 would read as "no expiry"): the SDK refreshes
                    )
                    self.refreshes += 1
                    logger.info("server at %s refused the access token: refreshing it", request.url.host)
                    flow = super().async_auth_flow(request)
                    outgoing = await flow.__anext__()
                    continue
                try:
                    outgoing = await flow.asend(response)
                except AuthorizationRequired:
                    # No person here: the request goes once more, unchanged, and its refusal is
                    # the answer (what the flow's last discovery request got would not be).
                    await flow.aclose()
                    yield request
                    return
        except StopAsyncIteration:
            return
        finally:
            await refresh_lock.aclose()
            await flow.aclose()


def _is_refresh(request: httpx2.Request) -> bool:
    """A refresh-token grant the SDK sent to the token endpoint."""
    return request.method == "POST" and b"grant_type=refresh_token" in request.content
