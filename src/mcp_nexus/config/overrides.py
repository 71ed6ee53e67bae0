"""The settings of a config that differ from the schema's defaults, as `dotted.key: value` pairs.

Computed by comparing each model with its defaults (`model_dump(exclude_defaults=True)`), so a
new field with a default never shows until someone sets it; a value written equal to its
default does not show either (it overrides nothing).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from mcp_nexus.config.masking import Masker


def non_default(
    model: BaseModel, *, leave_out: tuple[str, ...] = (), in_force: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The fields of `model` (nested models included) whose values are not their defaults.

    `in_force`: what an unset field really means where the schema's default is `None` (the
    governance keys: `rate_limit` unset is "5/second", a server's is the gateway's); a value
    written equal to it overrides nothing.
    """
    data: dict[str, Any] = model.model_dump(mode="json", exclude_defaults=True)
    for key in leave_out:
        data.pop(key, None)
    for key, value in (in_force or {}).items():
        if key in data and data[key] == value:
            del data[key]
    return data


def flatten(data: dict[str, Any], masker: Masker, prefix: str = "") -> dict[str, Any]:
    """`{"timeouts": {"call": 60}}` -> `{"timeouts.call": 60}`, each value masked under its own key.

    A mapping of names to plain values (`env`, `headers`) is flattened too (`env.LOG_LEVEL`);
    a list stays one value (`args`, `tools.allow`).
    """
    flat: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            flat.update(flatten(value, masker, dotted + "."))
        else:
            flat[dotted] = masker.value(str(key), value)
    return flat


def overrides(
    model: BaseModel,
    masker: Masker,
    *,
    leave_out: tuple[str, ...] = (),
    in_force: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """`non_default`, flattened and masked: what `nexus config check` lists for a server or a section."""
    return flatten(non_default(model, leave_out=leave_out, in_force=in_force), masker)
