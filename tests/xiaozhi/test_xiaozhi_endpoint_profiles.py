"""Each Xiaozhi endpoint may name its own profile (`{url, profile}` entries of `xiaozhi.endpoints`);
the others stay in `xiaozhi.profile`. Two endpoints of one bridge list and reach different tools."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcp_nexus.config.errors import ConfigError
from mcp_nexus.config.load import config_from_document
from mcp_nexus.config.xiaozhi import XiaozhiSettings, with_env_endpoints
from support.fake_xiaozhi import FakeXiaozhiEndpoint
from support.gateway import running_gateway
from xiaozhi.stack import document, running_bridge, text_of

PROFILES = {"lights": {"tools": ["gov.*"]}, "demo": {"tools": ["demo.*"]}}


async def test_two_endpoints_in_two_profiles(tmp_path: Path) -> None:
    doc = {**document(tmp_path), "profiles": PROFILES}
    async with (
        running_gateway(doc) as gw,
        FakeXiaozhiEndpoint({"kitchen", "desk"}) as fake,
        running_bridge(
            gw,
            endpoints=[{"url": fake.url("kitchen"), "profile": "lights"}, fake.url("desk")],
            profile="demo",  # the default for the endpoint that names none
        ),
    ):
        kitchen, desk = await fake.next_session("kitchen"), await fake.next_session("desk")
        kitchen_tools = {tool["name"] for tool in await kitchen.list_tools()}
        desk_tools = {tool["name"] for tool in await desk.list_tools()}
        assert "gov_stamp" in kitchen_tools and not any(name.startswith("demo_") for name in kitchen_tools)
        assert "demo_echo" in desk_tools and not any(name.startswith("gov_") for name in desk_tools)
        assert text_of(await kitchen.call_tool("gov_stamp", {"key": "k"})).startswith("gov:k:")
        assert text_of(await desk.call_tool("demo_echo", {"text": "hi"})) == "stdio-demo: hi"
        refused = await kitchen.call_tool("demo_echo", {"text": "hi"})  # the other endpoint's tool
        assert refused["result"]["isError"] is True
        assert text_of(refused).startswith("Unknown tool: demo_echo")


def test_entries_and_their_errors() -> None:
    settings = XiaozhiSettings.model_validate(
        {
            "profile": "demo",
            "endpoints": [
                {"url": "wss://a.example/mcp/?token=1", "profile": "lights"},
                "https://b.example/mcp/?token=2",  # http(s) is turned into ws(s)
                {"url": "wss://a.example/mcp/?token=1", "profile": "demo"},  # a repeat: the first stays
            ],
        }
    )
    assert settings.endpoints == ["wss://a.example/mcp/?token=1", "wss://b.example/mcp/?token=2"]
    assert [settings.profile_of(0), settings.profile_of(1)] == ["lights", "demo"]
    widened = with_env_endpoints(settings, env={}, extra=["wss://c.example/mcp/?token=3"])
    assert [widened.profile_of(i) for i in range(3)] == ["lights", "demo", "demo"]

    with pytest.raises(ConfigError, match=r"xiaozhi\.endpoints\[0\]\.profile: no profile 'kiosk'"):
        config_from_document(
            {
                "profiles": PROFILES,
                "xiaozhi": {"endpoints": [{"url": "wss://a.example/", "profile": "kiosk"}]},
            }
        )
    with pytest.raises(ConfigError, match=r"endpoints\[0\]: unknown key 'profle'"):
        config_from_document({"xiaozhi": {"endpoints": [{"url": "wss://a.example/", "profle": "x"}]}})
    with pytest.raises(ConfigError, match=r"endpoints\[1\]: 'url' is missing"):
        config_from_document({"xiaozhi": {"endpoints": ["wss://a.example/", {"profile": "lights"}]}})
