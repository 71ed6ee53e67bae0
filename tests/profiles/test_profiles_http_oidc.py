"""Profiles over HTTP with tokens from a real OpenID provider: `/mcp` picks each user's profile from
the token, `/mcp/<profile>` is its own endpoint, and a user not bound to it is refused."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx2
import pytest_asyncio
from oidc_peer import ACCEPT, Idp, initialize

from mcp_nexus.config.load import config_from_document
from mcp_nexus.runtime import Runtime, RuntimeOptions
from support.processes import free_port

PROFILES: dict[str, Any] = {
    "eng": {"servers": ["alpha"], "bind": {"groups": ["eng"]}},
    "sales": {"servers": ["beta"], "bind": {"clients": ["bob"]}},
}


def gov(instance: str) -> dict[str, Any]:
    return {
        "transport": "embedded",
        "module": "support.governance_server:create_server",
        "options": {"instance": instance},
    }


@dataclass
class Served:
    base: str
    resource: str


@pytest_asyncio.fixture
async def served(idp: Idp) -> AsyncIterator[Served]:
    port = free_port()
    resource = f"http://127.0.0.1:{port}/mcp"
    doc = {
        "gateway": {
            "include_builtins": False,
            "port": port,
            "auth": {"resource": resource, "issuer": idp.issuer, "required_scopes": ["mcp:tools"]},
        },
        "servers": {"alpha": gov("alpha"), "beta": gov("beta")},
        "profiles": PROFILES,
    }
    config, _ = config_from_document(doc)
    async with Runtime(config, RuntimeOptions(bridge=False, watch=False, wait_ready=True)):
        yield Served(f"http://127.0.0.1:{port}", resource)


def answer_of(response: httpx2.Response) -> dict[str, Any]:
    if response.headers["content-type"].startswith("application/json"):
        return dict(response.json())
    data = [line[5:] for line in response.text.splitlines() if line.startswith("data:") and line[5:].strip()]
    return dict(json.loads(data[-1]))


async def session(client: httpx2.AsyncClient, url: str, token: str) -> dict[str, str]:
    headers = {**ACCEPT, "Authorization": f"Bearer {token}"}
    opened = await client.post(url, headers=headers, json=initialize())
    assert opened.status_code == 200, opened.text
    headers = {
        **headers,
        "Mcp-Session-Id": opened.headers["mcp-session-id"],
        "Mcp-Protocol-Version": "2025-11-25",
    }
    await client.post(url, headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    return headers


async def tool_names(client: httpx2.AsyncClient, url: str, headers: dict[str, str]) -> set[str]:
    listed = answer_of(
        await client.post(url, headers=headers, json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    )
    return {tool["name"] for tool in listed["result"]["tools"]}


async def call(client: httpx2.AsyncClient, url: str, headers: dict[str, str], name: str) -> dict[str, Any]:
    params = {"name": name, "arguments": {"key": "k"}}
    request = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": params}
    return answer_of(await client.post(url, headers=headers, json=request))


async def test_each_user_sees_and_calls_only_their_profile(served: Served, idp: Idp) -> None:
    url = served.resource
    alice_token, bob_token = idp.token("alice", resource=url), idp.token("bob", resource=url)
    async with httpx2.AsyncClient(timeout=10) as client:
        alice, bob = await session(client, url, alice_token), await session(client, url, bob_token)
        alices, bobs = await tool_names(client, url, alice), await tool_names(client, url, bob)
        assert alices and all(name.startswith("alpha.") for name in alices)
        assert bobs and all(name.startswith("beta.") for name in bobs)
        assert (await call(client, url, alice, "alpha.stamp"))["result"]["content"][0]["text"] == "alpha:k:1"
        refused = await call(client, url, bob, "alpha.stamp")
        missing = await call(client, url, bob, "alpha.nothing")
        assert refused["error"]["code"] == missing["error"]["code"] == -32602
        assert refused["error"]["message"].startswith("Unknown tool: alpha.stamp")


async def test_a_profile_is_its_own_endpoint(served: Served, idp: Idp) -> None:
    alice_token = idp.token("alice", resource=served.resource)
    async with httpx2.AsyncClient(timeout=10) as client:
        eng = f"{served.base}/mcp/eng"
        headers = await session(client, eng, alice_token)
        assert all(name.startswith("alpha.") for name in await tool_names(client, eng, headers))
        assert (await call(client, eng, headers, "beta.stamp"))["error"]["code"] == -32602
        # alice is not bound to sales: refused before any MCP is spoken
        denied = await client.post(
            f"{served.base}/mcp/sales",
            headers={**ACCEPT, "Authorization": f"Bearer {alice_token}"},
            json=initialize(),
        )
        assert denied.status_code == 403
        assert denied.json() == {
            "error": "forbidden",
            "error_description": "this token is not bound to profile 'sales'",
        }
        unknown = await client.post(
            f"{served.base}/mcp/nope",
            headers={**ACCEPT, "Authorization": f"Bearer {alice_token}"},
            json=initialize(),
        )
        assert unknown.status_code == 404
        assert "no profile 'nope'" in unknown.json()["error_description"]
