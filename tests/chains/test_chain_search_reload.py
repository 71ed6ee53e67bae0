"""Search follows the config file: a chain added, changed or removed in the watched file is found,
found anew or gone from `find_tools` (and `call_tool`) once the reload is applied."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcp_nexus.config.watch import ConfigSource, ConfigWatcher
from mcp_nexus.errors import GatewayError
from mcp_nexus.gateway import Gateway
from mcp_nexus.pipeline.call import Caller
from support.gateway import running_gateway
from support.governance_gateway import document, embedded, text
from support.polling import eventually

KEY = {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]}


def chain(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "input_schema": KEY,
        "steps": [{"tool": "gov.stamp", "arguments": {"key": "{{ input.key }}"}}],
    }


LIGHTS = "Tell which lights of the house are still switched on."
SHEEP = "Count the sheep grazing in the meadow."
TRAINS = "When does the next train leave for the coast."


def config(tmp_path: Path, chains: dict[str, Any]) -> dict[str, Any]:
    doc = document(tmp_path / "offload", {"gov": embedded("reload")})
    doc["gateway"]["tool_search"] = {"mode": "on"}
    doc["chains"] = chains
    return doc


async def found(gateway: Gateway, query: str) -> list[str]:
    result = await gateway.call_tool_result("find_tools", {"query": query}, caller=Caller("test", "c"))
    assert not result.is_error, text(result)
    assert result.structured_content is not None
    return [row["name"] for row in result.structured_content["tools"]]


async def test_find_tools_follows_chains_edited_in_the_config_file(tmp_path: Path) -> None:
    path = tmp_path / "nexus.json"
    path.write_text(json.dumps(config(tmp_path, {"lights": chain(LIGHTS), "counter": chain(SHEEP)})))
    source = ConfigSource(path)
    async with running_gateway(source.load()) as gateway:
        assert await gateway.index_sync.wait_settled(20)
        assert (await found(gateway, "are any lights still on"))[:1] == ["lights"]
        assert (await found(gateway, "how many sheep are there"))[:1] == ["counter"]
        kept = gateway.index.get_tool_entry("counter")

        watcher = ConfigWatcher(source, gateway, debounce_ms=100)
        watcher.start()
        try:
            await watcher.wait_ready()
            # lights removed, counter kept as it was, trains added
            path.write_text(json.dumps(config(tmp_path, {"counter": chain(SHEEP), "trains": chain(TRAINS)})))
            await eventually(lambda: watcher.reloads >= 1, what="the edited file applied")
        finally:
            await watcher.stop()

        assert "lights" not in await found(gateway, "are any lights still on")
        assert gateway.index.get_tool_entry("lights") is None
        with pytest.raises(GatewayError, match="lights"):  # call_tool cannot reach it either
            await gateway.call_tool_result(
                "call_tool", {"name": "lights", "arguments": {"key": "k"}}, caller=Caller("test", "c")
            )
        assert (await found(gateway, "next train to the sea"))[:1] == ["trains"]
        reply = await gateway.call_tool_result(
            "call_tool", {"name": "trains", "arguments": {"key": "k"}}, caller=Caller("test", "c")
        )
        assert text(reply).startswith("reload:k:")
        # an unchanged chain keeps its entry (and its last_updated) across the reload
        assert gateway.index.get_tool_entry("counter") is kept


async def test_a_changed_description_is_searched_as_written_now(tmp_path: Path) -> None:
    async with running_gateway(config(tmp_path, {"helper": chain(LIGHTS)})) as gateway:
        assert await gateway.index_sync.wait_settled(20)
        version = gateway.index.version
        new = source_config(tmp_path, {"helper": chain(TRAINS)})
        await gateway.reload(new)
        assert gateway.index.version != version
        entry = gateway.index.get_tool_entry("helper")
        assert entry is not None and entry.description == TRAINS
        assert (await found(gateway, "next train to the sea"))[:1] == ["helper"]
        assert "helper" not in await found(gateway, "are any lights still on")


def source_config(tmp_path: Path, chains: dict[str, Any]) -> Any:
    path = tmp_path / "changed.json"
    path.write_text(json.dumps(config(tmp_path, chains)))
    return ConfigSource(path).load()
