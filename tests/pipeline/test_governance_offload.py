"""Offload of large results, retention, python_sandbox over the saved file, and the failure modes."""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path

import pytest
from mcp import Client

from mcp_nexus.frontends.mcp.server import McpFrontend
from mcp_nexus.pipeline.call import Caller
from support.gateway import running_gateway
from support.governance_gateway import counts, document, embedded, stdio, text

ALERT = re.compile(
    r"^SYSTEM_ALERT: Data too large \((\d+) bytes\)\. Saved to file (tool_output_[0-9a-f]{32}\.json)\. "
    r"Use python_sandbox to read and filter\.\n\n"
)


def servers() -> dict[str, object]:
    return {
        "gov": embedded(rate_limit=None, tool_config={"big_text": {"offload_threshold": None}}),
        "small": embedded("small", rate_limit=None, offload_threshold=100),
    }


async def test_large_list_is_offloaded_with_a_preview(tmp_path: Path) -> None:
    offload_dir = tmp_path / "data"
    async with running_gateway(document(offload_dir, servers())) as gw:
        async with Client(McpFrontend(gw, "test").server, mode="legacy") as client:
            result = await client.call_tool("gov.big_list", {"items": 400})
        answer = text(result)
        match = ALERT.match(answer)
        assert match, answer[:300]
        size, name = int(match.group(1)), match.group(2)
        saved = (offload_dir / name).read_text()
        assert len(saved) == size and len(json.loads(saved)) == 400  # the full payload, as the tool sent it
        assert stat.S_IMODE(offload_dir.stat().st_mode) == 0o700
        assert "Preview: a JSON array of 400 items. First 2:" in answer
        assert '"id": "switch.0"' in answer and "light.room_1" in answer and "switch.2" not in answer
        assert len(answer.encode()) < 5120 * 0.6  # well under the threshold
        assert result.meta and result.meta["nexus/offload"] == {"file": name, "bytes": size, "error": False}
        # under the threshold nothing changes
        assert text(await gw.call_tool("gov.big_list", {"items": 3})).startswith("[")


async def test_object_and_text_previews_and_per_level_thresholds(tmp_path: Path) -> None:
    async with running_gateway(document(tmp_path, servers())) as gw:
        obj = text(await gw.call_tool("gov.big_object", {"keys": 200}))
        assert ALERT.match(obj) and "a JSON object with 200 keys" in obj
        assert (
            "- k0: array(50 items)" in obj
            and "- k1: object(1 keys)" in obj
            and "- k2: string, 42 bytes" in obj
        )
        # tool_config offload_threshold: null turns it off for that tool only
        assert text(await gw.call_tool("gov.big_text", {"lines": 1000})).startswith("log line 0")
        # a server threshold of 100 bytes: non-JSON text previews its first lines
        small = text(await gw.call_tool("small.big_text", {"lines": 10}))
        assert ALERT.match(small) and "Preview: text of 10 lines; first lines:\nlog line 0" in small


async def test_python_sandbox_reads_the_offloaded_file(tmp_path: Path) -> None:
    async with running_gateway(document(tmp_path / "data", servers())) as gw:
        listed = {t.name: t for t in gw.catalog.tool_list}
        assert "python_sandbox" in listed and "/data" in (listed["python_sandbox"].description or "")
        match = ALERT.match(text(await gw.call_tool("gov.big_list", {"items": 500})))
        assert match
        code = "print(len([x for x in data if 'light' in x['id']]))"
        result = await gw.call_tool("python_sandbox", {"code": code, "files": [match.group(2)]})
        assert not result.is_error, text(result)
        assert text(result).strip() == "250"
        assert result.meta and result.meta["nexus/sandbox"]["sandboxed"] is True
        # its output goes through offload like any result
        big = await gw.call_tool("python_sandbox", {"code": "print('y' * 20000)"})
        assert ALERT.match(text(big))
        # a bad request is a clear tool error, not a crash
        missing = await gw.call_tool("python_sandbox", {"code": "print(1)", "files": ["nope.json"]})
        assert missing.is_error and "nope.json" in text(missing) and "does not exist" in text(missing)


async def test_sandbox_missing_keeps_the_tool_listed_with_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty_bin = tmp_path / "bin"
    empty_bin.mkdir()
    monkeypatch.setenv("PATH", str(empty_bin))  # no bwrap to be found
    async with running_gateway(document(tmp_path / "data", servers())) as gw:
        assert "python_sandbox" in gw.catalog.tools
        result = await gw.call_tool("python_sandbox", {"code": "print(1)"})
        assert result.is_error
        message = text(result)
        assert "cannot run code here" in message and "bubblewrap" in message and "not installed" in message
        assert "unsandboxed: not allowed" in message


async def test_offload_off_everywhere_lists_no_sandbox(tmp_path: Path) -> None:
    async with running_gateway(
        document(tmp_path, {"gov": embedded(rate_limit=None)}, offload_threshold=None)
    ) as gw:
        assert "python_sandbox" not in gw.catalog.tools
        assert gw.governance.offloader is None
        assert text(await gw.call_tool("gov.big_list", {"items": 400})).startswith("[")
    assert not any(tmp_path.iterdir())  # nothing was written


async def test_unwritable_folder_passes_the_full_result_through(tmp_path: Path) -> None:
    blocker = tmp_path / "not_a_folder"
    blocker.write_text("x")
    async with running_gateway(document(blocker / "offload", servers())) as gw:
        result = await gw.call_tool("gov.big_list", {"items": 400})
        assert len(json.loads(text(result))) == 400  # no data lost
        assert result.meta and "cannot write to the offload folder" in result.meta["nexus/offloadError"]
        # a frontend with a limit still gets a result within it (cut, since nothing could be saved)
        limited = await gw.call_tool("gov.big_list", {"items": 400}, caller=Caller("xiaozhi"))
        assert len(text(limited).encode()) <= 1024 and "[truncated by Nexus" in text(limited)


async def test_cached_offload_survives_only_while_its_file_exists(tmp_path: Path) -> None:
    doc = document(tmp_path, {"gov": stdio("gov", rate_limit=None, cache_ttl=60)})
    async with running_gateway(doc) as gw:
        first = text(await gw.call_tool("gov.big_list", {"items": 400}))
        again = text(await gw.call_tool("gov.big_list", {"items": 400}))
        assert first == again
        name = ALERT.match(first).group(2)  # type: ignore[union-attr]
        (tmp_path / name).unlink()  # retention removed it
        third = text(await gw.call_tool("gov.big_list", {"items": 400}))
        assert ALERT.match(third) and name not in third
        assert (await counts(gw))["big_list"] == 2


@pytest.mark.parametrize("frontend_limit", [False, True])
async def test_replaced_results_of_tools_with_an_output_schema_are_flagged(
    tmp_path: Path, frontend_limit: bool
) -> None:
    # A preview cannot match the tool's outputSchema, and SDK clients reject a non-error result
    # without matching structuredContent: the replacement must come back as isError.
    doc = document(tmp_path / "data", servers())
    if frontend_limit:  # no offload, only the frontend's size limit cuts the text
        doc["servers"]["gov"]["offload_threshold"] = None  # type: ignore[index]
        doc["gateway"]["result_limits"] = {"test": 300}  # type: ignore[index]
    async with running_gateway(doc) as gw:
        assert gw.catalog.tools["gov.big_structured"].tool.output_schema is not None
        async with Client(McpFrontend(gw, "test").server, mode="legacy") as client:
            small = await client.call_tool("gov.big_structured", {"items": 2})
            assert not small.is_error and small.structured_content == {
                "result": [{"id": 0, "value": 0}, {"id": 1, "value": 1}]
            }
            big = await client.call_tool("gov.big_structured", {"items": 2000})
        assert big.is_error
        assert ("SYSTEM_ALERT: Data too large" in text(big)) != frontend_limit
        assert ("[truncated by Nexus" in text(big)) == frontend_limit
