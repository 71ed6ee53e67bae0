"""Context task 1: "turn off every light that is on in a room where motion has been off for 30 minutes".

A join of two lists (motion sensors, lights) followed by one service call per light to turn off,
over the Home-Assistant-like stdio server bench/context_home_server.py (by default 800 devices,
60 rooms with a motion sensor each, 40 lights to turn off). The truth is the server's generated
state (`make_home(...).truth`); an answer is correct when the model names exactly those lights
and, read back from the server afterwards, exactly those lights went off and no other changed.

The four scripts below are written as a model would act in each way of working (see
context_conversation.py); none of them reads the truth.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from context_conversation import Conversation, Seen, pick, read_back
from context_home_server import IDLE_MINUTES, make_home

BENCH = Path(__file__).resolve().parent
QUESTION = f"Turn off every light that is on in a room where motion has been off for {IDLE_MINUTES} minutes."

# The model's code for the join, the same whether the rows come from files or from tool calls.
JOIN = f"""
from datetime import datetime, timedelta
now = datetime.fromisoformat(config["now"])
idle = {{s["attributes"]["area"] for s in sensors["entities"]
        if s["attributes"].get("device_class") == "motion" and s["state"] == "off"
        and now - datetime.fromisoformat(s["last_changed"]) >= timedelta(minutes={IDLE_MINUTES})}}
targets = [l["entity_id"] for l in lights["entities"]
           if l["state"] == "on" and l["attributes"].get("area") in idle]
"""
PEEK = """
print(tools.home.get_config())
for domain in ("binary_sensor", "light"):
    rows = tools.home.get_states(domain=domain)
    print(domain, {k: v for k, v in rows.items() if k != "entities"}, rows["entities"][:2])
"""
CODE = (
    "config = tools.home.get_config()\n"
    'sensors = tools.home.get_states(domain="binary_sensor")\n'
    'lights = tools.home.get_states(domain="light")\n' + JOIN + "for entity_id in targets:\n"
    '    tools.home.call_service(domain="light", service="turn_off", entity_id=entity_id)\n'
    'print(json.dumps({"turned_off": targets, "idle_rooms": sorted(idle)}))\n'
)


def offload_code(sensors_file: str, lights_file: str, now: str) -> str:
    """The model's join over the two offloaded lists, with the time it read from get_config."""
    return (
        f'sensors, lights = files["{sensors_file}"], files["{lights_file}"]\n'
        f"config = {{'now': {now!r}}}\n"
        + JOIN
        + 'print(json.dumps({"targets": targets, "idle_rooms": sorted(idle)}))\n'
    )


@dataclass
class LightsTask:
    devices: int = 800
    motion: int = 60
    targets: int = 40
    seed: int = 24

    def __post_init__(self) -> None:
        self.home = make_home(self.devices, self.motion, self.targets, self.seed)
        self.name = (
            f"lights/motion join: {self.devices} devices, {self.motion} motion sensors, "
            f"{len(self.home.truth)} service calls"
        )
        self.question = QUESTION

    def servers(self, workdir: Path) -> dict[str, Any]:
        """The home server as its own process over stdio, fresh state for every run."""
        args = [
            str(BENCH / "context_home_server.py"),
            "--devices",
            str(self.devices),
            "--motion",
            str(self.motion),
        ]
        args += ["--targets", str(self.targets), "--seed", str(self.seed)]
        return {"home": {"command": sys.executable, "args": args}}

    async def run(self, mode: str, chat: Conversation) -> tuple[bool, str]:
        turned_off = await SCRIPTS[mode](chat)
        chat.answer(f"I turned off {len(turned_off)} lights: {', '.join(sorted(turned_off))}.")
        return await self.check(chat, turned_off), f"{len(turned_off)} lights turned off"

    async def check(self, chat: Conversation, turned_off: list[str]) -> bool:
        """Right when the model named exactly the truth and the server's lights changed exactly so."""
        lights = await read_back(chat.runtime, "home", "get_states", {"domain": "light"})
        now_on = {row["entity_id"] for row in lights["entities"] if row["state"] == "on"}
        was_on = {
            e["entity_id"]
            for e in self.home.entities
            if e["entity_id"].startswith("light.") and e["state"] == "on"
        }
        return set(turned_off) == self.home.truth and was_on - now_on == self.home.truth and now_on <= was_on


def _idle_lights(config: dict[str, Any], sensors: dict[str, Any], lights: dict[str, Any]) -> list[str]:
    """What the model works out from the rows in its context (the same join as its code)."""
    scope: dict[str, Any] = {"config": config, "sensors": sensors, "lights": lights, "datetime": datetime}
    scope["timedelta"] = timedelta
    exec(JOIN, scope)  # the model's reasoning over rows it read, written as the code it would write
    return list(scope["targets"])


def _turn_off(name: str, targets: list[str]) -> list[tuple[str, dict[str, Any]]]:
    arguments = [{"domain": "light", "service": "turn_off", "entity_id": entity_id} for entity_id in targets]
    if name == "call_tool":
        return [("call_tool", {"name": "home.call_service", "arguments": a}) for a in arguments]
    return [(name, a) for a in arguments]


def _succeeded(results: list[Seen], targets: list[str]) -> list[str]:
    return [entity_id for entity_id, seen in zip(targets, results, strict=True) if not seen.is_error]


async def relay(chat: Conversation) -> list[str]:
    config, sensors, lights = await chat.turn(
        ("home.get_config", {}),
        ("home.get_states", {"domain": "binary_sensor"}),
        ("home.get_states", {"domain": "light"}),
    )
    targets = _idle_lights(config.json(), sensors.json(), lights.json())
    return _succeeded(await chat.batched(_turn_off("home.call_service", targets)), targets)


async def search(chat: Conversation) -> list[str]:
    states, service, clock = await chat.find(
        "list lights and motion sensors with their states", "turn off a light", "current time at home"
    )
    names = pick(clock, "home.get_config"), pick(states, "home.get_states")
    pick(service, "home.call_service")
    config, sensors, lights = await chat.turn(
        ("call_tool", {"name": names[0], "arguments": {}}),
        ("call_tool", {"name": names[1], "arguments": {"domain": "binary_sensor"}}),
        ("call_tool", {"name": names[1], "arguments": {"domain": "light"}}),
    )
    targets = _idle_lights(config.json(), sensors.json(), lights.json())
    return _succeeded(await chat.batched(_turn_off("call_tool", targets)), targets)


async def offload(chat: Conversation) -> list[str]:
    config, sensors, lights = await chat.turn(
        ("home.get_config", {}),
        ("home.get_states", {"domain": "binary_sensor"}),
        ("home.get_states", {"domain": "light"}),
    )
    if sensors.offloaded_file is None or lights.offloaded_file is None:
        raise AssertionError("the state lists were not offloaded: the offload way cannot be measured")
    code = offload_code(sensors.offloaded_file, lights.offloaded_file, config.json()["now"])
    files = [sensors.offloaded_file, lights.offloaded_file]
    (joined,) = await chat.turn(("python_sandbox", {"code": code, "files": files}))
    targets = list(json.loads(joined.text)["targets"])
    return _succeeded(await chat.batched(_turn_off("home.call_service", targets)), targets)


async def code(chat: Conversation) -> list[str]:
    await chat.turn(("python_sandbox", {"code": PEEK}))  # what do the rows look like?
    (done,) = await chat.turn(("python_sandbox", {"code": CODE}))
    if done.is_error:
        raise AssertionError(f"the code failed: {done.text[:2000]}")
    return list(json.loads(done.text)["turned_off"])


SCRIPTS = {"relay": relay, "search": search, "offload": offload, "code": code}
