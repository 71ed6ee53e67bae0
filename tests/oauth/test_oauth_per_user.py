"""A per-user upstream (`auth: {per_user: true}`) behind a gateway whose callers are users of a
real OpenID provider: each user logs in to the upstream once, through the URL the gateway hands
out (a -32042 URL elicitation), and every call of theirs carries their own token there."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import httpx2

from identity.oidc_peer import ACCEPT, Idp
from mcp_nexus.config.load import config_from_document
from mcp_nexus.pipeline.call import Caller
from mcp_nexus.runtime import Runtime, RuntimeOptions
from mcp_nexus.upstream.user_sessions import user_sessions
from oauth.oauth_peer_process import OAuthPeer, oauth_peer
from support.polling import eventually
from support.processes import free_port

URL_ELICITATION = {"elicitation": {"form": {}, "url": {}}}


@dataclass
class Setup:
    runtime: Runtime
    peer: OAuthPeer | None  # None: an upstream other than the OAuth peer
    idp: Idp
    resource: str  # the gateway's own audience: callers' tokens are for it

    @property
    def base(self) -> str:
        return self.resource.removesuffix("/mcp")

    def user_token(self, user: str) -> str:
        return self.idp.token(user, resource=self.resource)


@asynccontextmanager
async def per_user_gateway(
    tmp_path: Path, idp: Idp, *, server_extra: dict[str, Any] | None = None, **auth: Any
) -> AsyncIterator[Setup]:
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    with oauth_peer(tmp_path / "peer.log") as peer:
        server = {
            "transport": "http",
            "url": peer.mcp_url,
            "auth": {"per_user": True, **auth},
            **(server_extra or {}),
        }
        document = {
            "gateway": {
                "include_builtins": False,
                "offload_threshold": None,
                "port": port,
                "auth": {"resource": resource, "issuer": idp.issuer, "admin_scope": "nexus:admin"},
            },
            "servers": {"notes": server},
        }
        config, _ = config_from_document(document)
        options = RuntimeOptions(bridge=False, watch=False, wait_ready=False)
        async with Runtime(config, options) as runtime:
            setup = Setup(runtime, peer, idp, resource)
            await _operator_login(setup)
            yield setup


async def _browser(url: str) -> httpx2.Response:
    """A browser: the authorization URL (the peer approves at once), then back to the gateway."""
    async with httpx2.AsyncClient(timeout=30) as http:
        return await http.get(await _approved(url))


async def _approved(url: str) -> str:
    """The authorization URL opened: where the authorization server sends the browser back."""
    async with httpx2.AsyncClient(timeout=30) as http:
        answer = await http.get(url, follow_redirects=False)
    assert answer.status_code in (302, 303, 307), answer.text
    location = str(answer.headers["location"])
    assert urlparse(location).path == "/oauth/callback", location
    return location


async def _operator_login(setup: Setup) -> None:
    admin = setup.idp.token("admin", scope="nexus:admin", resource=setup.resource)
    async with httpx2.AsyncClient(timeout=30, headers={"Authorization": f"Bearer {admin}"}) as http:
        started = await http.post(f"{setup.base}/api/auth/notes/login")
    assert started.status_code == 200, started.text
    back = await _browser(started.json()["authorization_url"])
    assert back.status_code == 200, back.text
    upstream = setup.runtime.gateway.upstreams["notes"]
    await eventually(lambda: upstream.is_ready, timeout=10, what="notes READY after the operator login")


class McpUser:
    """One user's MCP client over the gateway's HTTP frontend (2025-11-25, their own token)."""

    def __init__(self, setup: Setup, user: str, capabilities: dict[str, Any] | None = None) -> None:
        self.setup = setup
        self.token = setup.user_token(user)
        self.capabilities = URL_ELICITATION if capabilities is None else capabilities
        self.headers: dict[str, str] | None = None
        self.next_id = 1

    async def _post(self, http: httpx2.AsyncClient, message: dict[str, Any], headers: dict[str, str]) -> Any:
        answer = await http.post(self.setup.resource, headers=headers, json=message)
        assert answer.status_code in (200, 202), answer.text
        if "id" not in message:
            return answer
        if answer.headers.get("content-type", "").startswith("text/event-stream"):
            data = [line[5:] for line in answer.text.splitlines() if line.startswith("data:")]
            return json.loads(data[-1])
        return answer.json()

    async def call(self, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """The JSON-RPC response to tools/call: its `result` or its `error`."""
        return await self.request("tools/call", {"name": tool, "arguments": arguments or {}})

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The JSON-RPC response to any request on this user's session: its `result` or its `error`."""
        auth = {"Authorization": f"Bearer {self.token}"}
        async with httpx2.AsyncClient(timeout=30, headers=auth) as http:
            if self.headers is None:
                hello = {
                    "jsonrpc": "2.0",
                    "id": 0,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": self.capabilities,
                        "clientInfo": {"name": "ide", "version": "1"},
                    },
                }
                opened = await http.post(self.setup.resource, headers=ACCEPT, json=hello)
                assert opened.status_code == 200, opened.text
                self.headers = {
                    **ACCEPT,
                    "Mcp-Session-Id": opened.headers["mcp-session-id"],
                    "Mcp-Protocol-Version": "2025-11-25",
                }
                await self._post(
                    http, {"jsonrpc": "2.0", "method": "notifications/initialized"}, self.headers
                )
            self.next_id += 1
            request = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
            return dict(await self._post(http, request, self.headers))

    async def whoami(self) -> str:
        """Whose token the upstream saw on this user's call."""
        answer = await self.call("notes.whoami")
        assert "result" in answer, answer
        return str(answer["result"]["content"][0]["text"])

    async def login_url(self) -> str:
        """Call without a login: the login URL of the -32042 answer."""
        refused = await self.call("notes.whoami")
        error = refused.get("error")
        assert error is not None and error["code"] == -32042, refused
        [elicitation] = error["data"]["elicitations"]
        assert elicitation["mode"] == "url" and "notes" in elicitation["message"], elicitation
        url = str(elicitation["url"])
        assert urlparse(url).hostname == "127.0.0.1" and "state" in parse_qs(urlparse(url).query)
        return url

    async def log_in(self, peer: OAuthPeer, *, as_subject: str | None = None) -> str:
        """Call without a login, follow the URL of the -32042 answer as `as_subject`; the URL."""
        url = await self.login_url()
        peer.next_subject(as_subject or "-")
        back = await _browser(url)
        assert back.status_code == 200, back.text
        return url


async def test_each_user_calls_with_their_own_login(tmp_path: Path, idp: Idp) -> None:
    async with per_user_gateway(tmp_path, idp) as setup:
        peer = setup.peer
        alice, bob = McpUser(setup, "alice"), McpUser(setup, "bob")
        await alice.log_in(peer, as_subject="alice")
        assert await alice.whoami() == "alice"
        # bob has no login yet: he is told where to log in, and alice's login is not his
        bob_url = await bob.log_in(peer, as_subject="bob")
        assert await bob.whoami() == "bob"
        assert await alice.whoami() == "alice"
        assert "alice" not in bob_url
        # the upstream never saw a token the gateway's callers hold (theirs are for the gateway)
        presented = peer.presented()
        assert presented and alice.token not in presented and bob.token not in presented
        assert set(presented) <= set(peer.issued())
        # a caller without a user (the operator's view: tools/list) still goes through the shared login
        assert "notes.whoami" in setup.runtime.gateway.catalog.tools


async def test_a_client_without_url_elicitation_gets_the_login_url_in_the_error(
    tmp_path: Path, idp: Idp
) -> None:
    async with per_user_gateway(tmp_path, idp) as setup:
        carol = McpUser(setup, "alice", capabilities={})
        refused = await carol.call("notes.whoami")
        error = refused["error"]
        assert error["code"] == -32003, refused
        assert error["data"]["login_url"] in error["message"] and error["data"]["user"] == "user:alice"


async def test_user_sessions_are_bounded_least_recently_used_closed_first(tmp_path: Path, idp: Idp) -> None:
    async with per_user_gateway(tmp_path, idp, max_user_sessions=2) as setup:
        users = {name: McpUser(setup, name) for name in ("alice", "bob", "admin")}
        for name, user in users.items():
            await user.log_in(setup.peer, as_subject=name)
            assert await user.whoami() == name
        pool = user_sessions(setup.runtime.gateway.upstreams["notes"])
        assert pool.open_count == 2
        assert pool.identities() == ["user:bob", "user:admin"]  # alice's, the oldest, was closed
        assert await users["alice"].whoami() == "alice"  # reopened from her stored login
        assert pool.identities() == ["user:admin", "user:alice"]


async def test_cached_results_stay_the_users_and_callers_without_a_user_use_the_operators_login(
    tmp_path: Path,
    idp: Idp,
) -> None:
    cached = {"tool_config": {"whoami": {"cache_ttl": 60}}}
    async with per_user_gateway(tmp_path, idp, server_extra=cached) as setup:
        alice, bob = McpUser(setup, "alice"), McpUser(setup, "bob")
        await alice.log_in(setup.peer, as_subject="alice")
        assert await alice.whoami() == "alice"
        seen = len(setup.peer.presented())
        assert await alice.whoami() == "alice"  # her cached result: the upstream is not asked again
        assert len(setup.peer.presented()) == seen
        await bob.log_in(setup.peer, as_subject="bob")
        assert await bob.whoami() == "bob"  # never alice's cached one
        # stdio (no token, no user): the operator's login, never a user's
        operator = await setup.runtime.gateway.call_tool("notes.whoami", {}, caller=Caller("stdio", "cli"))
        assert operator.content[0].text == "operator"  # type: ignore[union-attr]


async def test_an_idle_users_session_is_closed_and_reopened_on_their_next_call(
    tmp_path: Path, idp: Idp
) -> None:
    async with per_user_gateway(tmp_path, idp, user_session_idle_s=0.3) as setup:
        alice = McpUser(setup, "alice")
        await alice.log_in(setup.peer, as_subject="alice")
        assert await alice.whoami() == "alice"
        pool = user_sessions(setup.runtime.gateway.upstreams["notes"])
        assert pool.open_count == 1
        await eventually(lambda: pool.open_count == 0, timeout=5, what="the idle session closed")
        assert await alice.whoami() == "alice"
        assert pool.open_count == 1


async def test_a_login_stores_the_token_of_the_user_who_started_it_only(tmp_path: Path, idp: Idp) -> None:
    async with per_user_gateway(tmp_path, idp) as setup:
        peer = setup.peer
        assert peer is not None
        alice, bob = McpUser(setup, "alice"), McpUser(setup, "bob")
        alice_url, bob_url = await alice.login_url(), await bob.login_url()
        assert parse_qs(urlparse(alice_url).query)["state"] != parse_qs(urlparse(bob_url).query)["state"]
        # bob's login comes back first: it is his, and alice still has none (her login still waits)
        peer.next_subject("bob")
        bob_back = await _approved(bob_url)
        async with httpx2.AsyncClient(timeout=30) as http:
            assert (await http.get(bob_back)).status_code == 200
            assert await bob.whoami() == "bob"
            assert await alice.login_url() == alice_url
            # the same callback again (its state used): nothing is stored for anybody
            replayed = await http.get(bob_back)
        assert replayed.status_code == 400 and "no login is waiting for this callback" in replayed.text
        peer.next_subject("alice")
        assert (await _browser(alice_url)).status_code == 200
        assert await alice.whoami() == "alice" and await bob.whoami() == "bob"


async def test_a_user_whose_login_is_revoked_is_led_to_a_new_one(tmp_path: Path, idp: Idp) -> None:
    async with per_user_gateway(tmp_path, idp) as setup:
        peer = setup.peer
        assert peer is not None
        alice = McpUser(setup, "alice")
        await alice.log_in(peer, as_subject="alice")
        assert await alice.whoami() == "alice"
        peer.revoke()  # every token, access and refresh: her open session's login is gone
        await alice.log_in(peer, as_subject="alice")  # the call refused leads to the login URL
        assert await alice.whoami() == "alice"
