"""Media is judged by its own limit, not the text offload threshold (issue 20 item 10).

A real stdio upstream (tests/support/matrix_server.py) answers `picture` with an ~8 KB PNG and
`report` with ~20 KB of JSON rows plus that PNG; the text threshold is the default 5 KB.
"""

from __future__ import annotations

import base64
import sys
from pathlib import Path

import mcp_types as types

from mcp_nexus.pipeline.steps.offload import OFFLOAD_META_KEY
from support.gateway import running_gateway
from support.governance_gateway import document
from support.processes import TESTS

SERVER = {"command": sys.executable, "args": [str(TESTS / "support" / "matrix_server.py"), "--role", "main"]}


def _kinds(result: types.CallToolResult) -> list[str]:
    return [item.type for item in result.content]


async def test_a_picture_over_the_text_threshold_passes_through(tmp_path: Path) -> None:
    async with running_gateway(document(tmp_path, {"m": SERVER})) as gw:
        result = await gw.call_tool_result("m.picture", {})
    assert _kinds(result) == ["image"] and OFFLOAD_META_KEY not in (result.meta or {})
    image = result.content[0]
    assert isinstance(image, types.ImageContent) and len(image.data) > 5120
    assert base64.b64decode(image.data).startswith(b"\x89PNG")


async def test_large_text_beside_a_picture_is_offloaded_and_the_picture_kept(tmp_path: Path) -> None:
    async with running_gateway(document(tmp_path, {"m": SERVER})) as gw:
        result = await gw.call_tool_result("m.report", {})
    assert _kinds(result) == ["text", "image"], _kinds(result)
    first = result.content[0]
    assert isinstance(first, types.TextContent) and first.text.startswith("SYSTEM_ALERT: Data too large")
    saved = (result.meta or {})[OFFLOAD_META_KEY]
    assert (tmp_path / saved["file"]).read_text().startswith('[{"id": "light-000"')


async def test_media_over_its_own_limit_is_offloaded_like_text(tmp_path: Path) -> None:
    async with running_gateway(document(tmp_path, {"m": SERVER}, offload_media_threshold=4096)) as gw:
        result = await gw.call_tool_result("m.picture", {})
    assert _kinds(result) == ["text"]
    first = result.content[0]
    assert isinstance(first, types.TextContent) and first.text.startswith("SYSTEM_ALERT: Data too large")
