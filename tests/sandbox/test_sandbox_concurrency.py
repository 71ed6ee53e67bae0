"""How many runs execute at once (`sandbox_concurrency`), and how waiting is reported."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from mcp_nexus.pipeline.offload_folder import OffloadFolder
from mcp_nexus.pipeline.sandbox_tool import SANDBOX_META_KEY, sandbox_tool
from mcp_nexus.sandbox import BwrapBackend, Sandbox
from mcp_nexus.sandbox.sandbox import default_concurrency
from support.processes import VENV_BIN, child_env

from .conftest import run_code

pytestmark = pytest.mark.usefixtures("no_leftover_processes")

ONE_SECOND = "import time\ntime.sleep(1)\nprint('done')"


def test_default_concurrency_follows_the_cpu_count() -> None:
    assert default_concurrency() == max(2, os.cpu_count() or 1)


async def test_eight_one_second_runs_at_concurrency_8_overlap(
    data_dir: Path, bwrap_backend: BwrapBackend
) -> None:
    box = Sandbox(data_dir, backends=[bwrap_backend], timeout_s=10, max_concurrent=8)
    await box.status()
    started = time.monotonic()
    results = await asyncio.gather(*(run_code(box, ONE_SECOND) for _ in range(8)))
    wall = time.monotonic() - started
    assert [r.stdout.strip() for r in results] == ["done"] * 8
    # One after the other: >= 8 s; two at a time (the old fixed limit): >= 4 s.
    assert wall < 3.5, f"8 one-second runs took {wall:.1f} s"
    assert all(r.queued_s == 0 for r in results)


async def test_a_run_that_waited_for_a_slot_says_how_long(
    data_dir: Path, bwrap_backend: BwrapBackend
) -> None:
    box = Sandbox(data_dir, backends=[bwrap_backend], timeout_s=10, max_concurrent=1)
    await box.status()
    first, second = await asyncio.gather(run_code(box, ONE_SECOND), run_code(box, ONE_SECOND))
    assert first.queued_s == 0
    assert 0.9 <= second.queued_s < 5, second.queued_s
    # The run's own duration does not include the wait.
    assert second.duration_s < second.queued_s + 1.0


def result_text(result: types.CallToolResult) -> str:
    first = result.content[0]
    assert isinstance(first, types.TextContent)
    return first.text


async def test_the_tool_reports_queueing_in_its_text_and_meta(
    data_dir: Path, bwrap_backend: BwrapBackend
) -> None:
    box = Sandbox(data_dir, backends=[bwrap_backend], timeout_s=10, max_concurrent=1)
    tool = sandbox_tool(box, OffloadFolder(data_dir, max_age=3600, max_bytes=1 << 20))
    results = await asyncio.gather(tool.handler({"code": ONE_SECOND}), tool.handler({"code": ONE_SECOND}))
    # Which of the two gets the slot first is up to the event loop: order them by their wait.
    assert all(r.meta is not None for r in results)
    first, second = sorted(results, key=lambda r: r.meta[SANDBOX_META_KEY]["queued_s"] if r.meta else 0)
    assert result_text(first) == "done\n"
    assert first.meta is not None and first.meta[SANDBOX_META_KEY]["queued_s"] == 0
    answer, note = result_text(second).split("\n\n")
    assert answer == "done"
    assert note.startswith("[python_sandbox: waited ") and note.endswith(
        " s for a free slot (1 runs at once, setting sandbox_concurrency)]"
    )
    assert second.meta is not None and second.meta[SANDBOX_META_KEY]["queued_s"] >= 0.9
    assert not second.is_error


async def test_sandbox_concurrency_is_a_gateway_setting(tmp_path: Path) -> None:
    """Black box: `nexus serve --stdio` with sandbox_concurrency 1 queues the second call."""
    config = tmp_path / "nexus.json"
    config.write_text(
        json.dumps(
            {
                "gateway": {
                    "include_builtins": False,
                    "offload_dir": str(tmp_path / "offload"),
                    "sandbox_concurrency": 1,
                },
                "servers": {"demo": {"transport": "embedded", "module": "support.demo_server:create_server"}},
            }
        )
    )
    params = StdioServerParameters(
        command=str(VENV_BIN / "nexus"), args=["serve", "--stdio", "-c", str(config)], env=child_env()
    )

    async def call(client: Any) -> types.CallToolResult:
        result: types.CallToolResult = await client.call_tool("python_sandbox", {"code": ONE_SECOND})
        return result

    async with asyncio.timeout(60), Client(params, mode="legacy") as client:
        results = await asyncio.gather(call(client), call(client))
    waits = sorted(r.meta[SANDBOX_META_KEY]["queued_s"] for r in results if r.meta)
    assert len(waits) == 2 and waits[0] == 0 and waits[1] >= 0.9, [result_text(r) for r in results]
    assert any("waited" in result_text(r) for r in results)
