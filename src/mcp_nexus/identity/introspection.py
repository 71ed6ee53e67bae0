"""Access tokens checked by asking the issuer (RFC 7662): for opaque tokens, or to see revocations.

The gateway authenticates to the introspection endpoint as its own client (HTTP Basic,
RFC 7662 §2.1, id and secret form-encoded first as RFC 6749 §2.3.1 requires: a secret with `+`,
`%` or a space is otherwise refused or read as another one). An active token must still be for this resource (its `aud`, when the answer
gives one) and from the configured issuer (its `iss`, when given). Answers are reused for
`introspection_cache_seconds` at most (and never past the token's expiry): that is how long a
revoked token may still be accepted, traded against one round trip to the issuer per request.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote_plus

import httpx2

from mcp_nexus.config.identity import ResourceServerSettings
from mcp_nexus.identity.issuer_metadata import json_answer
from mcp_nexus.identity.principal import Principal, principal_from_claims
from mcp_nexus.identity.token_cache import VerifiedTokens
from mcp_nexus.identity.token_errors import IssuerUnavailable, TokenRejected

# The issuer's answers that are about the token, not about the issuer or the gateway's access to it.
_TOKEN_REFUSALS = {"unsupported_token_type", "invalid_token"}


class IntrospectionVerifier:
    def __init__(
        self,
        settings: ResourceServerSettings,
        client: httpx2.AsyncClient,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        assert settings.introspection_endpoint is not None
        self.settings = settings
        self._client = client
        self._clock = clock
        self._audiences = set(settings.accepted_audiences)
        self.verified = VerifiedTokens(settings.token_cache_entries, clock=clock)
        self.requests = 0  # introspection requests made (tests read it)

    async def verify(self, token: str) -> Principal:
        known = self.verified.get(token)
        if known is not None:
            return known
        answer = await self._introspect(token)
        if answer.get("active") is not True:
            raise TokenRejected("the token is not active (revoked, expired or unknown to the issuer)")
        now = self._clock()
        skew = self.settings.clock_skew
        exp, nbf = answer.get("exp"), answer.get("nbf")
        if isinstance(exp, int | float) and now > exp + skew:
            raise TokenRejected("the token has expired")
        if isinstance(nbf, int | float) and now < nbf - skew:
            raise TokenRejected("the token is not valid yet (nbf)")
        issuer = answer.get("iss")
        if issuer is not None and issuer != self.settings.issuer:
            raise TokenRejected(f"the token is not from the issuer {self.settings.issuer}")
        audience = answer.get("aud")
        named = {audience} if isinstance(audience, str) else set(audience or ())
        if audience is not None and not named & self._audiences:
            raise TokenRejected(
                f"the token is not for this resource (its aud must name {self.settings.resource})"
            )
        principal = principal_from_claims(answer, self.settings.issuer, self.settings.groups_claim)
        until = now + self.settings.introspection_cache_seconds
        if isinstance(exp, int | float):
            until = min(until, exp + skew)
        if self.settings.introspection_cache_seconds > 0:
            self.verified.put(token, principal, until)
        return principal

    async def _introspect(self, token: str) -> dict[str, Any]:
        endpoint = self.settings.introspection_endpoint
        assert endpoint is not None
        self.requests += 1

        async def send() -> httpx2.Response:
            response = await self._client.post(
                endpoint,
                data={"token": token, "token_type_hint": "access_token"},
                auth=(
                    quote_plus(self.settings.introspection_client_id or ""),
                    quote_plus(self.settings.introspection_client_secret or ""),
                ),
                headers={"accept": "application/json"},
            )
            if response.status_code != 200:
                raise _refusal(endpoint, response)
            return response

        return await json_answer(send(), endpoint)


def _refusal(endpoint: str, response: httpx2.Response) -> TokenRejected:
    """What an introspection endpoint's error answer means for the caller, naming the issuer's error.

    `unsupported_token_type` or `invalid_token` (e.g. a JWT sent to an issuer that introspects
    only its opaque tokens): the token is refused, 401. Anything else (the gateway's credentials
    refused, the issuer failing) is not the token's fault: 503, so the client keeps its token.
    """
    try:
        body = response.json()
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, str):
        return IssuerUnavailable(f"{endpoint} answered HTTP {response.status_code}")
    description = body.get("error_description") if isinstance(body, dict) else None
    said = f"{error}: {description}" if isinstance(description, str) else error
    if error in _TOKEN_REFUSALS:
        return TokenRejected(f"the issuer does not introspect this token ({said})")
    if error == "invalid_client":
        said += "; check gateway.auth.introspection_client_id and introspection_client_secret"
    return IssuerUnavailable(f"{endpoint} answered HTTP {response.status_code} ({said})")
