"""The matrix's servers written in each config dialect Nexus accepts, meaning the same thing in each.

Three upstreams (tests/support/matrix_server.py): `slow` (starts slowly; cache, rate limit,
offload, media), `primary` and `backup` (bare names, fallback by priority; `primary` can be
made to go down). Governance rides on the entries (`tool_config`), the gateway section sits
beside the servers in every dialect. `slow` is namespaced explicitly (Lumi's default is bare
names), so a client can call `slow.ticket` before it has seen any list.
"""

from __future__ import annotations

import sys
from typing import Any

from support.processes import TESTS

SERVER = str(TESTS / "support" / "matrix_server.py")
DIALECTS = ("mcpServers", "nexus", "lumi", "controller", "bridge")
TOOL_CONFIG = {"ticket": {"cache_ttl": 30}, "echo": {"rate_limit": "2/second"}}
NO_QUICK_RESTART = {"backoff_min": 30, "backoff_max": 30}
START_DELAY = 3.0  # longer than the gateway's own start: clients meet it in the first start


def _args(role: str, delay: float, port: int | None) -> list[str]:
    args = [SERVER, "--role", role, "--start-delay", str(delay)]
    return [*args, "--http", str(port)] if port is not None else args


def gateway_section(port: int | None = None) -> dict[str, Any]:
    section: dict[str, Any] = {"first_list_wait": 8.0}
    if port is not None:
        section["port"] = port
    return section


def document(dialect: str, ports: dict[str, int] | None = None, delay: float = START_DELAY) -> dict[str, Any]:
    """The matrix config in `dialect`; `ports` (controller: HTTP upstreams) maps role -> port."""
    roles = {"slow": ("main", delay), "primary": ("primary", 0.0), "backup": ("backup", 0.0)}
    extra: dict[str, dict[str, Any]] = {
        "slow": {"namespace": "slow", "tool_config": TOOL_CONFIG},
        "primary": {"namespace": "", "priority": 20, "restart": NO_QUICK_RESTART},
        "backup": {"namespace": "", "priority": 10},
    }
    if dialect == "controller":
        assert ports is not None, "the controller format names HTTP servers only"
        return {
            "mcp_servers": [
                {"id": name, "url": f"http://127.0.0.1:{ports[name]}/mcp", **extra[name]} for name in roles
            ],
        }
    stdio = {
        name: {"command": sys.executable, "args": _args(role, wait, None)}
        for name, (role, wait) in roles.items()
    }
    if dialect == "mcpServers":
        return {"mcpServers": {name: {**stdio[name], **extra[name]} for name in roles}}
    if dialect == "nexus":
        return {"servers": {name: {**stdio[name], **extra[name]} for name in roles}}
    if dialect == "bridge":
        return {"services": {name: {"type": "stdio", **stdio[name], **extra[name]} for name in roles}}
    if dialect == "lumi":
        return {
            "mcpServers": {
                name: {
                    "name": f"matrix {name}",
                    "type": "external",
                    "transport": "stdio",
                    **stdio[name],
                    "enabled": True,
                    "autoStart": True,
                    **extra[name],
                }
                for name in roles
            }
        }
    raise ValueError(dialect)
