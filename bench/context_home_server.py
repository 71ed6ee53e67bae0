"""A Home-Assistant-like MCP server over stdio for the context benchmark's lights/motion task.

    .venv/bin/python bench/context_home_server.py [--devices 800] [--motion 60] [--targets 40] [--seed 24]

Rooms each have one motion sensor (`binary_sensor.motion_<room>`, device_class motion); the
other entities (lights, switches, temperature sensors, door sensors, covers, ...) are spread over
the rooms. The state is generated from the seed so that exactly `targets` lights are on in rooms
whose motion sensor has been off for at least 30 minutes: `make_home(...).truth` is that set, the
answer the benchmark checks every way of doing the task against. Timestamps are written relative
to the moment the server starts (`last_changed` in UTC; `get_config` gives "now"), and no room
sits near the 30-minute line, so a slow run cannot change the answer.

Tools, shaped like Home Assistant's REST/MCP surface: `get_config`, `get_states(domain=None)`,
`call_service(domain, service, entity_id)` (turn_on, turn_off, toggle).
"""

from __future__ import annotations

import argparse
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

IDLE_MINUTES = 30
"""The question's line: a room is idle when its motion sensor has been off this long."""

ROOM_KINDS = [
    "living room",
    "bedroom",
    "kitchen",
    "office",
    "bathroom",
    "hallway",
    "garage",
    "study",
    "porch",
]
OTHER_DOMAINS = ["switch", "sensor", "binary_sensor", "cover", "climate", "fan", "media_player"]
SERVICES = {"turn_on": "on", "turn_off": "off"}


@dataclass
class Home:
    """The generated entities (minutes since their last change, not yet timestamps) and the answer."""

    entities: list[dict[str, Any]]
    minutes_ago: dict[str, float]
    truth: set[str] = field(default_factory=set)
    """The lights that are on in a room idle for IDLE_MINUTES or more: what must be turned off."""


def make_home(devices: int = 800, motion: int = 60, targets: int = 40, seed: int = 24) -> Home:
    """Entities for `devices` devices (motion sensors included) over `motion` rooms; exactly `targets` answer the question."""
    if motion < 2 or devices < motion + 2 * targets:
        raise ValueError(
            f"make_home needs at least 2 rooms and devices >= motion + 2 * targets "
            f"(got devices={devices}, motion={motion}, targets={targets})"
        )
    rng = random.Random(seed)
    rooms = [f"{ROOM_KINDS[i % len(ROOM_KINDS)]} {i // len(ROOM_KINDS) + 1}" for i in range(motion)]
    lights = round((devices - motion) * 0.4)
    light_rooms = [rng.choice(rooms) for _ in range(lights)]
    # Rooms go idle in a random order until their lights can hold the targets with some left off.
    idle: set[str] = set()
    for room in rng.sample(rooms, len(rooms)):
        if sum(1 for r in light_rooms if r in idle) >= targets * 3 // 2 or len(idle) == motion - 1:
            break
        idle.add(room)
    idle_lights = [i for i, room in enumerate(light_rooms) if room in idle]
    if len(idle_lights) < targets:
        raise ValueError(f"only {len(idle_lights)} lights in idle rooms for {targets} targets: add devices")
    lit_in_idle = set(rng.sample(idle_lights, targets))

    entities: list[dict[str, Any]] = []
    minutes_ago: dict[str, float] = {}

    def add(entity_id: str, state: str, minutes: float, **attributes: Any) -> None:
        entities.append({"entity_id": entity_id, "state": state, "attributes": attributes})
        minutes_ago[entity_id] = minutes

    for room in rooms:
        slug = room.replace(" ", "_")
        if room in idle:  # off for 35 minutes to 10 hours
            state, minutes = "off", rng.uniform(35, 600)
        else:  # on now, or off for less than 25 minutes
            state, minutes = rng.choice([("on", rng.uniform(0, 20)), ("off", rng.uniform(1, 25))])
        add(
            f"binary_sensor.motion_{slug}",
            state,
            minutes,
            friendly_name=f"{room.title()} Motion",
            device_class="motion",
            area=room,
        )
    truth: set[str] = set()
    for index, room in enumerate(light_rooms):
        entity_id = f"light.{room.replace(' ', '_')}_{index}"
        on = index in lit_in_idle if room in idle else rng.random() < 0.45
        if on and room in idle:
            truth.add(entity_id)
        add(
            entity_id,
            "on" if on else "off",
            rng.uniform(0, 900),
            friendly_name=f"{room.title()} Light {index}",
            area=room,
            brightness=rng.randint(1, 255) if on else None,
            color_mode="color_temp",
            supported_features=44,
        )
    for index in range(devices - motion - lights):
        domain, room = rng.choice(OTHER_DOMAINS), rng.choice(rooms)
        state, extra = _other_state(rng, domain)
        add(
            f"{domain}.{room.replace(' ', '_')}_{domain}_{index}",
            state,
            rng.uniform(0, 900),
            friendly_name=f"{room.title()} {domain.replace('_', ' ').title()} {index}",
            area=room,
            **extra,
        )
    return Home(entities, minutes_ago, truth)


def _other_state(rng: random.Random, domain: str) -> tuple[str, dict[str, Any]]:
    """A plausible state and attributes for a device that is not a light or a motion sensor."""
    if domain == "sensor":
        return f"{rng.uniform(16, 28):.1f}", {"device_class": "temperature", "unit_of_measurement": "°C"}
    if domain == "binary_sensor":  # doors and windows: a model must not take them for motion sensors
        return rng.choice(["on", "off"]), {"device_class": rng.choice(["door", "window"])}
    if domain == "cover":
        return rng.choice(["open", "closed"]), {"current_position": rng.choice([0, 50, 100])}
    if domain == "climate":
        return rng.choice(["off", "heat", "cool"]), {"temperature": rng.randint(18, 24)}
    return rng.choice(["on", "off"]), {}


def create_server(home: Home, now: datetime | None = None) -> MCPServer:
    """The MCP server over `home`, its timestamps relative to `now` (default: when it is created)."""
    started = now or datetime.now(UTC)
    states: dict[str, dict[str, Any]] = {}
    for entity in home.entities:
        changed = (started - timedelta(minutes=home.minutes_ago[entity["entity_id"]])).isoformat(
            timespec="seconds"
        )
        states[entity["entity_id"]] = {**entity, "last_changed": changed}
    server = MCPServer("home")

    @server.tool(
        description="The installation's settings: location name, time zone and the current time (UTC)."
    )
    def get_config() -> dict[str, Any]:
        return {
            "location_name": "Home",
            "time_zone": "UTC",
            "now": datetime.now(UTC).isoformat(timespec="seconds"),
        }

    @server.tool(
        description="Every entity (device or sensor) with its state, attributes (friendly_name, area, "
        "device_class, ...) and last_changed (UTC, ISO 8601). `domain` keeps one domain, e.g. light "
        "or binary_sensor (motion, door and window sensors)."
    )
    def get_states(
        domain: Annotated[str | None, Field(description="e.g. light, binary_sensor, switch")] = None,
    ) -> dict[str, Any]:
        rows = [s for s in states.values() if domain is None or s["entity_id"].startswith(f"{domain}.")]
        return {"count": len(rows), "entities": rows}

    @server.tool(
        description="Call a service on one entity: turn_on, turn_off or toggle (lights, switches, fans, "
        "media players). Returns the entity's new state."
    )
    def call_service(
        domain: Annotated[str, Field(description="e.g. light")],
        service: Annotated[str, Field(description="turn_on, turn_off or toggle")],
        entity_id: Annotated[str, Field(description="e.g. light.kitchen_3")],
    ) -> dict[str, Any]:
        entity = states.get(entity_id)
        if entity is None or not entity_id.startswith(f"{domain}."):
            raise ToolError(f"no {domain} entity {entity_id!r}; get_states lists them")
        if service == "toggle":
            service = "turn_off" if entity["state"] == "on" else "turn_on"
        if service not in SERVICES:
            raise ToolError(f"unknown service {service!r} for {domain}: use turn_on, turn_off or toggle")
        if entity["state"] != SERVICES[service]:
            entity["state"] = SERVICES[service]
            entity["last_changed"] = datetime.now(UTC).isoformat(timespec="seconds")
        return {"entity_id": entity_id, "state": entity["state"]}

    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=800)
    parser.add_argument("--motion", type=int, default=60, help="rooms, one motion sensor each")
    parser.add_argument("--targets", type=int, default=40, help="lights the question must turn off")
    parser.add_argument("--seed", type=int, default=24)
    args = parser.parse_args()
    create_server(make_home(args.devices, args.motion, args.targets, args.seed)).run("stdio")


if __name__ == "__main__":
    main()
