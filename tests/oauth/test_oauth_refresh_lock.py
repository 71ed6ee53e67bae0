"""The refresh lock of OAuth logins kept in Redis: one replica refreshes, the others adopt.

Real parts: a real redis-server (tests/support/redis_server.py), and for the end-to-end test two
`nexus serve` processes sharing it in front of the OAuth-protected test server (oauth_peer.py),
whose refreshes are slowed down so that two replicas' refreshes would overlap without the lock.
Two sessions of one gateway share its in-memory lock the same way (file vault, no Redis).
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import httpx2
from cryptography.fernet import Fernet
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata
from pydantic import AnyUrl

from mcp_nexus.config.oauth import OAuthSettings
from mcp_nexus.stores.redis_link import RedisLink
from mcp_nexus.stores.redis_oauth import RedisTokenVault
from mcp_nexus.upstream.oauth.provider import NexusOAuthProvider
from mcp_nexus.upstream.oauth.storage import VaultTokenStorage
from mcp_nexus.upstream.oauth.vault import EncryptedFileVault
from oauth.oauth_peer_process import oauth_peer
from oauth.test_oauth_login_served import _login
from oauth.test_oauth_logins_in_redis import _config
from support.redis_server import redis_server
from support.served_gateway import ServedGateway, gateway_env, served


def _call_together(gateways: list[ServedGateway]) -> list[httpx2.Response]:
    """One call to each gateway, all sent at the same instant."""
    start = threading.Barrier(len(gateways))
    answers: list[httpx2.Response | None] = [None] * len(gateways)

    def call(index: int) -> None:
        start.wait()
        answers[index] = gateways[index].call("locked.add", {"a": index, "b": 40})

    threads = [threading.Thread(target=call, args=(i,)) for i in range(len(gateways))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert all(answer is not None for answer in answers), "a call did not come back within 30 s"
    return [answer for answer in answers if answer is not None]


def test_two_replicas_hitting_an_expired_token_at_once_refresh_it_once(tmp_path: Path) -> None:
    key = Fernet.generate_key().decode()
    prefix = f"t{uuid.uuid4().hex[:8]}"
    # Each refresh takes 0.6 s at the authorization server: both replicas' 401s come back well
    # within that, so without the lock both would send their refresh.
    with (
        oauth_peer(tmp_path / "peer.log", refresh_delay=0.6) as peer,
        redis_server(tmp_path / "redis") as redis,
    ):
        config = _config(tmp_path / "nexus.json", peer.mcp_url, redis.url, prefix)
        first_dir, second_dir = tmp_path / "a", tmp_path / "b"
        first_dir.mkdir()
        second_dir.mkdir()
        with (
            served(config, first_dir, env=gateway_env(first_dir, NEXUS_OAUTH_KEY=key)) as first,
            served(config, second_dir, env=gateway_env(second_dir, NEXUS_OAUTH_KEY=key)) as second,
        ):
            first.wait_state("locked", "NEEDS_AUTH")
            _login(first)
            first.wait_state("locked", "READY")
            # The second replica was told nothing: its restart policy retries into READY once
            # the login is in Redis; a restart through its admin API gets there at once.
            assert second.post("/api/servers/locked/restart").status_code in (200, 202)
            second.wait_state("locked", "READY")
            for gateway in (first, second):  # both sessions hold the login's first token
                assert gateway.call("locked.add", {"a": 1, "b": 1}).status_code == 200
            assert peer.stats()["refresh_attempts"] == 0

            peer.expire()  # every access token is refused from now: both replicas get a 401
            answers = _call_together([first, second])
            assert [a.status_code for a in answers] == [200, 200], [a.text for a in answers]
            assert "40" in answers[0].text and "41" in answers[1].text
            stats = peer.stats()
            assert stats["refresh_attempts"] == 1, stats  # one refresh, the other replica adopted it
            assert stats["refreshes"] == 1, stats
            assert stats["code_exchanges"] == 1, stats  # and nobody had to log in again
            assert {first.servers()["locked"]["state"], second.servers()["locked"]["state"]} == {"READY"}
            log = first.log.read_text() + second.log.read_text()
        assert "using the login refreshed elsewhere" in log


async def test_the_lock_is_held_by_one_at_a_time_and_released_only_by_its_holder(tmp_path: Path) -> None:
    with redis_server(tmp_path / "redis") as redis:
        links = [RedisLink(redis.url), RedisLink(redis.url)]  # two replicas: two connections
        env = {"NEXUS_OAUTH_KEY": Fernet.generate_key().decode()}
        first, second = (RedisTokenVault(link, prefix="t", env=env) for link in links)
        try:
            order: list[str] = []

            async def refresh(vault: RedisTokenVault, name: str) -> None:
                async with vault.refresh_lock("locked"):
                    order.append(f"{name} in")
                    await asyncio.sleep(0.2)
                    order.append(f"{name} out")

            await asyncio.gather(refresh(first, "a"), refresh(second, "b"))
            assert order in (["a in", "a out", "b in", "b out"], ["b in", "b out", "a in", "a out"]), order
            assert await links[0].client.exists("t:oauth:refresh-lock:locked") == 0

            # A holder whose lock expired (it took too long) and was taken by another replica
            # leaves the other's lock alone when it finishes.
            first.lock_ttl_ms = 100
            async with first.refresh_lock("locked"):
                await asyncio.sleep(0.3)
                assert await links[0].client.exists("t:oauth:refresh-lock:locked") == 0
                async with second.refresh_lock("locked"):
                    pass  # taken at once: the expired lock is not in the way
                await links[1].client.set("t:oauth:refresh-lock:locked", "another-holder")
            assert await links[1].client.get("t:oauth:refresh-lock:locked") == b"another-holder"

            # Held by a replica that died: the others wait at most lock_wait_s, then go on.
            second.lock_wait_s = 0.3
            async with second.refresh_lock("locked"):
                pass
            assert await links[1].client.get("t:oauth:refresh-lock:locked") == b"another-holder"
        finally:
            for link in links:
                await link.close()


# Any request the MCP endpoint protects does: an initialize answers 200 once the token is good.
HELLO = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "lock", "version": "1"}}
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": HELLO}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def _session_provider(mcp_url: str, storage: VaultTokenStorage) -> NexusOAuthProvider:
    """A session's OAuth provider whose login is approved at once (the test server approves)."""
    redirected: list[str] = []

    async def follow(authorization_url: str) -> None:
        async with httpx2.AsyncClient(timeout=10) as browser:
            redirected.append((await browser.get(authorization_url)).headers["location"])

    async def come_back() -> AuthorizationCodeResult:
        query = {k: v[0] for k, v in parse_qs(urlparse(redirected[-1]).query).items()}
        return AuthorizationCodeResult(code=query["code"], state=query.get("state"), iss=query.get("iss"))

    metadata = OAuthClientMetadata(
        redirect_uris=[AnyUrl(storage.redirect_uri)],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
    )
    return NexusOAuthProvider(
        server_url=mcp_url,
        client_metadata=metadata,
        storage=storage,
        redirect_handler=follow,
        callback_handler=come_back,
    )


async def test_two_sessions_of_one_gateway_hitting_an_expired_token_refresh_it_once(tmp_path: Path) -> None:
    with oauth_peer(tmp_path / "peer.log", refresh_delay=0.6) as peer:
        vault = EncryptedFileVault(tmp_path / "oauth", env={})
        # The callback is never opened: the approval's redirect is read by the provider above.
        storage = VaultTokenStorage(
            "locked", peer.mcp_url, "http://127.0.0.1:9/oauth/callback", OAuthSettings(), vault
        )
        first, second = (_session_provider(peer.mcp_url, storage) for _ in range(2))
        async with (
            httpx2.AsyncClient(auth=first, timeout=30) as a,
            httpx2.AsyncClient(auth=second, timeout=30) as b,
        ):
            for client in (a, b):  # the first logs in, the second uses the stored login
                answer = await client.post(peer.mcp_url, json=INITIALIZE, headers=MCP_HEADERS)
                assert answer.status_code == 200, answer.text
            await asyncio.to_thread(peer.expire)
            answers = await asyncio.gather(
                *(client.post(peer.mcp_url, json=INITIALIZE, headers=MCP_HEADERS) for client in (a, b))
            )
            assert [answer.status_code for answer in answers] == [200, 200], [a.text for a in answers]
        stats = await asyncio.to_thread(peer.stats)
        assert stats["code_exchanges"] == 1, stats
        assert stats["refresh_attempts"] == 1, stats
