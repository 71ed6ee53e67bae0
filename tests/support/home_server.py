"""A Home-Assistant-like MCP server for tests and benchmarks: devices with areas, friendly names and states.

Embedded (`support.home_server:create_server`, option `devices`: how many) or over stdio
(`python -m support.home_server 800`). Entity ids and states follow Home Assistant's shape
(`light.living_room`, `{"entity_id", "state", "attributes": {"friendly_name", "area", ...}}`);
the first twelve devices are fixed (the tests name them), the rest are generated
deterministically (seeded), so a count of lights that are on is known in advance.
"""

from __future__ import annotations

import random
import sys
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

FIXED: list[dict[str, Any]] = [
    {
        "entity_id": "light.living_room",
        "state": "off",
        "attributes": {"friendly_name": "Living Room Light", "area": "客厅"},
    },
    {
        "entity_id": "light.living_room_lamp",
        "state": "on",
        "attributes": {"friendly_name": "Living Room Floor Lamp", "area": "客厅"},
    },
    {"entity_id": "light.bedroom", "state": "on", "attributes": {"friendly_name": "卧室灯", "area": "卧室"}},
    {
        "entity_id": "light.kitchen",
        "state": "off",
        "attributes": {"friendly_name": "Kitchen Light", "area": "kitchen"},
    },
    {
        "entity_id": "cover.living_room_curtain",
        "state": "closed",
        "attributes": {"friendly_name": "客厅窗帘", "area": "客厅", "current_position": 0},
    },
    {
        "entity_id": "cover.bedroom_blind",
        "state": "open",
        "attributes": {"friendly_name": "Bedroom Blind", "area": "bedroom", "current_position": 100},
    },
    {
        "entity_id": "climate.living_room_ac",
        "state": "off",
        "attributes": {"friendly_name": "客厅空调", "area": "客厅"},
    },
    {
        "entity_id": "switch.kitchen_kettle",
        "state": "off",
        "attributes": {"friendly_name": "Kettle", "area": "kitchen"},
    },
    {
        "entity_id": "sensor.living_room_temperature",
        "state": "22.5",
        "attributes": {"friendly_name": "客厅温度", "area": "客厅", "unit_of_measurement": "°C"},
    },
    {"entity_id": "fan.study", "state": "off", "attributes": {"friendly_name": "Study Fan", "area": "书房"}},
    {
        "entity_id": "lock.front_door",
        "state": "locked",
        "attributes": {"friendly_name": "Front Door", "area": "hallway"},
    },
    {
        "entity_id": "media_player.living_room_tv",
        "state": "off",
        "attributes": {"friendly_name": "客厅电视", "area": "客厅"},
    },
]
AREAS = ["客厅", "卧室", "kitchen", "书房", "bathroom", "阳台", "hallway", "garage", "dining room", "儿童房"]
DOMAINS = ["light", "light", "light", "switch", "sensor", "cover", "climate", "fan"]


def make_devices(count: int, seed: int = 7) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    devices = [dict(d, attributes=dict(d["attributes"])) for d in FIXED[:count]]
    for index in range(len(devices), count):
        domain = rng.choice(DOMAINS)
        area = rng.choice(AREAS)
        state = {
            "light": rng.choice(["on", "off", "off"]),
            "switch": rng.choice(["on", "off"]),
            "sensor": f"{rng.uniform(15, 30):.1f}",
            "cover": rng.choice(["open", "closed"]),
            "climate": rng.choice(["off", "cool", "heat"]),
            "fan": rng.choice(["on", "off"]),
        }[domain]
        attributes: dict[str, Any] = {"friendly_name": f"{area} {domain} {index}", "area": area}
        if domain == "light":
            attributes.update(brightness=rng.randint(0, 255), color_temp=rng.randint(150, 500))
        devices.append(
            {
                "entity_id": f"{domain}.device_{index}",
                "state": state,
                "attributes": attributes,
                "last_changed": f"2026-11-{rng.randint(1, 24):02d}T{rng.randint(0, 23):02d}:00:00Z",
            }
        )
    return devices


def create_server(devices: int = 12) -> MCPServer:
    server = MCPServer("home")
    states = {d["entity_id"]: d for d in make_devices(devices)}

    def find(entity_id: str) -> dict[str, Any]:
        if entity_id not in states:
            raise ToolError(f"unknown entity_id {entity_id!r}; get_states lists the devices")
        return states[entity_id]

    @server.tool(description="Every device (entity) with its state and attributes (friendly_name, area).")
    def get_states() -> list[dict[str, Any]]:
        return list(states.values())

    @server.tool(
        description="Turn a light, switch, fan or media player on, by its entity_id (e.g. light.kitchen)."
    )
    def turn_on(entity_id: Annotated[str, Field(description="e.g. light.living_room")]) -> dict[str, Any]:
        device = find(entity_id)
        device["state"] = "on"
        return device

    @server.tool(description="Turn a light, switch, fan or media player off, by its entity_id.")
    def turn_off(entity_id: Annotated[str, Field(description="e.g. light.living_room")]) -> dict[str, Any]:
        device = find(entity_id)
        device["state"] = "off"
        return device

    @server.tool(description="Move a cover (curtain, blind) to a position: 0 is closed, 100 fully open.")
    def set_cover_position(
        entity_id: Annotated[str, Field(description="e.g. cover.living_room_curtain")],
        position: Annotated[int, Field(ge=0, le=100)],
    ) -> dict[str, Any]:
        device = find(entity_id)
        device["attributes"]["current_position"] = position
        device["state"] = "closed" if position == 0 else "open"
        return device

    return server


if __name__ == "__main__":
    create_server(int(sys.argv[1]) if len(sys.argv) > 1 else 12).run("stdio")
