"""A `nexus serve --stdio` gateway's stdio servers speak its client's era (`protocol: auto`).

Each case spawns the gateway as a desktop client does, with `mcp-server-time` (from PyPI, on the
SDK 2.x here: it speaks both eras) as a stdio server, sends its first request at once, calls a
tool, and reads from the gateway's log which era the server's session negotiated. An HTTP
gateway (many clients) and `protocol: latest` keep 2026-07-28; `protocol: legacy` keeps the
handshake era whatever the client speaks.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from matrix.clients import ERAS, StdioClient
from support.processes import VENV_BIN, require
from support.served_gateway import gateway_env

HANDSHAKE, MODERN = ERAS


def _config(tmp_path: Path, **entry: Any) -> Path:
    config = tmp_path / "config.json"
    time_server = {"command": require(VENV_BIN / "mcp-server-time"), "args": ["--local-timezone", "UTC"]}
    config.write_text(
        json.dumps({"gateway": {"include_builtins": False}, "servers": {"time": {**time_server, **entry}}})
    )
    return config


async def _negotiated(tmp_path: Path, era: str, **entry: Any) -> list[str]:
    """The eras `time`'s sessions connected in, in order, after one call by a client of `era`."""
    log = tmp_path / "gateway.log"
    async with StdioClient(_config(tmp_path, **entry), era, gateway_env(tmp_path), log) as client:
        answer = await client.request(
            "tools/call", {"name": "time.get_current_time", "arguments": {"timezone": "UTC"}}
        )
        assert "result" in answer and not answer["result"].get("isError"), answer
    text = log.read_text(errors="replace")
    return re.findall(r"server time: CONNECTING -> READY \(connected \(([0-9-]+)\)\)", text)


@pytest.mark.parametrize("era", ERAS)
async def test_a_stdio_server_speaks_the_era_of_the_one_stdio_client(era: str, tmp_path: Path) -> None:
    assert await _negotiated(tmp_path, era) == [era]


@pytest.mark.parametrize(("protocol", "expected"), [("latest", MODERN), ("legacy", HANDSHAKE)])
async def test_an_explicit_protocol_is_kept_whatever_the_client_speaks(
    protocol: str, expected: str, tmp_path: Path
) -> None:
    client_era = HANDSHAKE if expected == MODERN else MODERN
    assert await _negotiated(tmp_path, client_era, protocol=protocol) == [expected]
