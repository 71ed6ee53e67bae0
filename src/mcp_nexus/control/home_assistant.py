"""Home Assistant device mapping, as the controller design has it: friendly names and areas -> `entity_id`.

The environment carries the devices (`environment["devices"]`, or Home Assistant's own
state objects `{"entity_id", "state", "attributes": {"friendly_name", "area"}}`). A phrase
such as "客厅的灯" or "living room light" is matched by area (Chinese and English names of
the same room), by domain words (灯/light -> `light.*`, 窗帘/curtain -> `cover.*`), and by
name similarity (`rapidfuzz`); a state filter keeps e.g. only the lights that are on. Cover
positions are 0 (closed) to 100 (fully open): "一半"/"half" is 50, out-of-range values are
clamped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from rapidfuzz import fuzz

# Rooms by their English key; each entry lists the words that name it.
AREA_WORDS: dict[str, tuple[str, ...]] = {
    "living_room": ("客厅", "起居室", "living room", "lounge", "living"),
    "bedroom": ("卧室", "睡房", "bedroom"),
    "master_bedroom": ("主卧", "master bedroom"),
    "kids_room": ("儿童房", "kids room", "children's room", "nursery"),
    "kitchen": ("厨房", "kitchen"),
    "dining_room": ("餐厅", "饭厅", "dining room", "dining"),
    "study": ("书房", "study", "office"),
    "bathroom": ("浴室", "卫生间", "洗手间", "bathroom", "toilet"),
    "balcony": ("阳台", "balcony"),
    "hallway": ("走廊", "玄关", "过道", "hallway", "corridor", "entrance"),
    "garage": ("车库", "garage"),
    "garden": ("花园", "院子", "garden", "yard"),
}

# Home Assistant domains by the words that name their devices.
DOMAIN_WORDS: dict[str, tuple[str, ...]] = {
    "light": ("灯", "light", "lights", "lamp", "lamps"),
    "cover": ("窗帘", "百叶窗", "卷帘", "curtain", "curtains", "blind", "blinds", "cover", "shade"),
    "climate": ("空调", "暖气", "温控", "air conditioner", "ac", "thermostat", "heating", "climate"),
    "switch": ("开关", "插座", "switch", "plug", "socket"),
    "fan": ("风扇", "电扇", "fan"),
    "lock": ("门锁", "锁", "lock"),
    "media_player": ("电视", "音箱", "音响", "tv", "television", "speaker"),
    "sensor": ("传感器", "温度", "湿度", "sensor", "temperature", "humidity"),
}

# Words that ask for devices in one state ("which lights are on", "开着的灯").
STATE_WORDS: dict[str, tuple[str, ...]] = {
    "on": ("开着", "亮着", "打开的", "are on", "is on", "turned on", "switched on"),
    "off": ("关着", "灭着", "关闭的", "are off", "is off", "turned off", "switched off"),
    "open": ("开着的窗帘", "are open", "is open"),
    "closed": ("关着的窗帘", "are closed", "is closed"),
}

MIN_SCORE = 60.0


@dataclass(frozen=True, slots=True)
class Device:
    entity_id: str
    name: str
    area: str | None = None
    state: str | None = None
    attributes: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    @property
    def domain(self) -> str:
        return self.entity_id.split(".", 1)[0]


@dataclass(frozen=True, slots=True)
class DeviceMatch:
    device: Device
    score: float  # 0-100
    why: str


def _words_in(text: str, words: tuple[str, ...]) -> bool:
    for word in words:
        if word.isascii():
            if re.search(rf"\b{re.escape(word)}\b", text):
                return True
        elif word in text:
            return True
    return False


def areas_in(text: str) -> set[str]:
    lowered = text.lower()
    return {area for area, words in AREA_WORDS.items() if _words_in(lowered, words)}


def domains_in(text: str) -> set[str]:
    lowered = text.lower()
    return {domain for domain, words in DOMAIN_WORDS.items() if _words_in(lowered, words)}


def state_filter_in(text: str) -> str | None:
    lowered = text.lower()
    for state, words in STATE_WORDS.items():
        if _words_in(lowered, words):
            return state
    return None


def area_key(area: str | None) -> str | None:
    """The room key of an area as a device names it ("客厅", "Living Room", "living_room")."""
    if not area:
        return None
    lowered = area.lower().replace("_", " ").strip()
    for key, words in AREA_WORDS.items():
        if lowered == key.replace("_", " ") or any(lowered == w for w in words):
            return key
    found = areas_in(lowered)
    return min(found) if found else lowered


def devices_from(environment: dict[str, Any]) -> list[Device]:
    """The devices an environment describes (`devices`, `home_assistant.devices` or `states`); others ignored."""
    raw: Any = environment.get("devices")
    home = environment.get("home_assistant")
    if raw is None and isinstance(home, dict):
        raw = home.get("devices") or home.get("states")
    if raw is None:
        raw = environment.get("states")
    devices = []
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("entity_id"), str):
            continue
        given = item.get("attributes")
        attributes: dict[str, Any] = given if isinstance(given, dict) else {}
        name = (
            item.get("name")
            or item.get("friendly_name")
            or attributes.get("friendly_name")
            or item["entity_id"]
        )
        area = item.get("area") or item.get("area_id") or attributes.get("area") or attributes.get("area_id")
        state = item.get("state")
        devices.append(
            Device(
                item["entity_id"],
                str(name),
                str(area) if area else None,
                None if state is None else str(state),
                attributes,
            )
        )
    return devices


def match_devices(
    text: str, devices: list[Device], *, domain: str | None = None, state: str | None = None, limit: int = 5
) -> list[DeviceMatch]:
    """Devices `text` may mean, best first: area and domain must agree when the text names them."""
    wanted_areas = areas_in(text)
    wanted_domains = {domain} if domain else domains_in(text)
    if state is None:
        state = state_filter_in(text)
    lowered = text.lower()
    matches = []
    for device in devices:
        if device.entity_id.lower() == lowered.strip():
            matches.append(DeviceMatch(device, 100.0, "exact entity_id"))
            continue
        if wanted_domains and device.domain not in wanted_domains:
            continue
        if state is not None and (device.state or "").lower() != state:
            continue
        device_area = area_key(device.area) or next(iter(areas_in(device.name)), None)
        if wanted_areas and device_area not in wanted_areas:
            continue
        similarity = max(
            fuzz.partial_ratio(device.name.lower(), lowered),
            fuzz.token_set_ratio(device.name.lower(), lowered),
        )
        score = similarity * 0.5 + (30.0 if wanted_areas else 0.0) + (20.0 if wanted_domains else 0.0)
        why = ", ".join(
            part
            for part in (
                f"area {device_area}" if wanted_areas else "",
                f"domain {device.domain}" if wanted_domains else "",
                f"state {state}" if state else "",
                f"name {similarity:.0f}%",
            )
            if part
        )
        if score >= MIN_SCORE or (wanted_areas and wanted_domains):
            matches.append(DeviceMatch(device, min(score, 100.0), why))
    matches.sort(key=lambda m: (-m.score, m.device.entity_id))
    return matches[:limit]


def cover_position(text: str) -> int | None:
    """The cover position (0 closed - 100 open) a phrase asks for, when it names one."""
    lowered = text.lower()
    percent = re.search(r"(\d{1,3})\s*(%|percent|％)", lowered)
    if percent:
        return clamp_position(int(percent.group(1)))
    if any(word in lowered for word in ("一半", "半开", "half")):
        return 50
    if any(word in lowered for word in ("全开", "完全打开", "fully open", "all the way open")):
        return 100
    if any(word in lowered for word in ("关上", "关闭", "拉上", "close", "shut")):
        return 0
    if any(word in lowered for word in ("打开", "拉开", "open")):
        return 100
    return None


def clamp_position(value: Any) -> int:
    try:
        number = round(float(value))
    except (TypeError, ValueError):
        return 0
    return max(0, min(100, number))


ENTITY_KEYS = ("entity_id", "entity", "device", "device_id")


def map_arguments(
    arguments: dict[str, Any], goal: str, devices: list[Device]
) -> tuple[dict[str, Any], list[str]]:
    """Arguments with friendly names replaced by entity ids and positions clamped; plus what was changed."""
    if not devices:
        return arguments, []
    known = {device.entity_id for device in devices}
    mapped = dict(arguments)
    notes = []
    for key in ENTITY_KEYS:
        value = mapped.get(key)
        if isinstance(value, str) and value not in known:
            found = match_devices(value, devices) or match_devices(f"{value} {goal}", devices)
            if found:
                mapped[key] = found[0].device.entity_id
                notes.append(f"{key} {value!r} -> {mapped[key]} ({found[0].why})")
        elif isinstance(value, list):
            ids = []
            for item in value:
                hit = match_devices(item, devices) if isinstance(item, str) and item not in known else []
                ids.append(hit[0].device.entity_id if hit else item)
            if ids != value:
                mapped[key] = ids
                notes.append(f"{key} {value!r} -> {ids}")
    for key in ("position", "current_position"):
        if key in mapped and mapped[key] != clamp_position(mapped[key]):
            notes.append(f"{key} {mapped[key]!r} -> {clamp_position(mapped[key])} (0 closed - 100 open)")
            mapped[key] = clamp_position(mapped[key])
    return mapped, notes


def describe_for_prompt(goal: str, devices: list[Device], limit: int = 12) -> str:
    """The devices the goal most likely means, one line each, for the router's prompt."""
    matches = match_devices(goal, devices, limit=limit)
    chosen = [m.device for m in matches] or devices[:limit]
    lines = [
        f"- {d.entity_id}: {d.name}"
        + (f" (area {d.area})" if d.area else "")
        + (f", state {d.state}" if d.state else "")
        for d in chosen
    ]
    more = len(devices) - len(chosen)
    if more > 0:
        lines.append(f"({more} more devices not shown)")
    return "\n".join(lines)
