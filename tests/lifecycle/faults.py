"""Shared pieces of the lifecycle tests: faulty-server configs and what the tests read off processes.

Gateways are started with support.gateway.running_gateway(document(...)); waits use support.polling.eventually.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import mcp_types as types
import psutil

from mcp_nexus.upstream.child_process import watchdog_pid
from support.processes import TESTS

# Short lifecycle timings so the tests take seconds: retries 0.1 s apart, no periodic checks.
FAST_RESTART = {"backoff_min": 0.1, "backoff_max": 0.4, "max_attempts": 5, "reset_after": 1.0}
NO_HEALTH = {"interval": 0}


def faulty(name: str, *flags: str, **fields: Any) -> dict[str, Any]:
    """A config entry for the fault-injection server (tests/support/faulty_server.py) over stdio."""
    entry: dict[str, Any] = {
        "command": sys.executable,
        "args": ["-m", "support.faulty_server", "--name", name, *flags],
        "env": {"PYTHONPATH": str(TESTS)},
        "restart": dict(FAST_RESTART),
        "health": dict(NO_HEALTH),
        "rate_limit": None,
    }
    entry.update(fields)
    return entry


def document(servers: dict[str, Any], **gateway: Any) -> dict[str, Any]:
    return {"gateway": {"include_builtins": False, "offload_threshold": None, **gateway}, "servers": servers}


def text(result: types.CallToolResult | types.InputRequiredResult) -> str:
    assert isinstance(result, types.CallToolResult)
    first = result.content[0]
    assert isinstance(first, types.TextContent)
    return first.text


def live_children() -> list[psutil.Process]:
    """This process's live descendants, except the orphan watchdog (one per process, on purpose)."""
    watchdog = watchdog_pid()
    return [
        p
        for p in psutil.Process().children(recursive=True)
        if p.status() != psutil.STATUS_ZOMBIE and p.pid != watchdog
    ]


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))
