"""Home Assistant mapping (the design's 设备映射): friendly names and areas -> entity_id, state filters, cover positions."""

from __future__ import annotations

from mcp_nexus.control.home_assistant import (
    clamp_position,
    cover_position,
    devices_from,
    map_arguments,
    match_devices,
)
from support.home_server import make_devices

DEVICES = devices_from({"devices": make_devices(12)})


def best(text: str, **kwargs: object) -> str:
    found = match_devices(text, DEVICES, **kwargs)  # type: ignore[arg-type]
    assert found, f"nothing matched {text!r}"
    return found[0].device.entity_id


def test_chinese_and_english_names_map_to_entity_ids() -> None:
    assert best("客厅的灯") in {"light.living_room", "light.living_room_lamp"}
    assert best("打开客厅的灯") in {"light.living_room", "light.living_room_lamp"}
    assert best("living room light") == "light.living_room"
    assert best("卧室灯") == "light.bedroom"
    assert best("关上客厅窗帘") == "cover.living_room_curtain"
    assert best("kitchen light") == "light.kitchen"
    assert best("客厅空调") == "climate.living_room_ac"


def test_area_and_domain_must_agree() -> None:
    ids = {m.device.entity_id for m in match_devices("客厅的灯", DEVICES, limit=20)}
    assert ids == {"light.living_room", "light.living_room_lamp"}  # no bedroom light, no living-room TV


def test_state_filter() -> None:
    on = {m.device.entity_id for m in match_devices("客厅开着的灯", DEVICES, limit=20)}
    assert on == {"light.living_room_lamp"}
    off = {
        m.device.entity_id for m in match_devices("lights that are off in the living room", DEVICES, limit=20)
    }
    assert off == {"light.living_room"}


def test_home_assistant_state_objects_are_read() -> None:
    states = [
        {"entity_id": "light.x", "state": "on", "attributes": {"friendly_name": "书房灯", "area": "书房"}}
    ]
    (device,) = devices_from({"home_assistant": {"states": states}})
    assert (device.entity_id, device.name, device.area, device.state) == ("light.x", "书房灯", "书房", "on")
    assert devices_from({"devices": "not a list"}) == []


def test_cover_positions_are_0_to_100() -> None:
    assert cover_position("窗帘打开一半") == 50
    assert cover_position("open the blind to 30%") == 30
    assert cover_position("关上窗帘") == 0
    assert cover_position("fully open the curtain") == 100
    assert clamp_position(150) == 100 and clamp_position(-5) == 0 and clamp_position("x") == 0


def test_arguments_are_mapped_and_clamped() -> None:
    mapped, notes = map_arguments({"entity_id": "客厅窗帘", "position": 180}, "把客厅窗帘全开", DEVICES)
    assert mapped == {"entity_id": "cover.living_room_curtain", "position": 100}
    assert len(notes) == 2
    same, none = map_arguments({"entity_id": "light.kitchen"}, "kitchen", DEVICES)
    assert same == {"entity_id": "light.kitchen"} and none == []
