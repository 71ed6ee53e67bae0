"""Two users, every way in (issue 26's acceptance test).

alice's profile holds server a's tools, the shared counter and python_sandbox; bob's holds server
b's, the counter and python_sandbox. Against one config, through each way in: stdio (`nexus serve
--stdio --profile`, a process per user), HTTP with tokens from a real OpenID provider in both
client eras (handshake 2025-11-25 and 2026-07-28), and Xiaozhi (two endpoints, each in its own
profile), each user

- lists only their profile's tools and cannot call the other's (the unknown-tool error), neither
  directly nor from code run in python_sandbox;
- never gets the other's cached result: the counter (`c.stamp`, cached 60 s, its answer counts
  its calls) answers bob's first call with a call of his own after alice's;
- cannot read the other's offloaded file: bob's python_sandbox naming alice's file is refused.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import httpx2
import mcp_types as types
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from oidc_peer import Idp

from mcp_nexus.config.load import config_from_document
from mcp_nexus.runtime import Runtime, RuntimeOptions
from support.fake_xiaozhi import FakeSession, FakeXiaozhiEndpoint
from support.processes import TESTS, VENV_BIN, free_port
from support.served_gateway import gateway_env
from xiaozhi.stack import running_bridge

USERS = ("alice", "bob")
OWN = {"alice": "a", "bob": "b"}  # each user's own server
FILE = re.compile(r"Saved to file (tool_output_[0-9a-f]{32}\.json)")
WAYS_IN = ["stdio", "http-2025-11-25", "http-2026-07-28", "xiaozhi"]


def gov(instance: str, **extra: Any) -> dict[str, Any]:
    return {
        "transport": "embedded",
        "module": "support.governance_server:create_server",
        "options": {"instance": instance},
        **extra,
    }


def document(tmp_path: Path, port: int, issuer: str) -> dict[str, Any]:
    return {
        "gateway": {
            "include_builtins": False,
            "port": port,
            "rate_limit": None,
            "offload_threshold": 2000,
            "offload_dir": str(tmp_path / "offload"),
            "auth": {
                "resource": f"http://127.0.0.1:{port}/mcp",
                "issuer": issuer,
                "required_scopes": ["mcp:tools"],
            },
        },
        "servers": {
            "a": gov("a"),
            "b": gov("b"),
            # the counter both profiles reach; private: kept per caller for token-less callers too
            "c": gov("c", cache_ttl=60, cache_scope="private"),
        },
        "profiles": {
            user: {
                "servers": [OWN[user]],
                "tools": ["c.stamp", "python_sandbox"],
                "bind": {"clients": [user]},
            }
            for user in USERS
        },
    }


@dataclass
class Answer:
    is_error: bool
    text: str


class Way(Protocol):
    """One user's client through one way in, under the gateway's tool names."""

    async def names(self) -> set[str]: ...

    async def call(self, name: str, arguments: dict[str, Any]) -> Answer: ...


@dataclass
class McpWay:
    client: Client

    async def names(self) -> set[str]:
        return {tool.name for tool in (await self.client.list_tools()).tools}

    async def call(self, name: str, arguments: dict[str, Any]) -> Answer:
        try:
            result = await self.client.call_tool(name, arguments)
        except MCPError as error:  # the unknown-tool error is a JSON-RPC error here
            return Answer(True, error.error.message)
        assert isinstance(result, types.CallToolResult)
        return Answer(bool(result.is_error), "\n".join(getattr(item, "text", "") for item in result.content))


@dataclass
class XiaozhiWay:
    session: FakeSession
    mapped: dict[str, str] = field(default_factory=dict)  # the endpoint's name -> the gateway's

    async def names(self) -> set[str]:
        listed = {tool["name"] for tool in await self.session.list_tools()}
        return {self.mapped.get(name, name) for name in listed}

    async def call(self, name: str, arguments: dict[str, Any]) -> Answer:
        answer = await self.session.call_tool(name.replace(".", "_"), arguments)
        if "error" in answer:
            return Answer(True, str(answer["error"]["message"]))
        result = answer["result"]
        return Answer(
            bool(result.get("isError")), "\n".join(item.get("text", "") for item in result["content"])
        )


@dataclass
class Users:
    ways: dict[str, Way]
    offload_dir: Path


@contextlib.asynccontextmanager
async def users_through(way_in: str, tmp_path: Path, idp: Idp) -> AsyncIterator[Users]:
    port = free_port()
    doc = document(tmp_path, port, idp.issuer)
    offload_dir = tmp_path / "offload"
    async with contextlib.AsyncExitStack() as stack:
        ways: dict[str, Way] = {}
        if way_in == "stdio":  # a `nexus serve --stdio --profile <user>` process per user, one config
            path = tmp_path / "nexus.json"
            path.write_text(json.dumps(doc))
            env = gateway_env(tmp_path, PYTHONPATH=str(TESTS))
            for user in USERS:
                params = StdioServerParameters(
                    command=str(VENV_BIN / "nexus"),
                    args=["serve", "--stdio", "--profile", user, "--config", str(path), "--no-watch"],
                    env=env,
                )
                info = types.Implementation(name=user, version="1")
                client = await stack.enter_async_context(Client(params, client_info=info, mode="legacy"))
                ways[user] = McpWay(client)
            yield Users(ways, offload_dir)
            return
        config, _ = config_from_document(doc)
        runtime = await stack.enter_async_context(
            Runtime(config, RuntimeOptions(bridge=False, watch=False, wait_ready=True))
        )
        if way_in.startswith("http-"):  # OAuth tokens from the real provider on /mcp
            mode = way_in.removeprefix("http-")
            resource = f"http://127.0.0.1:{port}/mcp"
            for user in USERS:
                token = idp.token(user, resource=resource)
                http = await stack.enter_async_context(
                    httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
                )
                transport = streamable_http_client(resource, http_client=http)
                client = await stack.enter_async_context(
                    Client(transport, mode="legacy" if mode == "2025-11-25" else mode)  # type: ignore[arg-type]
                )
                ways[user] = McpWay(client)
        else:  # two Xiaozhi endpoints of one bridge, each in its user's profile
            fake = await stack.enter_async_context(FakeXiaozhiEndpoint(set(USERS)))
            endpoints = [{"url": fake.url(user), "profile": user} for user in USERS]
            await stack.enter_async_context(running_bridge(runtime.gateway, endpoints=endpoints))
            mapped = {tool.name.replace(".", "_"): tool.name for tool in runtime.gateway.catalog.tool_list}
            for user in USERS:
                ways[user] = XiaozhiWay(await fake.next_session(user), mapped)
        yield Users(ways, offload_dir)


@pytest.mark.parametrize("way_in", WAYS_IN)
async def test_two_users_see_and_call_only_their_own_tools(tmp_path: Path, idp: Idp, way_in: str) -> None:
    async with users_through(way_in, tmp_path, idp) as users:
        for user, other in (("alice", "bob"), ("bob", "alice")):
            way, mine, theirs = users.ways[user], OWN[user], OWN[other]
            names = await way.names()
            assert f"{mine}.stamp" in names and "c.stamp" in names and "python_sandbox" in names
            assert not any(name.startswith(f"{theirs}.") for name in names), names
            own = await way.call(f"{mine}.stamp", {"key": user})
            assert not own.is_error and own.text == f"{mine}:{user}:1", own
            # the other's tool is answered exactly as a tool that does not exist
            refused = await way.call(f"{theirs}.stamp", {"key": user})
            missing = await way.call(f"{theirs}.no_such_tool", {})
            assert refused.is_error and missing.is_error
            assert re.match(rf"Unknown tool: {theirs}[._]stamp", refused.text), refused
            assert re.match(rf"Unknown tool: {theirs}[._]no_such_tool", missing.text), missing
            # and from code run in python_sandbox: the unknown-tool error, raised in the code, the
            # same for the other's tool as for a name that does not exist
            code = (
                f"for name in ('{theirs}.stamp', '{theirs}.no_such_tool'):\n"
                "    try:\n"
                "        call_tool(name, {'key': 'x'})\n"
                "    except ToolError as error:\n"
                "        print(error.kind, str(error))\n"
                f"print(call_tool('{mine}.stamp', {{'key': 'code'}}))\n"
            )
            ran = await way.call("python_sandbox", {"code": code})
            assert not ran.is_error, ran
            for name in ("stamp", "no_such_tool"):
                expected = (
                    f"unknown_tool unknown tool '{theirs}.{name}': no tool of that name for this client"
                )
                assert expected in ran.text, ran
            assert f"{mine}:code:" in ran.text


@pytest.mark.parametrize("way_in", WAYS_IN)
async def test_cached_results_and_offloaded_files_never_cross(tmp_path: Path, idp: Idp, way_in: str) -> None:
    async with users_through(way_in, tmp_path, idp) as users:
        alice, bob = users.ways["alice"], users.ways["bob"]
        first = await alice.call("c.stamp", {"key": "k"})
        again = await alice.call("c.stamp", {"key": "k"})
        assert first.text == again.text == "c:k:1"  # alice's repeat is her cached result
        bobs = await bob.call("c.stamp", {"key": "k"})
        # bob's first call is a miss: the counter was called again (over stdio each user's
        # process has its own counter server, so his call is its first)
        assert bobs.text == ("c:k:1" if way_in == "stdio" else "c:k:2"), bobs
        assert (await bob.call("c.stamp", {"key": "k"})).text == bobs.text  # then his own hit

        alert = await alice.call("a.big_list", {"items": 400})
        found = FILE.search(alert.text)
        assert found, alert
        alices_file = found.group(1)
        assert (users.offload_dir / alices_file).exists()
        own = await alice.call("python_sandbox", {"code": "print(len(data))", "files": [alices_file]})
        assert not own.is_error and own.text.strip() == "400", own
        for arguments in (
            {"code": "print(data[:2])", "files": [alices_file]},
            {"code": f"print(open('/data/{alices_file}').read())"},
        ):
            refused = await bob.call("python_sandbox", arguments)
            assert refused.is_error, refused
            assert re.search(
                rf"file '{alices_file}' (named in the code )?does not exist among this client's offloaded files",
                refused.text,
            ), refused
            assert "light.room" not in refused.text  # nothing of alice's data
