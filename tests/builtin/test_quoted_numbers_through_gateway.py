"""The gateway and the built-in servers agree on arguments: quoted numbers, predicates, error codes.

The gateway checks arguments against each tool's input schema before the call leaves it.
A string that is a plain number (`"40"`) where the schema says integer/number is converted
there, so every server, built-in or not, receives a number; everything else stays refused.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcp_nexus.frontends.mcp.server import McpFrontend
from mcp_nexus.gateway import Gateway
from support.gateway import running_gateway
from support.processes import VENV_BIN, child_env, free_port, running, wait_for_http

HERE = Path(__file__).resolve().parent


def _document(tmp_path: Path) -> dict[str, Any]:
    backlight = tmp_path / "backlight" / "intel_backlight"
    backlight.mkdir(parents=True)
    (backlight / "brightness").write_text("100\n")
    (backlight / "max_brightness").write_text("1000\n")
    (backlight / "type").write_text("raw\n")
    return {
        "gateway": {"include_builtins": False},
        "servers": {
            "device": {
                "transport": "embedded",
                "module": "mcp_nexus.builtin.device.server:create_server",
                "options": {"backlight_root": str(tmp_path / "backlight"), "audio_backend": "none"},
            },
            "cortex": {
                "transport": "embedded",
                "module": "mcp_nexus.builtin.cortex.server:create_server",
                "options": {"knowledge_dir": str(tmp_path / "kb")},
            },
            # Reports the Python type of what it receives and converts nothing itself.
            "probe": {"transport": "embedded", "module": "number_probe:create_server"},
        },
    }


def _brightness_file(tmp_path: Path) -> str:
    return (tmp_path / "backlight" / "intel_backlight" / "brightness").read_text().strip()


def _text(result: types.CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, types.TextContent))


@pytest.fixture
async def gateway(tmp_path: Path) -> AsyncIterator[Gateway]:
    async with running_gateway(_document(tmp_path)) as started:
        yield started


@asynccontextmanager
async def _client(gateway: Gateway) -> AsyncIterator[Client]:
    # Opened in the test's own task (an async fixture would close it in another one).
    async with Client(McpFrontend(gateway, "test").server) as connected:
        yield connected


async def test_a_quoted_brightness_reaches_the_device(gateway: Gateway, tmp_path: Path) -> None:
    async with _client(gateway) as client:
        result = await client.call_tool("device.set_brightness", {"brightness": "40"})
    assert not result.is_error, _text(result)
    assert result.structured_content is not None and result.structured_content["level"] == 40
    assert _brightness_file(tmp_path) == "400"


async def test_the_server_receives_numbers_not_strings(gateway: Gateway) -> None:
    async with _client(gateway) as client:
        result = await client.call_tool(
            "probe.received",
            {"level": "40", "ratio": "2.5", "maybe": " 7 ", "counts": ["1", 2, "3.0"], "label": "40"},
        )
    assert not result.is_error, _text(result)
    got = result.structured_content
    assert got is not None
    assert got["level"] == {"value": 40, "type": "int", "items": None}
    assert got["ratio"] == {"value": 2.5, "type": "float", "items": None}
    assert got["maybe"] == {"value": 7, "type": "int", "items": None}  # integer-or-null (anyOf)
    assert got["counts"] == {"value": [1, 2, 3], "type": "list", "items": ["int", "int", "int"]}
    # Where the schema says string, a string that looks like a number stays a string.
    assert got["label"] == {"value": "40", "type": "str", "items": None}


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"brightness": "abc"}, "'abc' is not of type 'integer'"),
        ({"brightness": True}, "True is not of type 'integer'"),
        ({"brightness": "40.5"}, "'40.5' is not of type 'integer'"),
        ({"brightness": "1_0"}, "'1_0' is not of type 'integer'"),
        ({"brightness": "101"}, "101 is greater than the maximum of 100"),
        ({"brightness": None}, "None is not of type 'integer'"),
        ({}, "'brightness' is a required property"),
    ],
)
async def test_other_values_are_refused_before_the_device(
    gateway: Gateway, tmp_path: Path, arguments: dict[str, Any], expected: str
) -> None:
    async with _client(gateway) as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool("device.set_brightness", arguments)
    assert refused.value.error.code == -32602
    assert expected in refused.value.error.message
    assert _brightness_file(tmp_path) == "100"


async def test_cortex_through_the_gateway(gateway: Gateway) -> None:
    async with _client(gateway) as client:
        for entity_id, entity_type in (("mcp-protocol", "concept"), ("json-rpc", "concept")):
            args = {
                "category": "concepts",
                "id": entity_id,
                "type": entity_type,
                "name": entity_id,
                "desc": "x",
            }
            made = await client.call_tool("cortex.add_entity", args)
            assert not made.is_error, _text(made)
        again = await client.call_tool(
            "cortex.add_entity",
            {"category": "concepts", "id": "json-rpc", "type": "concept", "name": "x", "desc": "x"},
        )
        assert again.is_error and _text(again).startswith("[entity_exists] ")
        # A kebab-case predicate passes the gateway's schema check and is stored in snake_case.
        linked = await client.call_tool(
            "cortex.connect_entities", {"src": "mcp-protocol", "rel": "depends-on", "dst": "json-rpc"}
        )
        assert not linked.is_error, _text(linked)
        assert linked.structured_content is not None and linked.structured_content["rel"] == "depends_on"
        page = await client.call_tool("cortex.read_graph", {"limit": "1"})
        assert not page.is_error, _text(page)
        assert page.structured_content is not None and len(page.structured_content["entities"]) == 1
        resource = await client.read_resource("knowledge://entities/concept/mcp-protocol")
        content = resource.contents[0]
        assert isinstance(content, types.TextResourceContents)
        assert json.loads(content.text)["relations"][0]["rel"] == "depends_on"


@pytest.fixture
def served_gateway(tmp_path: Path) -> Iterator[str]:
    """`nexus serve` with the same servers, over streamable HTTP."""
    config = tmp_path / "nexus.json"
    config.write_text(json.dumps(_document(tmp_path)))
    port = free_port()
    env = child_env()
    env["PYTHONPATH"] = f"{HERE}:{env['PYTHONPATH']}"
    args = [str(VENV_BIN / "nexus"), "serve", "-c", str(config), "--port", str(port), "--no-watch"]
    with running(args, env=env, log=tmp_path / "gateway.log") as proc:
        wait_for_http(f"http://127.0.0.1:{port}/healthz", proc=proc)
        yield f"http://127.0.0.1:{port}/mcp"


async def test_a_quoted_number_through_a_running_gateway(served_gateway: str, tmp_path: Path) -> None:
    async with Client(served_gateway, read_timeout_seconds=60) as http_client:
        result = await http_client.call_tool("device.set_brightness", {"brightness": "25"})
        assert not result.is_error, _text(result)
        probe = await http_client.call_tool("probe.received", {"level": "9"})
        assert probe.structured_content is not None
        assert probe.structured_content["level"]["type"] == "int"
        with pytest.raises(MCPError) as refused:
            await http_client.call_tool("device.set_brightness", {"brightness": "ten"})
        assert refused.value.error.code == -32602
    assert _brightness_file(tmp_path) == "250"
