"""Config documents for the governance tests (tests/pipeline) in front of real test servers.

Run them with support.gateway.running_gateway(document(...)).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import mcp_types as types

from mcp_nexus.gateway import Gateway
from mcp_nexus.pipeline.call import Caller
from support.processes import TESTS


def embedded(instance: str = "gov", **extra: Any) -> dict[str, Any]:
    return {
        "transport": "embedded",
        "module": "support.governance_server:create_server",
        "options": {"instance": instance},
        **extra,
    }


def stdio(instance: str = "gov_stdio", **extra: Any) -> dict[str, Any]:
    return {
        "command": sys.executable,
        "args": ["-m", "support.governance_server", instance],
        "env": {"PYTHONPATH": str(TESTS)},
        **extra,
    }


def document(offload_dir: Path, servers: dict[str, Any], **gateway: Any) -> dict[str, Any]:
    return {
        "gateway": {"include_builtins": False, "offload_dir": str(offload_dir), **gateway},
        "servers": servers,
    }


def text(result: types.CallToolResult | types.InputRequiredResult) -> str:
    assert isinstance(result, types.CallToolResult)
    first = result.content[0]
    assert isinstance(first, types.TextContent)
    return first.text


async def counts(gateway: Gateway, tool: str = "gov.counts") -> dict[str, int]:
    import json

    result = await gateway.call_tool(tool, {}, caller=Caller("test"))
    return dict(json.loads(text(result)))
