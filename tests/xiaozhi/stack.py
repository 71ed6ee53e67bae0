"""The gateway config of tests/xiaozhi (real test servers), and a Xiaozhi bridge on a running gateway."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from mcp_nexus.config.xiaozhi import XiaozhiSettings
from mcp_nexus.frontends.xiaozhi import XiaozhiBridge
from mcp_nexus.gateway import Gateway
from support.processes import TESTS, VENV_BIN, require

# Fast timings: the production defaults (1 s -> 60 s backoff, 25 s pings) would make these tests slow.
FAST: dict[str, Any] = {"backoff_min": 0.05, "backoff_max": 0.4, "backoff_jitter": 0.1, "ping_interval": 5}


def servers(*, time_server: bool = False) -> dict[str, Any]:
    found: dict[str, Any] = {
        "gov": {
            "transport": "embedded",
            "module": "support.governance_server:create_server",
            "options": {"instance": "gov"},
            "rate_limit": None,
        },
        "demo": {
            "command": sys.executable,
            "args": ["-m", "support.demo_server", "stdio-demo"],
            "env": {"PYTHONPATH": str(TESTS)},
        },
    }
    if time_server:
        found["time"] = {
            "command": require(VENV_BIN / "mcp-server-time"),
            "args": ["--local-timezone", "UTC"],
        }
    return found


def document(offload_dir: Path, **server_options: Any) -> dict[str, Any]:
    """The gateway config of these tests; run it with support.gateway.running_gateway."""
    return {
        "gateway": {"include_builtins": False, "offload_dir": str(offload_dir)},
        "servers": servers(**server_options),
    }


def settings(**values: Any) -> XiaozhiSettings:
    return XiaozhiSettings.model_validate({**FAST, **values})


@contextlib.asynccontextmanager
async def running_bridge(gateway: Gateway, **values: Any) -> AsyncIterator[XiaozhiBridge]:
    bridge = XiaozhiBridge(gateway, settings(**values))
    await bridge.start()
    try:
        yield bridge
    finally:
        await bridge.stop()


def text_of(response: dict[str, Any]) -> str:
    result = response["result"]
    assert len(result["content"]) == 1 and result["content"][0]["type"] == "text", result
    return str(result["content"][0]["text"])
