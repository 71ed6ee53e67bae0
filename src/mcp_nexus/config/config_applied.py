"""The event of an applied config reload (published on the gateway's bus, events.py)."""

from __future__ import annotations

from dataclasses import dataclass

from mcp_nexus.config.schema import NexusConfig


@dataclass(frozen=True, slots=True)
class ConfigApplied:
    """A config reload was applied: for parts that keep settings of their own."""

    old: NexusConfig
    new: NexusConfig
