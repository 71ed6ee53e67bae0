"""Gateways for the governance tests (tests/pipeline), built from config dicts in front of real test servers."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import mcp_types as types

from mcp_nexus.config.load import config_from_document
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


@contextlib.asynccontextmanager
async def started(doc: dict[str, Any]) -> AsyncIterator[Gateway]:
    config, _ = config_from_document(doc)
    gateway = Gateway(config)
    await gateway.start()
    try:
        yield gateway
    finally:
        await gateway.stop()


def text(result: types.CallToolResult | types.InputRequiredResult) -> str:
    assert isinstance(result, types.CallToolResult)
    first = result.content[0]
    assert isinstance(first, types.TextContent)
    return first.text


async def counts(gateway: Gateway, tool: str = "gov.counts") -> dict[str, int]:
    import json

    result = await gateway.call_tool(tool, {}, caller=Caller("test"))
    return dict(json.loads(text(result)))
