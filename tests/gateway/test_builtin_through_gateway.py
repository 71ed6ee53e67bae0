"""The servers that ship with Nexus, mounted as embedded upstreams of a real gateway."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client

from mcp_nexus.frontends.mcp.server import McpFrontend
from mcp_nexus.gateway import Gateway
from support.gateway import running_gateway
from support.processes import TESTS

LOOKALIKE = {
    "command": sys.executable,
    "args": ["-m", "support.lookalike_device"],
    "env": {"PYTHONPATH": str(TESTS)},
    "namespace": "",
}


def text(result: Any) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


@pytest.fixture
async def cortex_gateway(tmp_path: Path) -> AsyncIterator[Gateway]:
    cortex = {
        "transport": "embedded",
        "module": "mcp_nexus.builtin.cortex.server:create_server",
        "options": {"knowledge_dir": str(tmp_path / "kb")},
    }
    async with running_gateway(
        {"gateway": {"include_builtins": False}, "servers": {"cortex": cortex}}
    ) as gateway:
        yield gateway


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_cortex_tools_and_resources_namespaced(cortex_gateway: Gateway, mode: str) -> None:
    async with Client(McpFrontend(cortex_gateway, "test").server, mode=mode) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"cortex.add_entity", "cortex.connect_entities", "cortex.search_knowledge"} <= names
        add = {"category": "tech_stack", "type": "framework", "name": "Starlette", "desc": "ASGI toolkit"}
        made = await client.call_tool("cortex.add_entity", {**add, "id": "starlette"})
        assert not made.is_error, text(made)
        again = await client.call_tool("cortex.add_entity", {**add, "id": "starlette"})
        assert again.is_error and "entity_exists" in text(again)
        await client.call_tool(
            "cortex.add_entity",
            {
                "category": "projects",
                "id": "nexus",
                "type": "project",
                "name": "Nexus",
                "desc": "MCP gateway",
            },
        )
        linked = await client.call_tool(
            "cortex.connect_entities", {"src": "nexus", "rel": "uses", "dst": "starlette"}
        )
        assert not linked.is_error, text(linked)
        found = await client.call_tool("cortex.search_knowledge", {"query": "starlete"})  # typo on purpose
        assert "starlette" in text(found)
        templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
        assert any(t.startswith("knowledge://entities/") for t in templates)
        entity = await client.read_resource("knowledge://entities/tech_stack/starlette")
        assert json.loads(entity.contents[0].text)["name"] == "Starlette"  # type: ignore[union-attr]
        stats = await client.read_resource("knowledge://stats/entropy")
        assert "starlette" not in json.dumps(json.loads(stats.contents[0].text).get("orphans", []))  # type: ignore[union-attr]
        month = datetime.now(UTC)
        relations = await client.read_resource(f"knowledge://relations/{month:%Y}/{month:%m}")
        assert "uses" in relations.contents[0].text  # type: ignore[union-attr]


def device_beside_lookalike(backlight_root: Path) -> dict[str, Any]:
    """The device server (bare names, priority 100, no audio) and a stdio server offering the same names."""
    device = {
        "transport": "embedded",
        "module": "mcp_nexus.builtin.device.server:create_server",
        "options": {"backlight_root": str(backlight_root), "audio_backend": "none"},
        "namespace": "",
        "priority": 100,
    }
    return {"gateway": {"include_builtins": False}, "servers": {"device": device, "lookalike": LOOKALIKE}}


async def test_device_server_wins_bare_names_at_priority_100(tmp_path: Path) -> None:
    backlight = tmp_path / "backlight" / "panel"
    backlight.mkdir(parents=True)
    (backlight / "brightness").write_text("50\n")
    (backlight / "max_brightness").write_text("100\n")
    (backlight / "type").write_text("raw\n")
    async with running_gateway(device_beside_lookalike(tmp_path / "backlight")) as gateway:
        assert gateway.upstreams["device"].config.effective_priority == 100
        brightness = await gateway.call_tool_result("get_current_brightness")
        assert brightness.meta and brightness.meta["nexus/server"] == "device"
        assert brightness.structured_content == {"brightness": 50} or "50" in text(brightness)
        info = await gateway.call_tool_result("get_system_info")
        assert info.meta and info.meta["nexus/server"] == "device"
        # no audio backend on the device server: the lower-priority server serves the name
        volume = await gateway.call_tool_result("get_current_volume")
        assert text(volume) == "lookalike: volume 34%"
        assert volume.meta and volume.meta["nexus/server"] == "lookalike"


async def test_missing_backlight_falls_back_to_the_stdio_server(tmp_path: Path) -> None:
    async with running_gateway(device_beside_lookalike(tmp_path / "no-backlight")) as gateway:
        brightness = await gateway.call_tool_result("get_current_brightness")
        assert text(brightness) == "lookalike: brightness 12%"
        assert brightness.meta and brightness.meta["nexus/server"] == "lookalike"
