"""Brightness tools against a sysfs-shaped backlight folder, through an in-memory MCP client."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from mcp_nexus.builtin.device import create_server

BRIGHTNESS_TOOLS = {"get_current_brightness", "set_brightness"}
# A sysctl the kernel refuses to let anyone write, root included: a truly read-only file.
READ_ONLY_INTEGER_FILE = Path("/proc/sys/kernel/ngroups_max")

MakeBacklight = Callable[..., Path]


def _brightness_server(root: Path, **options: Any) -> Any:
    return create_server(backlight_root=str(root), audio_backend="none", **options)


def _read_int(path: Path) -> int:
    return int(path.read_text())


def _text(result: Any) -> str:
    return str(result.content[0].text)


async def test_brightness_tools_are_advertised_with_a_0_to_100_schema(
    backlight_root: Path, make_backlight: MakeBacklight
) -> None:
    make_backlight("intel_backlight", brightness=400, max_brightness=1000)
    async with Client(_brightness_server(backlight_root)) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) >= BRIGHTNESS_TOOLS
    brightness = tools["set_brightness"].input_schema["properties"]["brightness"]
    assert brightness["type"] == "integer"
    assert (brightness["minimum"], brightness["maximum"]) == (0, 100)


async def test_reads_the_current_level_from_the_device(
    backlight_root: Path, make_backlight: MakeBacklight
) -> None:
    make_backlight("intel_backlight", brightness=400, max_brightness=1000)
    async with Client(_brightness_server(backlight_root)) as client:
        result = await client.call_tool("get_current_brightness", {})
    assert not result.is_error
    assert result.structured_content == {
        "level": 40,
        "device": "intel_backlight",
        "backend": "sysfs",
        "raw": 400,
        "max_raw": 1000,
    }
    assert _text(result) == "The screen brightness is 40%."


@pytest.mark.parametrize(("level", "raw"), [(0, 0), (1, 3), (40, 102), (99, 252), (100, 255)])
async def test_set_writes_the_scaled_raw_value_and_reads_back(
    backlight_root: Path, make_backlight: MakeBacklight, level: int, raw: int
) -> None:
    device = make_backlight("acpi_video0", brightness=128, max_brightness=255, kind="firmware")
    async with Client(_brightness_server(backlight_root)) as client:
        result = await client.call_tool("set_brightness", {"brightness": level})
        assert not result.is_error, result.content
        assert (device / "brightness").read_text().strip() == str(raw)
        assert result.structured_content is not None
        assert result.structured_content["level"] == level
        assert _text(result) == f"Screen brightness set to {level}%."
        read = await client.call_tool("get_current_brightness", {})
    assert read.structured_content is not None
    assert read.structured_content["level"] == level


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"brightness": 101}, "less than or equal to 100"),
        ({"brightness": -1}, "greater than or equal to 0"),
        ({"brightness": "abc"}, "valid integer"),
        ({}, "Field required"),
    ],
)
async def test_bad_values_are_rejected_and_leave_the_file_alone(
    backlight_root: Path, make_backlight: MakeBacklight, arguments: dict[str, Any], problem: str
) -> None:
    device = make_backlight("intel_backlight", brightness=400, max_brightness=1000)
    async with Client(_brightness_server(backlight_root)) as client:
        result = await client.call_tool("set_brightness", arguments)
    assert result.is_error
    assert "brightness" in _text(result) and problem in _text(result)
    assert (device / "brightness").read_text() == "400\n"


async def test_read_only_brightness_file_gives_a_permission_error(backlight_root: Path) -> None:
    device = backlight_root / "intel_backlight"
    device.mkdir()
    (device / "brightness").symlink_to(READ_ONLY_INTEGER_FILE)
    current = _read_int(READ_ONLY_INTEGER_FILE)
    (device / "max_brightness").write_text(f"{current * 2}\n")
    async with Client(_brightness_server(backlight_root)) as client:
        read = await client.call_tool("get_current_brightness", {})
        written = await client.call_tool("set_brightness", {"brightness": 80})
    assert read.structured_content is not None
    assert read.structured_content["level"] == 50
    assert written.is_error
    assert written.structured_content is None
    assert f"no permission to write {device / 'brightness'}" in _text(written)
    assert "brightnessctl" in _text(written)
    assert _read_int(READ_ONLY_INTEGER_FILE) == current


async def test_device_removed_at_run_time_gives_a_clear_error(
    backlight_root: Path, make_backlight: MakeBacklight
) -> None:
    device = make_backlight("intel_backlight", brightness=400, max_brightness=1000)
    async with Client(_brightness_server(backlight_root)) as client:
        assert not (await client.call_tool("get_current_brightness", {})).is_error
        shutil.rmtree(device)
        read = await client.call_tool("get_current_brightness", {})
        written = await client.call_tool("set_brightness", {"brightness": 10})
    for result in (read, written):
        assert result.is_error
        assert "backlight device is gone" in _text(result)
        assert str(device) in _text(result)
    assert not device.exists(), "a failed write must not recreate the device"


async def test_missing_brightness_file_is_not_created_by_a_write(
    backlight_root: Path, make_backlight: MakeBacklight
) -> None:
    device = make_backlight("intel_backlight", brightness=400, max_brightness=1000)
    async with Client(_brightness_server(backlight_root)) as client:
        (device / "brightness").unlink()
        result = await client.call_tool("set_brightness", {"brightness": 10})
    assert result.is_error
    assert f"{device / 'brightness'} does not exist" in _text(result)
    assert not (device / "brightness").exists()


async def test_garbage_in_the_brightness_file_is_named(
    backlight_root: Path, make_backlight: MakeBacklight
) -> None:
    device = make_backlight("intel_backlight", brightness=400, max_brightness=1000)
    (device / "brightness").write_text("bright\n")
    async with Client(_brightness_server(backlight_root)) as client:
        result = await client.call_tool("get_current_brightness", {})
    assert result.is_error
    assert f"{device / 'brightness'} does not hold an integer" in _text(result)


async def test_firmware_device_is_preferred_over_raw(
    backlight_root: Path, make_backlight: MakeBacklight
) -> None:
    make_backlight("aaa_raw", brightness=10, max_brightness=100, kind="raw")
    make_backlight("zzz_firmware", brightness=70, max_brightness=100, kind="firmware")
    async with Client(_brightness_server(backlight_root)) as client:
        result = await client.call_tool("get_current_brightness", {})
    assert result.structured_content is not None
    assert (result.structured_content["device"], result.structured_content["level"]) == ("zzz_firmware", 70)


async def test_configured_device_is_used(backlight_root: Path, make_backlight: MakeBacklight) -> None:
    make_backlight("zzz_firmware", brightness=70, max_brightness=100, kind="firmware")
    raw = make_backlight("aaa_raw", brightness=10, max_brightness=100, kind="raw")
    async with Client(_brightness_server(backlight_root, backlight_device="aaa_raw")) as client:
        await client.call_tool("set_brightness", {"brightness": 55})
    assert (raw / "brightness").read_text().strip() == "55"


@pytest.mark.parametrize("device_option", [None, "intel_backlight"])
async def test_brightness_tools_are_absent_without_a_device(
    backlight_root: Path, device_option: str | None
) -> None:
    async with Client(_brightness_server(backlight_root, backlight_device=device_option)) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        info = await client.call_tool("get_system_info", {})
    assert names == {"get_system_info"}
    assert info.structured_content is not None
    assert info.structured_content["backends"]["brightness"] is None
    missing = {entry["feature"]: entry for entry in info.structured_content["missing"]}
    assert "no backlight found" in missing["brightness"]["reason"]
    assert str(backlight_root) in missing["brightness"]["reason"]
    if device_option:
        assert repr(device_option) in missing["brightness"]["reason"]


async def test_missing_root_folder_hides_the_tools(tmp_path: Path) -> None:
    async with Client(_brightness_server(tmp_path / "does-not-exist")) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
    assert not names & BRIGHTNESS_TOOLS


def test_unknown_brightness_backend_is_a_configuration_error() -> None:
    with pytest.raises(ValueError, match="brightness_backend must be one of auto, sysfs, brightnessctl"):
        create_server(brightness_backend="xrandr")
