"""OAuth logins in Redis (`stores.oauth`): a second replica uses the first replica's login.

Real parts: two `nexus serve` processes, each with its own data folder, sharing a real
redis-server (tests/support/redis_server.py) and `$NEXUS_OAUTH_KEY`, in front of the
OAuth-protected test server (oauth_peer.py).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet

from mcp_nexus.stores.redis_link import RedisLink
from mcp_nexus.stores.redis_oauth import RedisTokenVault
from mcp_nexus.upstream.oauth.vault import TokenVaultError
from oauth.oauth_peer_process import oauth_peer
from oauth.test_oauth_login_served import _login
from support.redis_server import redis_server
from support.served_gateway import gateway_env, served


def _config(path: Path, mcp_url: str, redis_url: str, prefix: str) -> Path:
    document: dict[str, Any] = {
        # timeout: sharing is checked here, not speed (tests/scale/test_stores_redis.py, `document`).
        "stores": {"oauth": redis_url, "key_prefix": prefix, "timeout": 5},
        "servers": {"locked": {"transport": "http", "url": mcp_url, "auth": "oauth"}},
    }
    path.write_text(json.dumps(document))
    return path


def test_a_second_replica_uses_the_first_replicas_login_and_its_refresh(tmp_path: Path) -> None:
    key = Fernet.generate_key().decode()
    prefix = f"t{uuid.uuid4().hex[:8]}"
    with oauth_peer(tmp_path / "peer.log") as peer, redis_server(tmp_path / "redis") as redis:
        config = _config(tmp_path / "nexus.json", peer.mcp_url, redis.url, prefix)
        first_dir, second_dir = tmp_path / "a", tmp_path / "b"
        first_dir.mkdir()
        second_dir.mkdir()
        first_env = gateway_env(first_dir, NEXUS_OAUTH_KEY=key)
        with served(config, first_dir, env=first_env) as first:
            first.wait_state("locked", "NEEDS_AUTH")
            _login(first)
            first.wait_state("locked", "READY")
            assert peer.stats()["code_exchanges"] == 1
            # Nothing in the data folder: the login is in Redis, sealed, the key not beside it.
            assert not list((first_dir / "data").glob("oauth/*.login"))
            stored = _redis_values(redis.port, prefix)
            assert list(stored) == [f"{prefix}:oauth:login:locked"], stored
            assert not [t for t in peer.issued() for v in stored.values() if t.encode() in v]
            assert not [v for v in stored.values() if key.encode() in v]

            with served(config, second_dir, env=gateway_env(second_dir, NEXUS_OAUTH_KEY=key)) as second:
                second.wait_state("locked", "READY")  # no login of its own
                answer = second.call("locked.add", {"a": 20, "b": 22})
                assert answer.status_code == 200 and "42" in answer.text, answer.text
                assert peer.stats()["code_exchanges"] == 1

                # Every access token expires; the first replica refreshes (the refresh token
                # rotates); the second adopts that refresh instead of spending the old one.
                peer.expire()
                assert first.call("locked.add", {"a": 1, "b": 2}).status_code == 200
                assert peer.stats()["refreshes"] == 1
                again = second.call("locked.add", {"a": 2, "b": 2})
                assert again.status_code == 200 and "4" in again.text, again.text
                assert peer.stats()["refreshes"] == 1
                assert second.servers()["locked"]["state"] == "READY"
                log = first.log.read_text() + second.log.read_text()
        assert not [token for token in peer.issued() if token in log]


def _redis_values(port: int, prefix: str) -> dict[str, bytes]:
    import redis as redis_sync

    client = redis_sync.Redis(host="127.0.0.1", port=port)
    try:
        return {k.decode(): client.get(k) or b"" for k in client.keys(f"{prefix}:*")}
    finally:
        client.close()


async def test_logins_in_redis_need_the_key_from_the_environment(tmp_path: Path) -> None:
    with redis_server(tmp_path / "redis") as redis:
        link = RedisLink(redis.url)
        try:
            vault = RedisTokenVault(link, prefix="t", env={})
            with pytest.raises(TokenVaultError, match=r"\$NEXUS_OAUTH_KEY"):
                await vault.load("locked")
            sealed_here = RedisTokenVault(
                link, prefix="t", env={"NEXUS_OAUTH_KEY": Fernet.generate_key().decode()}
            )
            await sealed_here.save("locked", {"tokens": {"access_token": "secret-token"}})
            assert await sealed_here.load("locked") == {"tokens": {"access_token": "secret-token"}}
            # Another key reads it as no login (a new login is asked for), never as garbage.
            other = RedisTokenVault(link, prefix="t", env={"NEXUS_OAUTH_KEY": Fernet.generate_key().decode()})
            assert await other.load("locked") is None
            assert await sealed_here.delete("locked") is True
            assert await sealed_here.load("locked") is None
        finally:
            await link.close()
