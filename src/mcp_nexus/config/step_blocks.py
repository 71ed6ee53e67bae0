"""`steps: {name: {...}}` at any level (gateway, server, tool_config): each block checked by its step.

Read only when a config has such a block; the blocks stay plain dicts of what was written
(merged per call by pipeline/policy.py, most specific level winning per key).
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from mcp_nexus.plugins.registry import registry


def checked_step_blocks(blocks: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    specs = registry().steps()
    with_settings = sorted(name for name, spec in specs.items() if spec.config_model is not None)
    out: dict[str, dict[str, Any]] = {}
    for name, block in blocks.items():
        spec = specs.get(name)
        if spec is None:
            broken = [r for r in registry().errors() if r.name == name]
            if broken:
                raise ValueError(f"step {name!r} comes from a plugin that did not load: {broken[0].error}")
            raise ValueError(
                f"no step {name!r} takes settings (installed: {', '.join(map(repr, with_settings)) or 'none'})"
            )
        if spec.config_model is None:
            raise ValueError(f"step {name!r} has no settings")
        try:
            spec.config_model.model_validate(block)
        except ValidationError as exc:
            problems = "; ".join(
                f"'{name}.{'.'.join(str(p) for p in err['loc'])}': {_message(err)}" for err in exc.errors()
            )
            raise ValueError(f"step {name!r} rejects {problems}") from None
        out[name] = dict(block)
    return out


def _message(err: Any) -> str:
    if err["type"] == "extra_forbidden":
        return "unknown field"
    return str(err["msg"]).removeprefix("Value error, ")
