"""A gateway in front of real test servers, a Xiaozhi bridge on it, and fake peers, for tests/xiaozhi."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from mcp_nexus.config.load import config_from_document
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


@contextlib.asynccontextmanager
async def started_gateway(offload_dir: Path, **server_options: Any) -> AsyncIterator[Gateway]:
    doc = {
        "gateway": {"include_builtins": False, "offload_dir": str(offload_dir)},
        "servers": servers(**server_options),
    }
    config, _ = config_from_document(doc)
    gateway = Gateway(config)
    await gateway.start()
    try:
        yield gateway
    finally:
        await gateway.stop()


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


async def eventually(check: Callable[[], bool], timeout: float = 10.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        await asyncio.sleep(0.02)


def text_of(response: dict[str, Any]) -> str:
    result = response["result"]
    assert len(result["content"]) == 1 and result["content"][0]["type"] == "text", result
    return str(result["content"][0]["text"])
