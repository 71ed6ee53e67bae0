"""The fixture server, tested directly: the official conformance suite and both transports.

The suite runs against a real fixture process over streamable HTTP at both protocol
eras and must pass every check; the stdio transport is exercised with the SDK client in
both eras, since the gateway mounts the fixture as a stdio upstream.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.session import ClientRequestContext

from .fixture_process import FIXTURE_SERVER, RunningFixture, running_fixture_server
from .runner import ConformanceReport, read_checks, run_conformance

# Checks the pinned suite (@modelcontextprotocol/conformance 0.2.0-alpha.11, `--suite all`)
# reports per spec version; a drop means scenarios silently stopped producing checks.
EXPECTED_CHECKS = {"2025-11-25": 84, "2026-07-28": 151}


@pytest.fixture(scope="module")
def fixture_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningFixture]:
    with running_fixture_server(tmp_path_factory.mktemp("fixture-logs")) as running:
        yield running


def assert_all_passed(report: ConformanceReport) -> None:
    failing = [check for check in report.checks if check.status in ("FAILURE", "WARNING")]
    details = "\n".join(f"{check.key} [{check.status}] {check.message[:300]}" for check in failing)
    assert not failing, f"{report.summary()}\n{details}"
    assert report.passed == EXPECTED_CHECKS[report.spec_version], report.summary()


@pytest.mark.timeout(300)
@pytest.mark.parametrize("spec_version", sorted(EXPECTED_CHECKS))
def test_conformance_suite_passes_against_fixture(
    fixture_server: RunningFixture, spec_version: str, tmp_path: Path
) -> None:
    report = run_conformance(fixture_server.url, spec_version, tmp_path)
    print(report.summary())
    assert_all_passed(report)


async def answer_name(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"name": "Ada"})


async def answer_sampling(
    context: ClientRequestContext, params: types.CreateMessageRequestParams
) -> types.CreateMessageResult:
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(text="Paris"), model="test-model", stop_reason="endTurn"
    )


def first_text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent), f"expected text content, got {block!r}"
    return block.text


@pytest.mark.timeout(60)
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_fixture_serves_both_eras_over_stdio(mode: Literal["legacy", "2026-07-28"]) -> None:
    """Over stdio: the same interactive tool completes via back-channel requests (legacy)
    or via input_required rounds (2026-07-28), invisibly to the SDK client."""
    params = StdioServerParameters(
        command=sys.executable, args=[str(FIXTURE_SERVER), "--stdio"], env=dict(os.environ)
    )
    async with Client(
        params,
        mode=mode,
        elicitation_callback=answer_name,
        sampling_callback=answer_sampling,
        read_timeout_seconds=20,
    ) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert {
            "test_simple_text",
            "json_schema_2020_12_tool",
            "test_input_required_result_elicitation",
        } <= names

        simple = await client.call_tool("test_simple_text", {})
        assert first_text(simple) == "This is a simple text response for testing."

        greeted = await client.call_tool("test_input_required_result_elicitation", {})
        assert first_text(greeted) == "Hello, Ada!"

        sampled = await client.call_tool("test_sampling", {"prompt": "Capital of France?"})
        assert first_text(sampled) == "LLM response: Paris"

        error = await client.call_tool("test_error_handling", {})
        assert error.is_error is True


def write_checks(results: Path, folder: str, checks: list[dict[str, str]]) -> None:
    (results / folder).mkdir(parents=True)
    (results / folder / "checks.json").write_text(json.dumps(checks), encoding="utf-8")


def test_report_counts_like_the_suite_and_judges_a_baseline(tmp_path: Path) -> None:
    """SUCCESS passes, FAILURE fails, WARNING/INFO/SKIPPED are not counted; a baseline
    excuses exactly what it names and flags entries that pass again."""
    results = tmp_path / "results"
    write_checks(
        results,
        "server-tools-list-2026-11-22T02-17-55-589Z",
        [
            {"id": "tools-list", "status": "FAILURE", "errorMessage": "boom"},
            {"id": "wire", "status": "SUCCESS"},
        ],
    )
    write_checks(
        results,
        "server-caching-2026-11-22T02-17-55-944Z",
        [
            {"id": "hints", "status": "WARNING"},
            {"id": "scope", "status": "INFO"},
            {"id": "x", "status": "SKIPPED"},
        ],
    )
    checks = read_checks(results)
    report = ConformanceReport(
        url="http://127.0.0.1:1/mcp",
        spec_version="2026-07-28",
        checks=checks,
        duration_s=0.0,
        exit_code=1,
        output="",
        expected_failures=["tools-list:tools-list", "ping"],
    )
    assert (report.passed, report.failed, report.total) == (1, 1, 2)
    assert report.failed_checks == ["tools-list:tools-list"]
    assert report.warning_checks == ["caching:hints"]
    assert report.unexpected_failures == ["caching:hints"]
    assert report.stale_expectations == ["ping"]
