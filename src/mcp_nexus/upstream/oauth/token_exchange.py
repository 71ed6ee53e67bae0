"""RFC 8693 token exchange for a per-user server (`auth: {per_user: true, token_exchange: {...}}`).

The caller's access token is for the gateway (its audience); it is never sent upstream. The
gateway sends it as the `subject_token` to the identity provider's token endpoint, authenticated
as its own client there, asking for the upstream's `resource` (RFC 8707) or `audience`; what
comes back (a token naming the same user, for the upstream) is what the user's session to that
server carries. An exchanged token is reused for the same caller token until shortly before it
expires; a 401 from the upstream exchanges once more.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict
from collections.abc import AsyncGenerator, Awaitable, Callable

import httpx2

from mcp_nexus.config.oauth import TokenExchangeSettings
from mcp_nexus.upstream.bounded_answers import SIDE_ANSWERS_ONLY, AnswerRefused

GRANT = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
EARLY_S = 30.0  # an exchanged token this close to its expiry is exchanged again
DEFAULT_LIFETIME_S = 300.0  # an answer without expires_in is kept this long
MAX_KEPT = 1024  # exchanged tokens kept at most (the oldest go first)


class TokenExchangeFailed(Exception):
    """The identity provider refused the exchange (or could not be asked); says why, never a token."""


class ExchangedTokens:
    """Exchanged tokens by server and (a digest of) the caller's token, while they are good."""

    def __init__(self) -> None:
        self._kept: OrderedDict[tuple[str, str], tuple[str, float]] = OrderedDict()

    async def token(
        self,
        server: str,
        server_url: str,
        settings: TokenExchangeSettings,
        subject_token: str,
        *,
        fresh: bool = False,
    ) -> str:
        key = (server, hashlib.sha256(subject_token.encode()).hexdigest())
        kept = self._kept.get(key)
        if kept is not None and not fresh and kept[1] - EARLY_S > time.time():
            return kept[0]
        token, expires_at = await exchange(server, server_url, settings, subject_token)
        self._kept[key] = (token, expires_at)
        self._kept.move_to_end(key)
        while len(self._kept) > MAX_KEPT:
            self._kept.popitem(last=False)
        return token


async def exchange(
    server: str, server_url: str, settings: TokenExchangeSettings, subject_token: str
) -> tuple[str, float]:
    """One exchange at the identity provider: (the upstream's token, when it expires)."""
    form = {
        "grant_type": GRANT,
        "subject_token": subject_token,
        "subject_token_type": ACCESS_TOKEN_TYPE,
        "requested_token_type": ACCESS_TOKEN_TYPE,
        "resource": settings.resource or server_url,
    }
    if settings.audience:
        form["audience"] = settings.audience
    if settings.scope:
        form["scope"] = settings.scope
    auth = (settings.client_id, settings.client_secret or "")
    try:
        async with httpx2.AsyncClient(
            timeout=15.0, follow_redirects=False, event_hooks=SIDE_ANSWERS_ONLY
        ) as http:
            answer = await http.post(settings.token_endpoint, data=form, auth=auth)
    except (httpx2.HTTPError, AnswerRefused) as exc:
        raise TokenExchangeFailed(
            f"server {server!r}: the token exchange at {settings.token_endpoint} failed: {exc}"
        ) from None
    try:
        body = answer.json()
    except ValueError:
        body = {}
    if answer.status_code != 200 or not isinstance(body, dict) or not body.get("access_token"):
        error = body.get("error") if isinstance(body, dict) else None
        detail = body.get("error_description") if isinstance(body, dict) else None
        said = f"{error}: {detail}" if error and detail else error or f"HTTP {answer.status_code}"
        raise TokenExchangeFailed(
            f"server {server!r}: the identity provider refused the token exchange ({said})"
        )
    lifetime = body.get("expires_in")
    expires_at = time.time() + (float(lifetime) if isinstance(lifetime, int | float) else DEFAULT_LIFETIME_S)
    return str(body["access_token"]), expires_at


class ExchangedTokenAuth(httpx2.Auth):
    """A user's session's credential: the exchanged token, exchanged again once on a 401."""

    def __init__(self, token: Callable[[bool], Awaitable[str]]) -> None:
        self._token = token  # fresh -> the token to send

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        request.headers["Authorization"] = f"Bearer {await self._token(False)}"
        response = yield request
        if response.status_code == 401:
            request.headers["Authorization"] = f"Bearer {await self._token(True)}"
            yield request
