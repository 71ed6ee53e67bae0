"""Access tokens checked by asking the issuer (RFC 7662): for opaque tokens, or to see revocations.

The gateway authenticates to the introspection endpoint as its own client (HTTP Basic,
RFC 7662 §2.1). An active token must still be for this resource (its `aud`, when the answer
gives one) and from the configured issuer (its `iss`, when given). Answers are reused for
`introspection_cache_seconds` at most (and never past the token's expiry): that is how long a
revoked token may still be accepted, traded against one round trip to the issuer per request.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx2

from mcp_nexus.config.identity import ResourceServerSettings
from mcp_nexus.identity.issuer_metadata import json_answer
from mcp_nexus.identity.principal import Principal, principal_from_claims
from mcp_nexus.identity.token_cache import VerifiedTokens
from mcp_nexus.identity.token_errors import TokenRejected


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
        request = self._client.post(
            endpoint,
            data={"token": token, "token_type_hint": "access_token"},
            auth=(
                self.settings.introspection_client_id or "",
                self.settings.introspection_client_secret or "",
            ),
            headers={"accept": "application/json"},
        )
        return await json_answer(request, endpoint)
