"""Quoted numbers on the device server itself: "40" is 40, and nothing looser than JSON Schema.

The gateway's argument check applies the same rule (tests/builtin/test_quoted_numbers_through_gateway.py).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from mcp_nexus.builtin.device import create_server
from mcp_nexus.builtin.numeric_text import number_from_text

MakeBacklight = Callable[..., Path]


@pytest.mark.parametrize(
    ("value", "raw"), [("40", 400), (" 40 ", 400), ("40.0", 400), ("4e1", 400), ("+7", 70)]
)
async def test_quoted_brightness_is_set(
    backlight_root: Path, make_backlight: MakeBacklight, value: str, raw: int
) -> None:
    device = make_backlight("intel_backlight", brightness=100, max_brightness=1000)
    async with Client(create_server(backlight_root=str(backlight_root), audio_backend="none")) as client:
        result = await client.call_tool("set_brightness", {"brightness": value})
    assert not result.is_error, result.content
    assert (device / "brightness").read_text().strip() == str(raw)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (True, "valid integer"),  # not 1
        ("40.5", "valid integer"),
        ("1_0", "valid integer"),  # Python's int() would say 10
        ("\u0664\u0660", "valid integer"),  # Arabic-Indic digits for 40
        ("nan", "valid integer"),
        ("", "valid integer"),
        ("101", "less than or equal to 100"),
        ("-1", "greater than or equal to 0"),
    ],
)
async def test_other_values_are_refused_and_leave_the_device_alone(
    backlight_root: Path, make_backlight: MakeBacklight, value: Any, problem: str
) -> None:
    device = make_backlight("intel_backlight", brightness=100, max_brightness=1000)
    async with Client(create_server(backlight_root=str(backlight_root), audio_backend="none")) as client:
        result = await client.call_tool("set_brightness", {"brightness": value})
    assert result.is_error
    text = str(result.content[0].text)  # type: ignore[union-attr]
    assert "brightness" in text and problem in text
    assert (device / "brightness").read_text() == "100\n"


async def test_a_boolean_volume_is_refused(pulse: Any) -> None:
    pulse.pactl("set-sink-volume", "@DEFAULT_SINK@", "23%")
    server = create_server(audio_backend="pactl", brightness_backend="none", pulse_server=pulse.address)
    async with Client(server) as client:
        refused = await client.call_tool("adjust_volume", {"level": True})
        quoted = await client.call_tool("adjust_volume", {"level": "35"})
    assert refused.is_error and "valid integer" in str(refused.content[0].text)  # type: ignore[union-attr]
    assert not quoted.is_error
    assert pulse.sink_percent() == 35


@pytest.mark.parametrize(
    ("text", "integer", "expected"),
    [
        ("40", True, 40),
        ("-3", True, -3),
        ("40.0", True, 40),
        ("4e1", True, 40),
        (".5", False, 0.5),
        ("2.5", False, 2.5),
        ("2.5", True, None),
        ("1e999", False, None),
        ("inf", False, None),
        ("0x10", True, None),
        ("1" * 65, True, None),
        ("4 0", True, None),
    ],
)
def test_the_rule_for_a_string_that_is_a_number(text: str, integer: bool, expected: float | None) -> None:
    number = number_from_text(text, integer=integer)
    assert number == expected
    if expected is not None:
        assert type(number) is type(expected)
