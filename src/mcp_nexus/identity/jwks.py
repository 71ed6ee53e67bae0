"""The issuer's signing keys (its JWKS), fetched once, kept for a while, refetched for a new key id.

Why bounded: a key id the cache does not know may be the issuer's new key after a rotation
(fetch again), or made up by anyone who can send a request (fetching for each would let them
drive our traffic to the issuer). So an unknown key id causes at most one fetch per
`refresh_interval`, concurrent ones wait for the same fetch, and the keys are also refetched
once they are older than `max_age`. A failed refetch keeps the keys already known.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx2
import jwt

from mcp_nexus.identity.issuer_metadata import fetch_json
from mcp_nexus.identity.token_errors import IssuerUnavailable, TokenRejected

logger = logging.getLogger(__name__)


_KEY_TYPE_OF_ALG_PREFIX = {"RS": "RSA", "PS": "RSA", "ES": "EC", "Ed": "OKP"}


@dataclass(frozen=True, slots=True)
class SigningKey:
    """One of the issuer's public keys: the key itself, its type and the algorithm it declares, if any."""

    key: Any  # a cryptography public key object
    key_type: str  # kty: RSA, EC, OKP
    alg: str | None

    def fits(self, alg: str) -> bool:
        """A token signed with `alg` may be checked with this key (kty and, when declared, alg agree)."""
        return _KEY_TYPE_OF_ALG_PREFIX.get(alg[:2]) == self.key_type and self.alg in (None, alg)


class JwksCache:
    """Signing keys by key id, from a JWKS URL found (once) by `jwks_uri()`."""

    def __init__(
        self,
        client: httpx2.AsyncClient,
        jwks_uri: Callable[[], Awaitable[str]],
        *,
        max_age: float = 3600.0,
        refresh_interval: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client = client
        self._jwks_uri = jwks_uri
        self.max_age = max_age
        self.refresh_interval = refresh_interval
        self._clock = clock
        self._keys: dict[str | None, SigningKey] = {}
        self._fetched_at: float | None = None  # when the keys held were fetched
        self._attempted_at: float | None = None  # the last fetch, failed or not: bounds the next one
        self._failure: str | None = None  # why the last fetch failed, while it is the last
        self._lock = asyncio.Lock()
        self.fetches = 0  # JWKS documents fetched (tests and /api status read it)

    def _fresh(self) -> bool:
        return self._fetched_at is not None and self._clock() - self._fetched_at < self.max_age

    def _may_refetch(self) -> bool:
        return self._attempted_at is None or self._clock() - self._attempted_at >= self.refresh_interval

    def _known(self, kid: str | None) -> SigningKey | None:
        if kid is None and len(self._keys) == 1:
            return next(iter(self._keys.values()))  # one key and a token that names none: that key
        return self._keys.get(kid)

    async def key(self, kid: str | None) -> SigningKey:
        """The key a token's header names, or TokenRejected (unknown key) / IssuerUnavailable."""
        known = self._known(kid)
        if known is not None and (self._fresh() or not self._may_refetch()):
            return known  # stale keys are still used until a refetch is due (and if it fails)
        if known is None and not self._may_refetch():
            if self._failure is not None and not self._keys:
                raise IssuerUnavailable(self._failure)
            raise TokenRejected(f"the token's signing key (kid {kid!r}) is not one of the issuer's")
        attempted_before = self._attempted_at
        async with self._lock:
            if self._attempted_at == attempted_before:  # nobody fetched while we waited
                await self._refetch(keep_old=known is not None)
        known = self._known(kid)
        if known is None:
            raise TokenRejected(f"the token's signing key (kid {kid!r}) is not one of the issuer's")
        return known

    async def _refetch(self, *, keep_old: bool) -> None:
        self._attempted_at = self._clock()
        self.fetches += 1
        try:
            document = await fetch_json(self._client, await self._jwks_uri())
            keys = _signing_keys(document)
        except IssuerUnavailable as exc:
            self._failure = exc.description
            if keep_old and self._keys:
                logger.warning("keeping the issuer's keys fetched before: %s", exc.description)
                return
            raise
        self._keys, self._fetched_at, self._failure = keys, self._clock(), None
        logger.info("fetched the issuer's signing keys: %s", ", ".join(str(kid) for kid in keys) or "none")


def _signing_keys(document: dict[str, Any]) -> dict[str | None, SigningKey]:
    """The JWKS's signature keys by key id; encryption keys and kinds PyJWT cannot use are skipped."""
    entries = document.get("keys")
    if not isinstance(entries, list):
        raise IssuerUnavailable("the issuer's JWKS has no 'keys' list")
    keys: dict[str | None, SigningKey] = {}
    for entry in entries:
        if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
            continue
        try:
            key = jwt.PyJWK(entry)
        except (jwt.PyJWKError, jwt.InvalidKeyError):
            continue
        declared = entry.get("alg")
        keys[key.key_id] = SigningKey(
            key.key, str(entry.get("kty")), declared if isinstance(declared, str) else None
        )
    return keys
