"""Profiles at the gateway, the one way in: two users in different profiles see different tools,
cannot call each other's (the unknown-tool error), and never share cached results or offloaded files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mcp_types as types
import pytest

from mcp_nexus.config.errors import ConfigError
from mcp_nexus.config.load import config_from_document
from mcp_nexus.errors import UnknownToolError
from mcp_nexus.gateway import Gateway
from mcp_nexus.identity.principal import Principal
from mcp_nexus.pipeline.call import Caller
from support.gateway import running_gateway
from support.governance_gateway import document, embedded, text

PROFILES: dict[str, Any] = {
    "eng": {"servers": ["alpha"], "tools": ["shared.stamp"], "bind": {"groups": ["eng"]}},
    "sales": {"tools": ["beta.*", "shared.stamp"], "exclude": ["beta.fail"], "bind": {"users": ["bob"]}},
}


def user(name: str, *groups: str) -> Caller:
    return Caller("http", "ide", principal=Principal("http://idp", name, "ide", groups=groups))


ALICE, BOB = user("alice", "eng"), user("bob")


def config(tmp_path: Path, **extra: Any) -> dict[str, Any]:
    servers = {
        "alpha": embedded("alpha", cache_ttl=60),
        "beta": embedded("beta"),
        "shared": embedded("shared", cache_ttl=60),
    }
    return {**document(tmp_path, servers, offload_threshold=None), "profiles": PROFILES, **extra}


def listed(gw: Gateway, caller: Caller) -> set[str]:
    return {tool.name for tool in gw.profiles.tools(gw.profiles.bind(caller), gw.catalog.tool_list)}


async def test_each_user_lists_only_their_profile(tmp_path: Path) -> None:
    async with running_gateway(config(tmp_path)) as gw:
        alice, bob = listed(gw, ALICE), listed(gw, BOB)
    assert "alpha.stamp" in alice and "shared.stamp" in alice
    assert not any(name.startswith("beta.") for name in alice)
    assert "beta.stamp" in bob and "beta.fail" not in bob and "shared.stamp" in bob
    assert not any(name.startswith("alpha.") for name in bob)
    assert "shared.big_list" not in alice | bob


async def test_a_tool_outside_the_profile_is_an_unknown_tool(tmp_path: Path) -> None:
    async with running_gateway(config(tmp_path)) as gw:
        assert text(await gw.call_tool("alpha.stamp", {"key": "k"}, caller=ALICE)).startswith("alpha:k:")
        with pytest.raises(UnknownToolError) as hidden:
            await gw.call_tool("alpha.stamp", {"key": "k"}, caller=BOB)
        with pytest.raises(UnknownToolError) as missing:
            await gw.call_tool("alpha.no_such_tool", {}, caller=BOB)
        # the same error as a name that does not exist, suggesting only the caller's own tools
        assert hidden.value.message.split(";")[0] == "Unknown tool: alpha.stamp"
        assert missing.value.message.split(";")[0] == "Unknown tool: alpha.no_such_tool"
        assert all(not s.startswith("alpha.") for s in hidden.value.data["suggestions"])
        with pytest.raises(UnknownToolError):  # excluded from bob's profile although beta.* lets it in
            await gw.call_tool("beta.fail", {}, caller=BOB)
        with pytest.raises(UnknownToolError):  # search mode's call_tool reaches no further
            await gw.call_tool("call_tool", {"name": "alpha.stamp", "arguments": {"key": "k"}}, caller=BOB)


async def test_unbound_callers(tmp_path: Path) -> None:
    carol = user("carol")  # a token bound to no profile
    async with running_gateway(config(tmp_path)) as gw:
        assert listed(gw, carol) == set()  # no `default` profile: nothing
        with pytest.raises(UnknownToolError):
            await gw.call_tool("shared.stamp", {"key": "k"}, caller=carol)
        everything = {tool.name for tool in gw.catalog.tool_list}
        assert listed(gw, Caller("stdio", "claude")) == everything  # the operator's own client
        assert listed(gw, Caller("api")) == everything
    with_default = config(tmp_path, profiles={**PROFILES, "default": {"tools": ["shared.*"]}})
    async with running_gateway(with_default) as gw:
        assert (
            listed(gw, carol)
            == listed(gw, Caller("stdio", "claude"))
            == {tool.name for tool in gw.catalog.tool_list if tool.name.startswith("shared.")}
        )
        assert "alpha.stamp" in listed(gw, Caller("cli"))  # `nexus call` is the operator


async def test_cached_results_never_cross_users(tmp_path: Path) -> None:
    async with running_gateway(config(tmp_path)) as gw:
        first = text(await gw.call_tool("shared.stamp", {"key": "k"}, caller=ALICE))
        again = text(await gw.call_tool("shared.stamp", {"key": "k"}, caller=ALICE))
        theirs = text(await gw.call_tool("shared.stamp", {"key": "k"}, caller=BOB))
        assert first == again == "shared:k:1"  # alice's second call is her cached result
        assert theirs == "shared:k:2"  # bob's is a call of his own, not alice's result
    public = config(tmp_path)
    public["servers"]["shared"]["cache_scope"] = "public"  # the operator declares it shareable
    async with running_gateway(public) as gw:
        assert text(await gw.call_tool("shared.stamp", {"key": "k"}, caller=ALICE)) == "shared:k:1"
        assert text(await gw.call_tool("shared.stamp", {"key": "k"}, caller=BOB)) == "shared:k:1"


async def test_offloaded_files_never_cross_users(tmp_path: Path) -> None:
    doc = config(tmp_path)
    doc["gateway"]["offload_threshold"] = 200
    async with running_gateway(doc) as gw:
        big = await gw.call_tool("alpha.big_list", {"items": 50}, caller=ALICE)
        assert isinstance(big, types.CallToolResult)
        offload = gw.governance.offloader
        assert offload is not None
        alices = offload.folder.owned_files(ALICE.identity)
        assert alices, "alice's large result was offloaded"
        assert offload.folder.owned_files(BOB.identity) == []
        assert not offload.folder.owned_by(alices[0].name, BOB.identity)


def test_a_profile_name_must_fit_a_url_and_be_known() -> None:
    with pytest.raises(ConfigError, match="profile name 'a b'"):
        config_from_document({"profiles": {"a b": {}}})
    with pytest.raises(ConfigError, match=r"xiaozhi\.profile: no profile 'kiosk'"):
        config_from_document({"profiles": {"eng": {}}, "xiaozhi": {"profile": "kiosk"}})
