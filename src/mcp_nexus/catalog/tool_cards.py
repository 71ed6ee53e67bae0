"""Tools as a search answer shows them: short descriptions, compact schemas, within a byte budget.

Why: `find_tools` answers the model with the tools it may call next. With full descriptions
and schemas five hits of real servers are ~6 KB, over the default offload threshold; an
offload alert in place of the hits leaves the model with nothing. So the answer is made to fit:
descriptions are cut at a sentence, schemas keep what a caller needs (types, required, enums,
short property descriptions), and when that is still too large, descriptions shrink further and
the last hits are named instead of shown.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

# Schema keys a caller needs to build valid arguments; the rest (titles, $schema, examples) is dropped.
_KEPT_KEYS = ("type", "enum", "const", "default", "format", "minimum", "maximum", "pattern")
_MAX_DEPTH = 3
# (description chars, property description chars) tried in turn until the answer fits.
_STEPS = ((300, 120), (160, 60), (80, 0))


def short_text(text: str, limit: int) -> str:
    """`text` within `limit` characters, cut at a sentence or word end where one is near."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    if limit <= 0:
        return ""
    cut = text[: limit - 1]
    for mark in (". ", "。", "; "):
        at = cut.rfind(mark)
        if at >= limit // 2:
            return cut[: at + len(mark)].rstrip()
    at = cut.rfind(" ")
    return (cut[:at] if at >= limit // 2 else cut) + "…"


def compact_schema(schema: Any, note_chars: int = 120, depth: int = 0) -> Any:
    """The parts of a JSON schema a caller needs, property descriptions cut to `note_chars`."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {key: schema[key] for key in _KEPT_KEYS if key in schema}
    description = schema.get("description")
    if depth > 0 and note_chars > 0 and isinstance(description, str) and description.strip():
        out["description"] = short_text(description, note_chars)
    if depth >= _MAX_DEPTH:
        return out
    properties = schema.get("properties")
    if isinstance(properties, dict) and properties:
        out["properties"] = {
            name: compact_schema(value, note_chars, depth + 1) for name, value in properties.items()
        }
    if isinstance(schema.get("required"), list) and schema["required"]:
        out["required"] = schema["required"]
    items = schema.get("items")
    if isinstance(items, dict):
        out["items"] = compact_schema(items, note_chars, depth + 1)
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list):
            out[key] = [compact_schema(option, note_chars, depth + 1) for option in options]
    return out


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def fit_cards(rows: Sequence[dict[str, Any]], budget: int) -> tuple[list[dict[str, Any]], list[str]]:
    """Compact `rows` (name, description, input_schema, ...) until their JSON is within `budget` bytes.

    Returns the cards shown and the names of hits left out (the last ones, least relevant).
    """
    cards: list[dict[str, Any]] = []
    for description_chars, note_chars in _STEPS:
        cards = [
            {
                **row,
                "description": short_text(str(row.get("description") or ""), description_chars),
                "input_schema": compact_schema(row.get("input_schema") or {}, note_chars),
            }
            for row in rows
        ]
        if len(_dumps(cards).encode()) <= budget:
            return cards, []
    left_out: list[str] = []
    while len(cards) > 1 and len(_dumps(cards).encode()) + len(_dumps(left_out).encode()) > budget:
        left_out.insert(0, str(cards.pop()["name"]))
    if len(_dumps(cards).encode()) > budget:  # one hit with an enormous schema: keep its name and type
        only = cards[0]
        only["input_schema"] = {"type": "object"}
        only["description"] = short_text(only["description"], 80)
    return cards, left_out
