"""Timeouts, retries, argument validation, error classification and tool_config checks, end to end."""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime
from pathlib import Path

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcp_nexus.errors import InvalidArgumentsError, ToolTimeoutError, UnknownToolError
from mcp_nexus.frontends.mcp.server import McpFrontend
from support.gateway import running_gateway
from support.governance_gateway import counts, document, embedded, stdio, text
from support.governance_server import SLEEP_EVENTS
from support.polling import eventually


def servers(instance: str) -> dict[str, object]:
    return {
        "gov": embedded(
            instance,
            rate_limit=None,
            timeout=5,
            tool_config={
                "sleep": {"timeout": 0.3},
                "slow_first": {"timeout": 0.3},
                "slow_first_unsafe": {"timeout": 0.3},
            },
        )
    }


async def test_timeout_is_32001_and_cancels_the_upstream_call(tmp_path: Path) -> None:
    async with running_gateway(document(tmp_path, servers("timeouts"))) as gw:
        async with Client(McpFrontend(gw, "test").server, mode="legacy") as client:
            started_at = asyncio.get_running_loop().time()
            with pytest.raises(MCPError) as caught:
                await client.call_tool("gov.sleep", {"seconds": 5})
            assert asyncio.get_running_loop().time() - started_at < 2
        error = caught.value.error
        assert error.code == -32001 and "did not answer within 0.3 s" in error.message
        data = error.data or {}
        assert data["category"] == "network/timeout" and data["method"] == "tools/call"
        assert "original_error" in data and datetime.fromisoformat(data["timestamp"])
        await eventually(
            lambda: "cancelled" in SLEEP_EVENTS["timeouts"], timeout=5, what="the upstream sleep cancelled"
        )
        assert SLEEP_EVENTS["timeouts"] == ["started", "cancelled"]


async def test_idempotent_tools_are_retried_with_backoff(tmp_path: Path) -> None:
    async with running_gateway(document(tmp_path, servers("retries"), retry_backoff=0.05)) as gw:
        result = await gw.call_tool("gov.slow_first", {"key": "a", "delay": 3})
        assert text(result) == "attempt 2"  # the first attempt timed out, the retry answered
        # not marked idempotent: tried once, the timeout reaches the caller
        with pytest.raises(ToolTimeoutError):
            await gw.call_tool("gov.slow_first_unsafe", {"key": "a", "delay": 3})
        assert (await counts(gw))["slow_first_unsafe:a"] == 1


async def test_retries_are_bounded_and_config_can_mark_idempotent(tmp_path: Path) -> None:
    doc = document(
        tmp_path,
        {
            "gov": embedded(
                "retry_config",
                rate_limit=None,
                retries=1,
                tool_config={
                    "sleep": {"timeout": 0.2},
                    "slow_first_unsafe": {"timeout": 0.2, "idempotent": True},
                    "slow_first": {"timeout": 0.2, "idempotent": False},
                },
            )
        },
        retry_backoff=0.05,
    )
    async with running_gateway(doc) as gw:
        assert text(await gw.call_tool("gov.slow_first_unsafe", {"key": "b", "delay": 3})) == "attempt 2"
        with pytest.raises(ToolTimeoutError):  # the config's "false" beats the tool's own hint
            await gw.call_tool("gov.slow_first", {"key": "b", "delay": 3})
        with pytest.raises(ToolTimeoutError) as caught:  # sleep is not idempotent either
            await gw.call_tool("gov.sleep", {"seconds": 3})
        assert "attempts" not in caught.value.data


async def test_stdio_retries_stop_after_the_configured_count(tmp_path: Path) -> None:
    always_slow = {"timeout": 0.2, "idempotent": True}
    doc = document(
        tmp_path,
        {
            "gov": stdio(
                "gov",
                rate_limit=None,
                retries=2,
                tool_config={"sleep": always_slow, "slow_first": always_slow},
            )
        },
        retry_backoff=0.05,
    )
    async with running_gateway(doc) as gw:
        with pytest.raises(ToolTimeoutError) as caught:
            await gw.call_tool("gov.sleep", {"seconds": 2})
        assert caught.value.code == -32001 and caught.value.data["attempts"] == 3
        assert (await counts(gw))["sleep"] == 3  # one call plus 2 retries reached the server
        assert text(await gw.call_tool("gov.slow_first", {"key": "c", "delay": 2})) == "attempt 2"


async def test_arguments_are_validated_before_the_upstream_call(tmp_path: Path) -> None:
    async with running_gateway(document(tmp_path, servers("validation"))) as gw:
        with pytest.raises(InvalidArgumentsError) as caught:
            await gw.call_tool("gov.big_list", {"items": "many"})
        error = caught.value
        assert error.code == -32602
        assert error.data["path"] == "$.items" and error.data["schema_path"] == "properties/items/type"
        assert "'many' is not of type 'integer'" in error.message
        with pytest.raises(InvalidArgumentsError, match=r"'key' is a required property"):
            await gw.call_tool("gov.stamp", {})
        assert "big_list" not in await counts(gw) and "stamp" not in await counts(gw)
        async with Client(McpFrontend(gw, "test").server, mode="legacy") as client:
            with pytest.raises(MCPError) as through_client:
                await client.call_tool("gov.stamp", {"key": 5})
        assert through_client.value.error.code == -32602
        assert through_client.value.error.data["category"] == "invalid arguments"  # type: ignore[index]


async def test_unknown_tool_is_classified_with_full_error_data(tmp_path: Path) -> None:
    async with running_gateway(document(tmp_path, servers("unknown"))) as gw:
        with pytest.raises(UnknownToolError) as caught:
            await gw.call_tool("gov.nothing", {})
        data = caught.value.data
        assert caught.value.code == -32602 and data["category"] == "invalid arguments"
        assert {"original_error", "method", "timestamp"} <= set(data)


async def test_unknown_tool_in_tool_config_is_a_clear_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="mcp_nexus.pipeline.tool_config_check")
    doc = document(
        tmp_path, {"gov": embedded(tool_config={"stampp": {"cache_ttl": 5}, "stamp": {"cache_ttl": 5}})}
    )
    async with running_gateway(doc) as gw:
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 1, warnings
        assert "servers.gov.tool_config.stampp" in warnings[0] and "server 'gov' does not have" in warnings[0]
        assert "stamp_args" in warnings[0]  # names what the server does offer
        assert not (await gw.call_tool("gov.stamp", {"key": "x"})).is_error
