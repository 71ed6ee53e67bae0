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
- No registration without a login: a session's provider (`needs_login` given) never registers
  a client dynamically. Where the SDK would register, it says a login is needed instead; the
  login registers (once) and stores the registration for every later session. A server left
  waiting in NEEDS_AUTH thus costs the authorization server no registration per connect attempt.
- A refused client: a token request answered `invalid_client` (RFC 6749 §5.2: the
  authorization server no longer knows the client, or its secret changed) drops a dynamically
  registered client with its tokens (`VaultTokenStorage.forget_client`), so the next login
  registers anew instead of presenting the same unknown client forever. A login's refused
  refresh goes straight on to register and authorize again; a session says a login is needed,
  and why. A client the config pre-registers (`auth.client_id`) is kept: the message names it.
  A login about to send the browser to authorize a stored client it has not seen accepted
  (no refresh went through) checks it first: a token request that must fail either way (an
  unknown refresh token) is answered `invalid_grant` for a client the server knows, and
  `invalid_client` for one it forgot. A forgotten one is dropped and the login registers anew,
  where the browser would have met "client not found" at every login.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time
from collections.abc import AsyncGenerator, Awaitable, Callable
from urllib.parse import urljoin

import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata, OAuthToken

from mcp_nexus.upstream.bounded_answers import SIDE_ANSWERS_ONLY, AnswerRefused
from mcp_nexus.upstream.oauth.errors import AuthorizationRequired, ClientForgotten, LoginFailed
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
        needs_login: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        """`needs_login`: a session's, called with the reason where only a login can go on (it
        raises `AuthorizationRequired`); None: a login's provider, which registers a client."""
        super().__init__(
            server_url=server_url,
            client_metadata=client_metadata,
            storage=storage,
            redirect_handler=redirect_handler,
            callback_handler=callback_handler,
            client_metadata_url=client_metadata_url,
        )
        self.vault_storage = storage
        self.needs_login = needs_login
        self.refreshes = 0  # refreshes this provider asked for (tests and status)
        # Whether the authorization server was seen to accept the client: it registered it in
        # this flow, or answered a token request with something else than invalid_client.
        self.client_accepted = False
        if needs_login is None:  # a login's: the browser goes to authorize a client known to be there
            self.context.redirect_handler = self._checking_client(redirect_handler)

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

    def _is_registration(self, request: httpx2.Request) -> bool:
        """The SDK's dynamic client registration request (RFC 7591), about to go out."""
        if request.method != "POST" or self.context.client_info is not None:
            return False
        return request.url == httpx2.URL(self._endpoint("registration_endpoint", "/register"))

    def _endpoint(self, name: str, fallback_path: str) -> str:
        """The authorization server's `name` endpoint from its metadata, else the SDK's fallback
        for a server without metadata (`fallback_path` on the authorization base URL)."""
        context = self.context
        endpoint = getattr(context.oauth_metadata, name, None)
        if endpoint is not None:
            return str(endpoint)
        return urljoin(context.get_authorization_base_url(context.server_url), fallback_path)

    def _checking_client(
        self, hand_out: Callable[[str], Awaitable[None]]
    ) -> Callable[[str], Awaitable[None]]:
        async def checked(authorization_url: str) -> None:
            if not self.client_accepted and not await self._client_known():
                if self.vault_storage.settings.client_id:
                    raise LoginFailed(f"server {self.vault_storage.server!r}: {await self._client_refused()}")
                raise ClientForgotten(self.vault_storage.server)
            await hand_out(authorization_url)

        return checked

    async def _client_known(self) -> bool:
        """Whether the authorization server still knows the stored client (see the module's doc)."""
        context = self.context
        info = context.client_info
        if info is None or (context.client_metadata_url and info.client_id == context.client_metadata_url):
            return True  # nothing stored, or a metadata document: the server reads it anew
        token_endpoint = self._endpoint("token_endpoint", "/token")
        data = {
            "grant_type": "refresh_token",
            "refresh_token": f"nexus-client-check-{secrets.token_urlsafe(16)}",  # known to no one
            "client_id": info.client_id,
        }
        data, headers = context.prepare_token_auth(
            data, {"Content-Type": "application/x-www-form-urlencoded"}
        )
        try:
            async with httpx2.AsyncClient(
                timeout=10.0, follow_redirects=False, event_hooks=SIDE_ANSWERS_ONLY
            ) as http:
                answer = await http.post(token_endpoint, data=data, headers=headers)
        except (httpx2.HTTPError, AnswerRefused):
            return True  # the login goes on; the authorization server will say what it thinks
        return not await _says_invalid_client(answer)

    async def _client_refused(self) -> str:
        """A token request was answered `invalid_client`: drop a dynamic registration (and its
        tokens); why the login cannot go on with this client, for the operator."""
        configured = self.vault_storage.settings.client_id
        self.context.clear_tokens()
        if configured:
            logger.warning("server %s: the configured OAuth client was refused", self.vault_storage.server)
            return (
                "the authorization server refused the configured client (invalid_client): "
                f"check auth.client_id {configured!r} and auth.client_secret in the server's config"
            )
        refused = self.context.client_info
        self.context.client_info = None
        if refused is not None:
            await self.vault_storage.forget_client(refused.client_id)
        logger.warning(
            "server %s: the authorization server no longer knows the registered OAuth client "
            "(invalid_client): its registration and tokens were dropped",
            self.vault_storage.server,
        )
        return (
            "the authorization server refused the client registration (invalid_client); "
            "it was dropped, and a new login registers again"
        )

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
                registering = self._is_registration(outgoing)
                if registering and self.needs_login is not None:
                    # A session registers no client: only a login, which a person finishes, does.
                    await flow.aclose()
                    with contextlib.suppress(AuthorizationRequired):
                        await self.needs_login("no stored login")
                    yield request  # its refusal is the answer, as below
                    return
                response = yield outgoing
                self.client_accepted = self.client_accepted or registering
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
                if _is_token_request(outgoing) and await _says_invalid_client(response):
                    why = await self._client_refused()
                    if self.needs_login is not None:
                        await flow.aclose()
                        with contextlib.suppress(AuthorizationRequired):
                            await self.needs_login(why)
                        yield request
                        return
                    if not _is_refresh(outgoing) or self.vault_storage.settings.client_id:
                        raise LoginFailed(f"server {self.vault_storage.server!r}: {why}")
                    # A login's refresh: the SDK goes on to a whole new authorization, which
                    # registers the client anew (its registration was just dropped).
                elif _is_token_request(outgoing):
                    self.client_accepted = True
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
                except ClientForgotten:
                    # A login's stored client is gone: the flow starts again and registers one.
                    await flow.aclose()
                    await self._client_refused()
                    flow = super().async_auth_flow(request)
                    outgoing = await flow.__anext__()
                    continue
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


def _is_token_request(request: httpx2.Request) -> bool:
    """A code exchange or a refresh the SDK sent to the token endpoint."""
    return request.method == "POST" and (
        b"grant_type=refresh_token" in request.content or b"grant_type=authorization_code" in request.content
    )


async def _says_invalid_client(response: httpx2.Response) -> bool:
    """Whether a token endpoint's error is `invalid_client` (RFC 6749 §5.2: 401, or 400)."""
    if response.status_code not in (400, 401):
        return False
    try:
        error = json.loads(await response.aread())
    except ValueError:
        return False
    return isinstance(error, dict) and error.get("error") == "invalid_client"


def _is_refresh(request: httpx2.Request) -> bool:
    """A refresh-token grant the SDK sent to the token endpoint."""
    return request.method == "POST" and b"grant_type=refresh_token" in request.content
