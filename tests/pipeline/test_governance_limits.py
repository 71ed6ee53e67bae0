"""Per-frontend result size limits: offloaded previews made to fit, or a UTF-8-safe cut with a marker."""

from __future__ import annotations

import re
from pathlib import Path

from mcp_nexus.pipeline.call import Caller
from support.gateway import running_gateway
from support.governance_gateway import document, embedded, text

XIAOZHI = Caller("xiaozhi", "xz-mcp-broker")


async def test_xiaozhi_gets_an_offload_preview_within_1024_bytes(tmp_path: Path) -> None:
    async with running_gateway(document(tmp_path, {"gov": embedded(rate_limit=None)})) as gw:
        # 2-5 KB: under the offload threshold, over Xiaozhi's limit: offloaded for Xiaozhi only
        medium = await gw.call_tool("gov.big_list", {"items": 60}, caller=XIAOZHI)
        answer = text(medium)
        assert answer.startswith("SYSTEM_ALERT: Data too large (") and len(answer.encode()) <= 1024
        assert "Preview: a JSON array of 60 items" in answer
        name = re.search(r"tool_output_[0-9a-f]+\.json", answer).group(0)  # type: ignore[union-attr]
        assert (tmp_path / name).exists()
        assert text(await gw.call_tool("gov.big_list", {"items": 60}, caller=Caller("http"))).startswith("[")
        # above the threshold: the 2 KB preview is re-rendered smaller
        large = text(await gw.call_tool("gov.big_object", {"keys": 300}, caller=XIAOZHI))
        assert len(large.encode()) <= 1024 and "a JSON object with 300 keys" in large


async def test_cut_at_a_character_boundary_when_offload_is_off(tmp_path: Path) -> None:
    doc = document(
        tmp_path, {"gov": embedded(rate_limit=None)}, offload_threshold=None, result_limits={"http": 300}
    )
    async with running_gateway(doc) as gw:
        result = await gw.call_tool("gov.wide_text", {"chars": 2000}, caller=XIAOZHI)
        answer = text(result)
        assert len(answer.encode()) <= 1024
        body, note = answer.rsplit("\n", 1)
        assert ("é€😀" * 2000).startswith(body)  # whole characters only
        full = len(("é€😀" * 2000)[:2000].encode())  # what the tool sent: 5999 bytes
        shown = len(body.encode())
        # the note states the full size, what is shown and what was cut, and the limit
        assert (
            note
            == f"[truncated by Nexus: showing {shown} of {full} bytes; {full - shown} bytes cut; limit 1024]"
        )
        assert 1024 - 16 <= len(answer.encode()) <= 1024  # the room is used, not wasted
        assert result.meta and result.meta["nexus/truncated"] == {
            "bytes": full,
            "shown": shown,
            "limit": 1024,
        }
        # a configured frontend limit; the built-in xiaozhi default stays
        assert (
            len(text(await gw.call_tool("gov.big_text", {"lines": 50}, caller=Caller("http"))).encode())
            <= 300
        )
        assert (
            len(text(await gw.call_tool("gov.big_text", {"lines": 50}, caller=Caller("api"))).encode()) > 1024
        )


async def test_tool_limit_lowers_but_never_raises_a_frontend_limit(tmp_path: Path) -> None:
    servers = {
        "gov": embedded(
            rate_limit=None,
            offload_threshold=None,
            tool_config={"big_text": {"max_result_bytes": 200}, "wide_text": {"max_result_bytes": 100_000}},
        )
    }
    async with running_gateway(document(tmp_path, servers)) as gw:
        assert (
            len(text(await gw.call_tool("gov.big_text", {"lines": 50}, caller=Caller("api"))).encode()) <= 200
        )
        wide = text(await gw.call_tool("gov.wide_text", {"chars": 2000}, caller=XIAOZHI))
        assert len(wide.encode()) <= 1024
