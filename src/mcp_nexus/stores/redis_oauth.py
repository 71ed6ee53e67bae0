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
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import Any

from cryptography.fernet import Fernet

from mcp_nexus.config.secrets import mask_url
from mcp_nexus.stores.redis_link import RedisLink, RedisUnavailableError
from mcp_nexus.upstream.oauth.vault import KEY_ENV, TokenVaultError, load_env_key, open_record, seal_record


class RedisTokenVault:
    """The `TokenVault` of a gateway whose `stores.oauth` is Redis."""

    def __init__(self, link: RedisLink, *, prefix: str, env: dict[str, str] | None = None) -> None:
        self.link = link
        self.prefix = f"{prefix}:oauth:login:"
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
