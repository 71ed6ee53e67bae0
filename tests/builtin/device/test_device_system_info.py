"""get_system_info answers with real, plausible numbers about this host."""

from __future__ import annotations

import os
import platform
import socket
from pathlib import Path
from typing import Any

import psutil
from mcp import Client

import mcp_nexus
from mcp_nexus.builtin.device import create_server


async def _system_info(**options: Any) -> Any:
    async with Client(create_server(**options)) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert "get_system_info" in tools
        assert tools["get_system_info"].input_schema.get("properties") == {}
        return await client.call_tool("get_system_info", {})


async def test_system_info_fields_are_present_and_sane(tmp_path: Path) -> None:
    result = await _system_info(backlight_root=str(tmp_path), audio_backend="none")
    assert not result.is_error
    info = result.structured_content
    assert info is not None

    assert info["hostname"] == socket.gethostname()
    assert info["kernel"] == platform.release()
    assert info["architecture"] == platform.machine()
    assert info["os"]
    assert info["python_version"] == platform.python_version()
    assert info["nexus_version"] == mcp_nexus.__version__

    assert info["cpu"]["logical"] == os.cpu_count()
    assert info["cpu"]["model"]
    assert len(info["load_average"]) == 3
    assert all(value >= 0 for value in info["load_average"])

    memory = info["memory"]
    assert memory["total_bytes"] == psutil.virtual_memory().total
    assert 0 < memory["available_bytes"] <= memory["total_bytes"]
    assert 0 <= memory["used_percent"] <= 100

    root = next(disk for disk in info["disks"] if disk["mountpoint"] == "/")
    assert root["total_bytes"] > 0
    assert 0 <= root["free_bytes"] <= root["total_bytes"]
    assert len({disk["mountpoint"] for disk in info["disks"]}) == len(info["disks"])

    assert 0 < info["uptime_seconds"] < 10 * 365 * 86400
    # This VM has no battery; a host with one must report a percentage.
    battery = psutil.sensors_battery()
    if battery is None:
        assert info["battery"] is None
    else:
        assert 0 <= info["battery"]["percent"] <= 100

    assert info["backends"] == {"volume": None, "brightness": None}
    assert {entry["feature"] for entry in info["missing"]} == {"volume", "brightness"}

    text = result.content[0].text
    assert text.startswith(f"{socket.gethostname()} runs ")
    assert f"Nexus {mcp_nexus.__version__}" in text
    assert len(text) < 1500, "the sentence is for small clients; the details are in structuredContent"


async def test_system_info_names_the_backends_in_use(tmp_path: Path) -> None:
    device = tmp_path / "intel_backlight"
    device.mkdir()
    (device / "brightness").write_text("1\n")
    (device / "max_brightness").write_text("2\n")
    result = await _system_info(backlight_root=str(tmp_path), audio_backend="none")
    info = result.structured_content
    assert info is not None
    assert info["backends"]["brightness"] == "sysfs"
    assert [entry["feature"] for entry in info["missing"]] == ["volume"]
    assert info["missing"][0]["reason"] == "volume control disabled by configuration"
