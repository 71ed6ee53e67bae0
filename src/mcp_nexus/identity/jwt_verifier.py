"""Access tokens as JWTs (RFC 9068): signed by the issuer's key, for this resource, in date.

Checked, in order: the header (an accepted asymmetric algorithm; its key id among the issuer's
keys, jwks.py), the signature, then the claims: `iss` is the issuer, `aud` names this resource
(RFC 8707), `exp` and `nbf` with the configured skew. A token that passed is remembered until
it expires (token_cache.py).
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable
from typing import Any

import jwt

from mcp_nexus.config.identity import ResourceServerSettings
from mcp_nexus.identity.jwks import JwksCache, SigningKey
from mcp_nexus.identity.principal import Principal, principal_from_claims
from mcp_nexus.identity.token_cache import VerifiedTokens
from mcp_nexus.identity.token_errors import TokenRejected

_REQUIRED_CLAIMS = ["exp", "iss", "aud"]


def _header(token: str) -> dict[str, Any]:
    """The JOSE header, read without checking anything else (that is jwt.decode's, once the key is known).

    Not `jwt.get_unverified_header`: it checks every segment's base64 character by character in
    Python, which `jwt.decode` then does again: a third of a validation's cost (bench/jwt_validation.py).
    """
    first = token.partition(".")[0]
    try:
        header = json.loads(base64.urlsafe_b64decode(first + "=" * (-len(first) % 4)))
    except (ValueError, TypeError):
        raise TokenRejected("the token is not a JWT (its header does not decode)") from None
    if not isinstance(header, dict) or token.count(".") != 2:
        raise TokenRejected("the token is not a JWT (header.payload.signature)")
    return header


class JwtVerifier:
    def __init__(
        self, settings: ResourceServerSettings, keys: JwksCache, *, clock: Callable[[], float] = time.time
    ) -> None:
        self.settings = settings
        self.keys = keys
        self._clock = clock
        self._audiences = settings.accepted_audiences
        self._algorithms = frozenset(settings.algorithms)
        self.verified = VerifiedTokens(settings.token_cache_entries, clock=clock)

    async def verify(self, token: str) -> Principal:
        """The token's principal, or TokenRejected saying what is wrong with it."""
        known = self.verified.get(token)
        if known is not None:
            return known
        header = _header(token)
        alg = header.get("alg")
        if alg not in self._algorithms:
            raise TokenRejected(
                f"the token is signed with {alg!r}; accepted: {', '.join(sorted(self._algorithms))}"
            )
        kid = header.get("kid")
        key = await self.keys.key(kid if isinstance(kid, str) else None)
        if not key.fits(alg):
            raise TokenRejected(
                f"the token's algorithm {alg!r} does not fit its key ({key.key_type}, {key.alg})"
            )
        claims = self._decode(token, key, alg)
        principal = principal_from_claims(claims, self.settings.issuer, self.settings.groups_claim)
        self.verified.put(token, principal, float(claims["exp"]) + self.settings.clock_skew)
        return principal

    def _decode(self, token: str, key: SigningKey, alg: str) -> dict[str, Any]:
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key.key,
                algorithms=[alg],
                audience=self._audiences,
                issuer=self.settings.issuer,
                leeway=self.settings.clock_skew,
                options={"require": _REQUIRED_CLAIMS},
            )
        except jwt.ExpiredSignatureError:
            raise TokenRejected("the token has expired") from None
        except jwt.ImmatureSignatureError as exc:
            raise TokenRejected(f"the token is not valid yet ({exc})") from None
        except jwt.InvalidAudienceError:
            raise TokenRejected(
                f"the token is not for this resource (its aud must name {self.settings.resource})"
            ) from None
        except jwt.InvalidIssuerError:
            raise TokenRejected(f"the token is not from the issuer {self.settings.issuer}") from None
        except jwt.MissingRequiredClaimError as exc:
            raise TokenRejected(f"the token has no {exc.claim!r} claim") from None
        except jwt.InvalidSignatureError:
            raise TokenRejected("the token's signature does not verify") from None
        except jwt.InvalidTokenError as exc:
            raise TokenRejected(f"the token is malformed ({exc})") from None
        return claims
