"""Per-caller rules key on the token's user: the same user over two frontends is one caller,
two users of one client are two (caller_rate_limit, offload ownership, the cache's scope)."""

from __future__ import annotations

from pathlib import Path

from mcp_nexus.identity.principal import Principal
from mcp_nexus.pipeline.call import Caller
from support.gateway import running_gateway
from support.governance_gateway import document, embedded, text


def user(name: str, frontend: str = "http", client: str = "ide") -> Caller:
    return Caller(frontend, client, principal=Principal("http://idp", name, client))


async def test_the_caller_rate_limit_counts_per_user(tmp_path: Path) -> None:
    servers = {"free": embedded("free", rate_limit=None)}
    async with running_gateway(document(tmp_path, servers, caller_rate_limit="2/minute")) as gw:
        # alice over HTTP, then over another client: one window
        assert not (await gw.call_tool("free.stamp", {"key": "1"}, caller=user("alice"))).is_error
        assert not (
            await gw.call_tool("free.stamp", {"key": "2"}, caller=user("alice", client="cli"))
        ).is_error
        refused = await gw.call_tool("free.stamp", {"key": "3"}, caller=user("alice", frontend="xiaozhi"))
        assert "caller user:alice (2 per minute)" in text(refused)
        # bob, with the same client name as alice: a window of his own
        assert not (await gw.call_tool("free.stamp", {"key": "4"}, caller=user("bob"))).is_error


def test_the_identity_is_the_user_else_frontend_and_client() -> None:
    assert user("alice").identity == user("alice", "stdio", "other").identity == "user:alice"
    assert Caller("http", "ide", principal=Principal("http://idp", None, "svc")).identity == "client:svc"
    assert Caller("http", "ide").identity == "http:ide"
