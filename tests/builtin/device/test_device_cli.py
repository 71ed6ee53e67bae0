"""`nexus device serve` over stdio and HTTP, and `nexus device info`, as separate processes."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from support.polling import eventually_sync
from support.ports import free_port
from support.processes import port_open

NEXUS = str(Path(sys.executable).with_name("nexus"))
START_TIMEOUT_SECONDS = 20.0


def _backlight(root: Path) -> Path:
    device = root / "intel_backlight"
    device.mkdir(parents=True)
    (device / "brightness").write_text("500\n")
    (device / "max_brightness").write_text("1000\n")
    return device


async def test_stdio_serve_exposes_real_volume_and_brightness(pulse: Any, tmp_path: Path) -> None:
    device = _backlight(tmp_path / "backlight")
    parameters = StdioServerParameters(
        command=NEXUS,
        args=["device", "serve", "--backlight-root", str(tmp_path / "backlight"), "--audio-backend", "pactl"],
        # The child does not inherit our environment: hand it the sound server explicitly.
        env={"PATH": os.environ["PATH"], "PULSE_SERVER": pulse.address, "HOME": str(tmp_path)},
    )
    async with Client(parameters, read_timeout_seconds=30) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert names == {
            "get_system_info",
            "get_current_volume",
            "adjust_volume",
            "get_current_brightness",
            "set_brightness",
        }
        volume = await client.call_tool("adjust_volume", {"level": 66})
        brightness = await client.call_tool("set_brightness", {"brightness": 20})
        rejected = await client.call_tool("adjust_volume", {"level": 101})
        info = await client.call_tool("get_system_info", {})
    assert volume.structured_content == {"level": 66, "muted": False, "backend": "pactl"}
    assert pulse.sink_percent() == 66
    assert brightness.structured_content is not None
    assert brightness.structured_content["level"] == 20
    assert (device / "brightness").read_text().strip() == "200"
    assert rejected.is_error
    assert pulse.sink_percent() == 66
    assert info.structured_content is not None
    assert info.structured_content["backends"] == {"volume": "pactl", "brightness": "sysfs"}


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    options = ["--port", str(port), "--backlight-root", str(tmp_path), "--audio-backend", "none"]
    process = subprocess.Popen(
        [NEXUS, "device", "serve", "--http", *options],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:

        def listening() -> bool:
            if process.poll() is not None:
                stderr = process.stderr.read().decode(errors="replace") if process.stderr else ""
                pytest.fail(f"nexus device serve --http exited with {process.returncode}: {stderr}")
            return port_open(port)

        eventually_sync(
            listening, START_TIMEOUT_SECONDS, f"nexus device serve --http to listen on {port}", interval=0.1
        )
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        if process.stderr:
            process.stderr.close()


async def test_http_serve_answers_on_127_0_0_1(http_server: str) -> None:
    async with Client(http_server) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        info = await client.call_tool("get_system_info", {})
    assert names == {"get_system_info"}
    assert info.structured_content is not None
    assert info.structured_content["hostname"] == socket.gethostname()


def test_info_prints_the_detected_backends_as_json(tmp_path: Path) -> None:
    _backlight(tmp_path)
    completed = subprocess.run(
        [NEXUS, "device", "info", "--json", "--backlight-root", str(tmp_path), "--audio-backend", "none"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    info = json.loads(completed.stdout)
    assert info["backends"] == {"volume": None, "brightness": "sysfs"}
    assert info["hostname"] == socket.gethostname()


def test_bad_backend_option_is_refused_with_its_name() -> None:
    completed = subprocess.run(
        [NEXUS, "device", "serve", "--audio-backend", "bogus"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 2
    assert "audio_backend must be one of" in completed.stderr
