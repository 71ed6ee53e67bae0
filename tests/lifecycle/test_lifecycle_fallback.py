"""Priority fallback across real servers that share a bare tool name."""

from __future__ import annotations

from pathlib import Path

import mcp_types as types
import pytest

from lifecycle.faults import document, faulty, text
from mcp_nexus.errors import ToolTimeoutError, UnavailableError
from mcp_nexus.upstream.state import UpstreamState
from support.gateway import running_gateway
from support.polling import eventually


def pair(**first: object) -> dict[str, object]:
    # Same bare names on both; "primary" wins on priority, "backup" answers when it cannot.
    return {
        "primary": faulty("primary", namespace="", priority=60, auto_restart=False, **first),
        "backup": faulty("backup", namespace="", priority=20),
    }


async def test_the_next_candidate_answers_when_the_first_crashes_mid_call() -> None:
    async with running_gateway(document(pair())) as gw:
        assert [r.upstream.name for r in gw.catalog.tools["echo"].candidates] == ["primary", "backup"]
        first = await gw.call_tool("echo", {"text": "a"})
        assert text(first) == "primary: a" and first.meta == {"nexus/server": "primary"}
        # "crash" exists on both: the primary dies mid-call, then the backup is asked (and dies too).
        with pytest.raises(UnavailableError) as caught:
            await gw.call_tool("crash", {})
        assert caught.value.data["servers_tried"] == ["primary", "backup"]
        await eventually(lambda: gw.upstreams["backup"].state == UpstreamState.READY, what="backup back")
        answer = await gw.call_tool("echo", {"text": "b"})
        assert text(answer) == "backup: b" and answer.meta == {"nexus/server": "backup"}


async def test_a_stopped_candidate_is_skipped_and_used_again_once_started() -> None:
    async with running_gateway(document(pair())) as gw:
        await gw.servers.stop("primary")
        answer = await gw.call_tool("echo", {"text": "c"})
        assert text(answer) == "backup: c" and answer.meta == {"nexus/server": "backup"}
        await gw.servers.start("primary")
        await eventually(lambda: "primary" in [r.upstream.name for r in gw.catalog.tools["echo"].candidates])
        answer = await gw.call_tool("echo", {"text": "d"})
        assert text(answer) == "primary: d" and answer.meta == {"nexus/server": "primary"}


async def test_a_tool_error_is_final_and_not_retried_elsewhere() -> None:
    async with running_gateway(document(pair())) as gw:
        result = await gw.call_tool("fail", {})
        assert isinstance(result, types.CallToolResult) and result.is_error
        assert text(result) == "primary: failed on purpose" and result.meta == {"nexus/server": "primary"}


async def test_a_candidate_that_times_out_hands_the_call_to_the_next() -> None:
    servers = {
        "primary": faulty(
            "primary",
            namespace="",
            priority=60,
            tool_config={"slow": {"timeout": 0.3}, "hang": {"timeout": 0.3}},
        ),
        "backup": faulty(
            "backup",
            namespace="",
            priority=20,
            tool_config={"slow": {"timeout": 5}, "hang": {"timeout": 0.3}},
        ),
    }
    async with running_gateway(document(servers)) as gw:
        # The primary needs 0.6 s but may take 0.3 s: the backup gets the call and answers.
        answer = await gw.call_tool("slow", {"seconds": 0.6})
        assert isinstance(answer, types.CallToolResult) and answer.meta == {"nexus/server": "backup"}
        # Hanging on both: the last timeout reaches the caller, naming every server tried.
        with pytest.raises(ToolTimeoutError) as caught:
            await gw.call_tool("hang", {})
        assert caught.value.code == -32001
        assert caught.value.data["servers_tried"] == ["primary", "backup"]
        assert "did not answer within 0.3 s" in caught.value.message


async def test_an_idempotent_call_is_retried_after_a_transport_failure(tmp_path: Path) -> None:
    marker = tmp_path / "crashed-once"
    servers = {
        "only": faulty(
            "only", tool_config={"crash_once": {"idempotent": True}, "crash": {"idempotent": False}}
        )
    }
    async with running_gateway(document(servers, retry_backoff=0.5)) as gw:
        # The first attempt kills the server mid-call; the supervisor restarts it within the
        # backoff and the retry is answered by the new process.
        answer = await gw.call_tool("only.crash_once", {"marker": str(marker)})
        assert text(answer) == "only: survived"
        assert marker.exists()
        await eventually(lambda: gw.upstreams["only"].state == UpstreamState.READY, what="restarted")
        # Not idempotent: the transport failure reaches the caller at once, no retry.
        with pytest.raises(UnavailableError):
            await gw.call_tool("only.crash", {})
