"""The device server: system info always, volume and brightness when this host has a backend.

Tools whose backend is missing are not registered at all, so a gateway that merges
servers by priority falls through to another server offering the same name.
"""

from __future__ import annotations

from typing import Annotated

import anyio.to_thread
from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from mcp_nexus import __version__ as nexus_version
from mcp_nexus.builtin.device.backends import DeviceBackends, detect_backends
from mcp_nexus.builtin.device.brightness import BrightnessBackend, BrightnessReading
from mcp_nexus.builtin.device.brightness.sysfs import DEFAULT_BACKLIGHT_ROOT
from mcp_nexus.builtin.device.commands import DEFAULT_TIMEOUT_SECONDS
from mcp_nexus.builtin.device.errors import BackendError
from mcp_nexus.builtin.device.system_info import SystemInfo, collect_system_info, describe_system_info
from mcp_nexus.builtin.device.volume import VolumeBackend, VolumeReading
from mcp_nexus.builtin.device.volume.amixer import DEFAULT_CONTROL
from mcp_nexus.builtin.device.volume.pactl import DEFAULT_SINK
from mcp_nexus.builtin.numeric_text import AcceptsQuotedInteger

SERVER_NAME = "nexus-device"
_READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False)
_SETTER = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)

# LLM clients often quote numbers: "40" is taken as 40 (the gateway's argument check agrees).
Percent = Annotated[int, Field(ge=0, le=100), AcceptsQuotedInteger()]


def _answer(sentence: str, reading: BaseModel) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=sentence)],
        structured_content=reading.model_dump(mode="json"),
    )


def _failure(sentence: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=sentence)], is_error=True)


def _describe_volume(reading: VolumeReading, prefix: str) -> str:
    muted = " (output is muted)" if reading.muted else ""
    return f"{prefix} {reading.level}%{muted}."


def _add_system_info_tool(server: MCPServer, backends: DeviceBackends) -> None:
    async def get_system_info() -> Annotated[CallToolResult, SystemInfo]:
        """Describe this machine: OS, kernel, hostname, CPU, load, memory, disks, uptime, battery,
        Python and Nexus versions, and which device controls are available or missing."""
        info = await anyio.to_thread.run_sync(collect_system_info, backends.names(), backends.missing)
        return _answer(describe_system_info(info), info)

    server.add_tool(get_system_info, title="System information", annotations=_READ_ONLY)


def _add_volume_tools(server: MCPServer, volume: VolumeBackend) -> None:
    async def get_current_volume() -> Annotated[CallToolResult, VolumeReading]:
        """Read the current output (speaker) volume of this machine, in percent."""
        try:
            reading = await volume.read()
        except BackendError as exc:
            return _failure(f"Cannot read the volume: {exc}.")
        return _answer(_describe_volume(reading, "The volume is"), reading)

    async def adjust_volume(
        level: Annotated[
            Percent, Field(description="Target output volume in percent: 0 is silent, 100 is full.")
        ],
    ) -> Annotated[CallToolResult, VolumeReading]:
        """Set the output (speaker) volume of this machine to an absolute level in percent."""
        try:
            reading = await volume.write(level)
        except BackendError as exc:
            return _failure(f"Cannot set the volume to {level}%: {exc}.")
        return _answer(_describe_volume(reading, "Volume set to"), reading)

    server.add_tool(get_current_volume, title="Current volume", annotations=_READ_ONLY)
    server.add_tool(adjust_volume, title="Set volume", annotations=_SETTER)


def _add_brightness_tools(server: MCPServer, backlight: BrightnessBackend) -> None:
    async def get_current_brightness() -> Annotated[CallToolResult, BrightnessReading]:
        """Read the current screen brightness of this machine, in percent of its maximum."""
        try:
            reading = await backlight.read()
        except BackendError as exc:
            return _failure(f"Cannot read the brightness: {exc}.")
        return _answer(f"The screen brightness is {reading.level}%.", reading)

    async def set_brightness(
        brightness: Annotated[Percent, Field(description="Target screen brightness in percent, 0-100.")],
    ) -> Annotated[CallToolResult, BrightnessReading]:
        """Set the screen brightness of this machine to an absolute level in percent."""
        try:
            reading = await backlight.write(brightness)
        except BackendError as exc:
            return _failure(f"Cannot set the brightness to {brightness}%: {exc}.")
        return _answer(f"Screen brightness set to {reading.level}%.", reading)

    server.add_tool(get_current_brightness, title="Current brightness", annotations=_READ_ONLY)
    server.add_tool(set_brightness, title="Set brightness", annotations=_SETTER)


def create_server(
    backlight_root: str = DEFAULT_BACKLIGHT_ROOT,
    audio_backend: str = "auto",
    brightness_backend: str = "auto",
    *,
    backlight_device: str | None = None,
    pulse_server: str | None = None,
    pulse_sink: str = DEFAULT_SINK,
    alsa_device: str | None = None,
    alsa_control: str = DEFAULT_CONTROL,
    command_timeout: float = DEFAULT_TIMEOUT_SECONDS,
    name: str = SERVER_NAME,
) -> MCPServer:
    """Detect the backends (blocking, well under a second on a normal host) and build the server.

    Every option is a plain value so a gateway can pass its config section as keyword arguments.
    Unknown backend names or a non-positive timeout raise ValueError.
    """
    backends = detect_backends(
        backlight_root=backlight_root,
        audio_backend=audio_backend,
        brightness_backend=brightness_backend,
        backlight_device=backlight_device,
        pulse_server=pulse_server,
        pulse_sink=pulse_sink,
        alsa_device=alsa_device,
        alsa_control=alsa_control,
        command_timeout=command_timeout,
    )
    server: MCPServer = MCPServer(
        name,
        title="Nexus device",
        version=nexus_version,
        instructions=(
            "Controls and describes the machine this server runs on: system information, "
            "speaker volume and screen brightness (the latter two only where the host has them)."
        ),
    )
    _add_system_info_tool(server, backends)
    if backends.volume is not None:
        _add_volume_tools(server, backends.volume)
    if backends.brightness is not None:
        _add_brightness_tools(server, backends.brightness)
    return server
