"""A profile's `tool_config`: policy overrides for its callers only, observed through real calls
(a cache TTL and a rate limit that differ between two profiles), followed by a hot reload, and
checked with errors that name the field."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from mcp_nexus.config.errors import ConfigError
from mcp_nexus.config.load import config_from_document
from mcp_nexus.errors import ToolTimeoutError
from mcp_nexus.identity.principal import Principal
from mcp_nexus.pipeline.call import Caller
from support.gateway import running_gateway
from support.governance_gateway import document, embedded, text


def user(name: str) -> Caller:
    return Caller("http", "ide", principal=Principal("http://idp", name, "ide"))


ALICE, BOB = user("alice"), user("bob")


def config(tmp_path: Path, alice: dict[str, Any], bob: dict[str, Any], **server: Any) -> dict[str, Any]:
    profiles = {
        "a": {"tools": ["shared.*"], "bind": {"users": ["alice"]}, "tool_config": alice},
        "b": {"tools": ["shared.*"], "bind": {"users": ["bob"]}, "tool_config": bob},
    }
    servers = {"shared": embedded("shared", **{"rate_limit": None, **server})}  # no default 5/second
    return {**document(tmp_path, servers, offload_threshold=None), "profiles": profiles}


async def stamps(gw: Any, caller: Caller, *keys: str) -> list[str]:
    return [text(await gw.call_tool("shared.stamp", {"key": key}, caller=caller)) for key in keys]


async def test_a_cache_ttl_differs_between_profiles_and_follows_a_reload(tmp_path: Path) -> None:
    doc = config(tmp_path, alice={"shared.stamp": {"cache_ttl": 60}}, bob={})
    async with running_gateway(doc) as gw:
        # alice's profile caches the tool (the server does not): her repeat is her cached result
        assert await stamps(gw, ALICE, "k", "k") == ["shared:k:1", "shared:k:1"]
        assert await stamps(gw, BOB, "k", "k") == ["shared:k:2", "shared:k:3"]  # bob's: every call made

        swapped = config(tmp_path, alice={}, bob={"shared.*": {"cache_ttl": 60}})  # a glob names it too
        new, _ = config_from_document(swapped)
        await gw.reload(new)
        assert await stamps(gw, ALICE, "j", "j") == ["shared:j:4", "shared:j:5"]
        assert await stamps(gw, BOB, "j", "j") == ["shared:j:6", "shared:j:6"]


async def test_a_rate_limit_differs_between_profiles(tmp_path: Path) -> None:
    # The tool's own limit is 1/minute; bob's profile raises it, alice's keeps the tool's.
    doc = config(tmp_path, alice={}, bob={"shared.stamp": {"rate_limit": "5/minute"}}, rate_limit="1/minute")
    async with running_gateway(doc) as gw:
        first, second = await stamps(gw, ALICE, "1", "2")
        assert first == "shared:1:1"
        assert second.startswith("SYSTEM_ALERT: Rate limit reached for tool shared.stamp (1 per minute)")
        # bob's profile counts its calls in a window of its own: alice's use of the tool's is not his
        answers = await stamps(gw, BOB, "3", "4", "5", "6", "7", "8")
        assert answers[:5] == [f"shared:{k}:{n}" for n, k in enumerate("34567", start=2)]
        assert answers[5].startswith("SYSTEM_ALERT: Rate limit reached for tool shared.stamp (5 per minute)")


async def test_an_override_applies_only_inside_its_profile(tmp_path: Path) -> None:
    doc = config(tmp_path, alice={"shared.stamp": {"cache_ttl": 60}}, bob={})
    async with running_gateway(doc) as gw:
        operator = Caller("cli")  # no profile: the tool's own policy (no TTL)
        assert await stamps(gw, operator, "k", "k") == ["shared:k:1", "shared:k:2"]
        policy = gw.governance.policies.resolve("shared.stamp", "a")
        assert policy is not None and policy.cache_ttl == 60 and policy.profile == "a"
        plain = gw.governance.policies.resolve("shared.stamp")
        assert plain is not None and plain.cache_ttl == 0 and plain.profile is None


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"rate_limit": "often"}, r"a\.tool_config\.shared\.stamp\.rate_limit: .*'often'"),
        ({"cache_ttl": -1}, r"a\.tool_config\.shared\.stamp\.cache_ttl: .*greater than or equal to 0"),
        ({"cache_tl": 5}, r"a\.tool_config\.shared\.stamp\.cache_tl: unknown field"),
        ({"cost": "low"}, r"a\.tool_config\.shared\.stamp\.cost: the tool index's cost is the same"),
    ],
)
def test_a_bad_entry_is_named(tmp_path: Path, entry: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        config_from_document(config(tmp_path, alice={"shared.stamp": entry}, bob={}))


async def test_a_timeout_differs_between_profiles(tmp_path: Path) -> None:
    doc = config(tmp_path, alice={"shared.sleep": {"timeout": 0.3}}, bob={}, timeout=5)
    async with running_gateway(doc) as gw:
        started = time.monotonic()
        with pytest.raises(ToolTimeoutError, match=r"shared\.sleep did not answer within 0\.3 s"):
            await gw.call_tool("shared.sleep", {"seconds": 1.0}, caller=ALICE)
        assert time.monotonic() - started < 0.9  # her profile's bound, not the server's 5 s
        assert not (await gw.call_tool("shared.sleep", {"seconds": 1.0}, caller=BOB)).is_error


async def test_each_profile_counts_its_own_rate_window(tmp_path: Path) -> None:
    same = {"shared.stamp": {"rate_limit": "2/minute"}}  # the same rate in both: still two windows
    async with running_gateway(config(tmp_path, alice=same, bob=same)) as gw:
        alices = await stamps(gw, ALICE, "1", "2", "3")
        bobs = await stamps(gw, BOB, "4", "5", "6")
    for answers in (alices, bobs):
        assert not answers[0].startswith("SYSTEM_ALERT") and not answers[1].startswith("SYSTEM_ALERT")
        assert answers[2].startswith("SYSTEM_ALERT: Rate limit reached for tool shared.stamp (2 per minute)")
