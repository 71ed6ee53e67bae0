"""What a tool's definition is, for pinning: the fields a model reads, as canonical JSON and its digest.

The name is left out on purpose: a tool renamed with the same definition has the same digest,
so a quarantined definition stays quarantined under a new name (tool_integrity.py). `_meta`
and `icons` are left out too: servers stamp `_meta` per answer, and neither is read by the
model as instructions.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import mcp_types as types

PINNED_FIELDS = ("title", "description", "inputSchema", "outputSchema", "annotations")
"""The wire names of the fields a pin covers, in the order a change is reported."""

_SCHEMAS = ("inputSchema", "outputSchema")


def definition(tool: types.Tool) -> dict[str, Any]:
    """The pinned fields of `tool` as JSON values (absent fields are left out)."""
    dumped = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
    return {field: dumped[field] for field in PINNED_FIELDS if field in dumped}


def canonical(value: Any) -> str:
    """One spelling per value: sorted keys, no spaces, characters as they are."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest(pinned: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of a definition (what a pin stores and compares)."""
    return hashlib.sha256(canonical(pinned).encode()).hexdigest()


def changed_fields(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Which parts differ, e.g. ["description", "inputSchema.properties.path"], in a stable order.

    A schema's change is named down to its parameter when only parameters changed, so the
    operator reading the quarantine message knows where to look.
    """
    changed: list[str] = []
    for field in PINNED_FIELDS:
        before, after = old.get(field), new.get(field)
        if before == after:
            continue
        if field in _SCHEMAS and isinstance(before, dict) and isinstance(after, dict):
            changed.extend(_schema_changes(field, before, after))
        else:
            changed.append(field)
    return changed


def _schema_changes(field: str, before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    props_before = _properties(before)
    props_after = _properties(after)
    rest_before = {k: v for k, v in before.items() if k != "properties"}
    rest_after = {k: v for k, v in after.items() if k != "properties"}
    found = [
        f"{field}.properties.{name}"
        for name in sorted(set(props_before) | set(props_after))
        if props_before.get(name) != props_after.get(name)
    ]
    if rest_before != rest_after:
        found.insert(0, field)
    return found or [field]


def _properties(schema: dict[str, Any]) -> dict[str, Any]:
    found = schema.get("properties")
    return found if isinstance(found, dict) else {}
