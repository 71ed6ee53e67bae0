"""Volume tools against a real PulseAudio daemon (null sink), through an in-memory MCP client."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client

from mcp_nexus.builtin.device import create_server

VOLUME_TOOLS = {"get_current_volume", "adjust_volume"}


def _volume_server(pulse: Any, **options: Any) -> Any:
    return create_server(
        audio_backend="pactl", brightness_backend="none", pulse_server=pulse.address, **options
    )


async def test_volume_tools_are_advertised_with_a_0_to_100_schema(pulse: Any) -> None:
    async with Client(_volume_server(pulse)) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) >= VOLUME_TOOLS
    level = tools["adjust_volume"].input_schema["properties"]["level"]
    assert level["type"] == "integer"
    assert (level["minimum"], level["maximum"]) == (0, 100)
    assert tools["adjust_volume"].input_schema["required"] == ["level"]
    assert tools["get_current_volume"].output_schema is not None
    assert tools["get_current_volume"].annotations is not None
    assert tools["get_current_volume"].annotations.read_only_hint is True


@pytest.mark.parametrize("level", [0, 1, 37, 99, 100])
async def test_set_volume_reaches_pulseaudio_and_reads_back(pulse: Any, level: int) -> None:
    async with Client(_volume_server(pulse)) as client:
        result = await client.call_tool("adjust_volume", {"level": level})
        assert not result.is_error, result.content
        assert result.structured_content == {"level": level, "muted": False, "backend": "pactl"}
        assert result.content[0].text == f"Volume set to {level}%."  # type: ignore[union-attr]
        # The sound server itself agrees, not just our own read path.
        assert pulse.sink_percent() == level
        read = await client.call_tool("get_current_volume", {})
    assert not read.is_error
    assert read.structured_content is not None
    assert read.structured_content["level"] == level
    assert read.content[0].text == f"The volume is {level}%."  # type: ignore[union-attr]


async def test_volume_changed_outside_is_seen_with_the_mute_state(pulse: Any) -> None:
    pulse.pactl("set-sink-volume", "@DEFAULT_SINK@", "64%")
    pulse.pactl("set-sink-mute", "@DEFAULT_SINK@", "1")
    try:
        async with Client(_volume_server(pulse)) as client:
            result = await client.call_tool("get_current_volume", {})
    finally:
        pulse.pactl("set-sink-mute", "@DEFAULT_SINK@", "0")
    assert result.structured_content == {"level": 64, "muted": True, "backend": "pactl"}
    assert "muted" in result.content[0].text  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"level": 101}, "less than or equal to 100"),
        ({"level": -1}, "greater than or equal to 0"),
        ({"level": "abc"}, "valid integer"),
        ({"level": 50.5}, "valid integer"),
        ({"level": None}, "valid integer"),
        ({}, "Field required"),
    ],
)
async def test_bad_levels_are_rejected_and_leave_the_volume_alone(
    pulse: Any, arguments: dict[str, Any], problem: str
) -> None:
    pulse.pactl("set-sink-volume", "@DEFAULT_SINK@", "23%")
    async with Client(_volume_server(pulse)) as client:
        result = await client.call_tool("adjust_volume", arguments)
    assert result.is_error
    text = result.content[0].text  # type: ignore[union-attr]
    assert "level" in text and problem in text
    assert pulse.sink_percent() == 23


async def test_numeric_strings_are_accepted_like_numbers(pulse: Any) -> None:
    # LLM clients often quote numbers; the argument model coerces "40" but not "abc".
    async with Client(_volume_server(pulse)) as client:
        result = await client.call_tool("adjust_volume", {"level": "40"})
    assert not result.is_error
    assert pulse.sink_percent() == 40


async def test_amixer_backend_drives_the_same_server_through_the_alsa_pulse_plugin(
    pulse: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # amixer -D pulse is a real ALSA mixer whose other end is our daemon.
    monkeypatch.setenv("PULSE_SERVER", pulse.address)
    server = create_server(audio_backend="amixer", brightness_backend="none", alsa_device="pulse")
    async with Client(server) as client:
        assert {tool.name for tool in (await client.list_tools()).tools} >= VOLUME_TOOLS
        for level in (0, 25, 100):
            result = await client.call_tool("adjust_volume", {"level": level})
            assert not result.is_error, result.content
            assert result.structured_content is not None
            assert result.structured_content["backend"] == "amixer"
            assert result.structured_content["level"] == level
            assert pulse.sink_percent() == level
        read = await client.call_tool("get_current_volume", {})
    assert read.structured_content == {"level": 100, "muted": False, "backend": "amixer"}


async def test_sound_server_gone_at_run_time_gives_a_clear_error(private_pulse: Any) -> None:
    server = _volume_server(private_pulse)
    async with Client(server) as client:
        assert not (await client.call_tool("adjust_volume", {"level": 30})).is_error
        private_pulse.process.terminate()
        private_pulse.process.wait(timeout=10)
        for name, arguments in (("get_current_volume", {}), ("adjust_volume", {"level": 60})):
            result = await client.call_tool(name, arguments)
            assert result.is_error
            assert result.structured_content is None
            text = result.content[0].text  # type: ignore[union-attr]
            assert "PulseAudio/PipeWire did not answer through pactl" in text
            # pactl's own reason is passed on (its wording varies between versions).
            assert "Connection" in text


async def test_volume_tools_are_absent_when_no_mixer_answers(tmp_path: Any) -> None:
    server = create_server(
        audio_backend="pactl", brightness_backend="none", pulse_server=f"unix:{tmp_path}/no-such-socket"
    )
    async with Client(server) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert names == {"get_system_info"}
        info = await client.call_tool("get_system_info", {})
        # Calling a tool that is not advertised must not reach a backend either.
        hidden = await client.call_tool("adjust_volume", {"level": 10})
    assert hidden.is_error
    assert info.structured_content is not None
    assert info.structured_content["backends"]["volume"] is None
    missing = {entry["feature"]: entry for entry in info.structured_content["missing"]}
    assert "no audio mixer found" in missing["volume"]["reason"]
    assert "pulseaudio-utils" in missing["volume"]["install"]
    assert "No volume control" in info.content[0].text  # type: ignore[union-attr]


def test_unknown_audio_backend_is_a_configuration_error() -> None:
    with pytest.raises(ValueError, match="audio_backend must be one of auto, pactl, amixer, osascript, none"):
        create_server(audio_backend="sndio")
