"""OAuth logins to upstream servers in Redis (`stores.oauth: redis://...`): one login for every replica.

Each server's login record (its client registration and tokens, upstream/oauth/storage.py) is
one key, `<prefix>:oauth:login:<server>`, holding the record sealed with Fernet exactly as the
file vault seals it (upstream/oauth/vault.py). What one replica's login or refresh writes is
what every other replica reads; a replica whose token was refreshed elsewhere adopts the
stored one instead of refreshing with a spent refresh token (upstream/oauth/provider.py).

The key is `$NEXUS_OAUTH_KEY` and nothing else: it is never written to Redis (a key kept beside
the ciphertext would let whoever reads Redis read every token), and not the data folder's key
file either (each replica would make its own, and a login sealed under one would read as no
login on the others, which would then overwrite it with theirs). Without it, an OAuth server's
connect fails with an error that says so.

Redis down: the login cannot be read, so the connect fails (ERROR, retried with the restart
policy); a login or refresh cannot be saved, and says why.

A refresh runs under a lock every replica sees, `<prefix>:oauth:refresh-lock:<server>` (SET NX
PX, released only by its holder: a random token, compared and deleted by one Lua script). Two
replicas that find the token expired at the same instant would otherwise both spend a refresh
token the authorization server rotates, and the loser's refusal would cost it a round trip (or,
on a server that revokes the whole family on reuse, the login). The one that waited reads the
stored login once it has the lock and adopts the refreshed token (upstream/oauth/provider.py).
The lock expires by itself after `REFRESH_LOCK_TTL_MS`, so a replica that dies holding it
delays the others by that at most; a replica that waits longer than `REFRESH_LOCK_WAIT_S`
refreshes without it (the re-read after a refused refresh still saves it).
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from cryptography.fernet import Fernet

from mcp_nexus.config.secrets import mask_url
from mcp_nexus.stores.redis_link import RedisLink, RedisUnavailableError
from mcp_nexus.upstream.oauth.vault import KEY_ENV, TokenVaultError, load_env_key, open_record, seal_record

logger = logging.getLogger(__name__)

REFRESH_LOCK_TTL_MS = 15_000  # longer than a refresh takes; a dead holder frees it by then
REFRESH_LOCK_WAIT_S = 15.0
REFRESH_LOCK_POLL_S = 0.05
# Delete the lock only if it still holds our token (it may have expired and been taken by another).
_RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end"


class RedisTokenVault:
    """The `TokenVault` of a gateway whose `stores.oauth` is Redis."""

    def __init__(self, link: RedisLink, *, prefix: str, env: dict[str, str] | None = None) -> None:
        self.link = link
        self.prefix = f"{prefix}:oauth:login:"
        self.lock_prefix = f"{prefix}:oauth:refresh-lock:"
        self.lock_ttl_ms = REFRESH_LOCK_TTL_MS
        self.lock_wait_s = REFRESH_LOCK_WAIT_S
        self._env = env
        self._cipher: Fernet | None = None

    def key(self, server: str) -> str:
        return self.prefix + server

    @property
    def location(self) -> str:
        return f"{mask_url(self.link.url)} key {self.prefix}*"

    def cipher(self) -> Fernet:
        if self._cipher is None:
            key = load_env_key(os.environ if self._env is None else self._env)
            if key is None:
                raise TokenVaultError(
                    f"stores.oauth keeps OAuth logins in Redis: set ${KEY_ENV} to a Fernet key, the same on "
                    'every replica (python -c "from cryptography.fernet import Fernet; '
                    'print(Fernet.generate_key().decode())")'
                )
            self._cipher = Fernet(key)
        return self._cipher

    async def _run(self, doing: str, operation: Callable[[Any], Awaitable[Any]]) -> Any:
        try:
            return await self.link.run(operation)
        except RedisUnavailableError as exc:
            raise TokenVaultError(f"cannot {doing} ({self.location}): {exc}") from exc

    async def load(self, server: str) -> dict[str, Any] | None:
        cipher = self.cipher()
        key = self.key(server)
        sealed = await self._run(f"read the OAuth login of {server!r}", lambda client: client.get(key))
        if sealed is None:
            return None
        return open_record(cipher, sealed.encode() if isinstance(sealed, str) else sealed, server)

    async def save(self, server: str, record: dict[str, Any]) -> None:
        sealed, key = seal_record(self.cipher(), record), self.key(server)
        await self._run(f"save the OAuth login of {server!r}", lambda client: client.set(key, sealed))

    async def delete(self, server: str) -> bool:
        key = self.key(server)
        return bool(
            await self._run(f"forget the OAuth login of {server!r}", lambda client: client.delete(key))
        )

    @asynccontextmanager
    async def refresh_lock(self, server: str) -> AsyncIterator[None]:
        """Held by one replica at a time while it refreshes `server`'s login (see the module doc)."""
        key, token = self.lock_prefix + server, secrets.token_hex(16)
        doing = f"lock the OAuth login of {server!r} for a refresh"
        deadline = time.monotonic() + self.lock_wait_s
        held = False
        while not held:
            held = bool(
                await self._run(doing, lambda client: client.set(key, token, nx=True, px=self.lock_ttl_ms))
            )
            if not held and time.monotonic() >= deadline:
                logger.warning(
                    "server %s: another replica held the refresh lock for %g s: refreshing without it",
                    server,
                    self.lock_wait_s,
                )
                break
            if not held:
                await asyncio.sleep(REFRESH_LOCK_POLL_S)
        try:
            yield
        finally:
            if held:
                try:
                    await self._run(doing, lambda client: client.eval(_RELEASE, 1, key, token))
                except TokenVaultError as exc:  # it expires by itself
                    logger.warning("server %s: the refresh lock was not released: %s", server, exc)
