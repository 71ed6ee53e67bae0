"""The built-in servers that ship with Nexus (`src/mcp_nexus/defaults/builtin.json`)."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

DEVICE_SERVER = "device"
"""The built-in device server's key: what a Lumi `"type": "embedded"` entry without `module` runs."""


@cache
def _builtin_text() -> str:
    return resources.files("mcp_nexus.defaults").joinpath("builtin.json").read_text()


def builtin_servers() -> dict[str, Any]:
    """A fresh copy of the built-in layer's server entries, keyed by server name."""
    servers: dict[str, Any] = json.loads(_builtin_text())["servers"]
    return servers


def device_module() -> str:
    """`package.module:attribute` of the built-in device server (declared once, in builtin.json)."""
    module: str = builtin_servers()[DEVICE_SERVER]["module"]
    return module
