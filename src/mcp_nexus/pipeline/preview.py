"""A schema preview of a large payload: what the model sees instead of the data itself.

`scan_shape` walks JSON one top-level element at a time with the stdlib's C scanner, so a
50 MB array costs one item of memory, not the whole parsed tree; `render` writes the shape
at a byte budget, dropping detail until it fits.
- list: its length and the first 2 items (each trimmed)
- object: its keys with value types and sizes
- anything else (text that is not a JSON array/object): the first lines
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

MAX_KEYS_KEPT = 200
MAX_LINES_KEPT = 20
MAX_LINE_CHARS = 400
MAX_ITEM_CHARS = 2000

_SPACE = re.compile(r"[ \t\n\r]*")
_scan: Any = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # (text, index) -> (value, end); StopIteration/ValueError if invalid


@dataclass(frozen=True, slots=True)
class KeyShape:
    name: str
    type: str
    size: int  # characters of the value's JSON text (bytes for ASCII)


@dataclass(frozen=True, slots=True)
class Shape:
    kind: str  # "list", "object" or "text"
    length: int  # items, keys or lines
    items: tuple[str, ...] = ()  # list: JSON text of the first items
    keys: tuple[KeyShape, ...] = ()  # object: the first keys
    lines: tuple[str, ...] = ()  # text: the first lines


def _type_name(value: Any) -> str:
    if isinstance(value, dict):
        return f"object({len(value)} keys)"
    if isinstance(value, list):
        return f"array({len(value)} items)"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "null"


def _skip(text: str, index: int) -> int:
    match = _SPACE.match(text, index)
    return match.end() if match else index


def _scan_list(text: str, index: int) -> tuple[Shape, int]:
    items: list[str] = []
    count = 0
    index = _skip(text, index + 1)
    if text.startswith("]", index):
        return Shape("list", 0), index + 1
    while True:
        _value, end = _scan(text, index)
        count += 1
        if len(items) < 2:
            items.append(text[index : min(end, index + MAX_ITEM_CHARS)])
        index = _skip(text, end)
        if text.startswith(",", index):
            index = _skip(text, index + 1)
            continue
        if text.startswith("]", index):
            return Shape("list", count, items=tuple(items)), index + 1
        raise ValueError("expected ',' or ']'")


def _scan_object(text: str, index: int) -> tuple[Shape, int]:
    keys: list[KeyShape] = []
    count = 0
    index = _skip(text, index + 1)
    if text.startswith("}", index):
        return Shape("object", 0), index + 1
    while True:
        if not text.startswith('"', index):
            raise ValueError("expected a key")
        key, end = _scan(text, index)
        index = _skip(text, end)
        if not text.startswith(":", index):
            raise ValueError("expected ':'")
        start = _skip(text, index + 1)
        value, end = _scan(text, start)
        count += 1
        if len(keys) < MAX_KEYS_KEPT:
            keys.append(KeyShape(str(key), _type_name(value), end - start))
        del value
        index = _skip(text, end)
        if text.startswith(",", index):
            index = _skip(text, index + 1)
            continue
        if text.startswith("}", index):
            return Shape("object", count, keys=tuple(keys)), index + 1
        raise ValueError("expected ',' or '}'")


def _text_shape(text: str) -> Shape:
    lines: list[str] = []
    start = 0
    while len(lines) < MAX_LINES_KEPT and start <= len(text):
        end = text.find("\n", start)
        stop = len(text) if end < 0 else end
        lines.append(text[start : min(stop, start + MAX_LINE_CHARS)])
        if end < 0:
            break
        start = end + 1
    return Shape("text", text.count("\n") + 1, lines=tuple(lines))


def scan_shape(text: str) -> Shape:
    """The shape of `text`: a JSON array or object when it is one, otherwise lines of text."""
    start = _skip(text, 0)
    opener = text[start : start + 1]
    if opener in ("[", "{"):
        try:
            shape, end = (_scan_list if opener == "[" else _scan_object)(text, start)
            if _skip(text, end) == len(text):
                return shape
        except (StopIteration, ValueError, RecursionError):
            pass
    return _text_shape(text)


def _trim(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[:chars] + "…"


def _render_at(shape: Shape, detail: int) -> str:
    """Detail 0 is the richest; each level up shows less."""
    if shape.kind == "list":
        width = (400, 200, 100, 40, 0)[detail]
        head = f"Preview: a JSON array of {shape.length} items."
        if not shape.items or width == 0:
            return head
        shown = "\n".join(f"- {_trim(item, width)}" for item in shape.items)
        return f"{head} First {len(shape.items)}:\n{shown}"
    if shape.kind == "object":
        count = (50, 20, 8, 3, 0)[detail]
        head = f"Preview: a JSON object with {shape.length} keys"
        if count == 0 or not shape.keys:
            return head + "."
        shown = "\n".join(f"- {_trim(k.name, 60)}: {k.type}, {k.size} bytes" for k in shape.keys[:count])
        more = shape.length - min(count, len(shape.keys))
        return f"{head}:\n{shown}" + (f"\n- … and {more} more keys" if more > 0 else "")
    count, width = ((10, 200), (5, 100), (3, 60), (1, 40), (0, 0))[detail]
    head = f"Preview: text of {shape.length} lines"
    if count == 0:
        return head + "."
    shown = "\n".join(_trim(line, width) for line in shape.lines[:count])
    return f"{head}; first lines:\n{shown}"


def utf8_cut(text: str, max_bytes: int) -> str:
    """At most `max_bytes` of `text` in UTF-8, never splitting a character."""
    if max_bytes <= 0:
        return ""
    if text.isascii():
        return text[:max_bytes]
    return text.encode("utf-8", "surrogatepass")[:max_bytes].decode("utf-8", "ignore")


def render(shape: Shape, budget: int) -> str:
    """The most detailed preview of `shape` that fits in `budget` UTF-8 bytes."""
    for detail in range(5):
        text = _render_at(shape, detail)
        if len(text.encode()) <= budget:
            return text
    return utf8_cut(_render_at(shape, 4), budget)
