"""The lean HTTP tools/call: one JSON body for a plain call on a handshake-era session; the SDK's SSE path otherwise."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest_asyncio

from lifecycle.faults import document, faulty
from mcp_nexus.config.load import config_from_document
from mcp_nexus.runtime import Runtime, RuntimeOptions
from support.processes import free_port

ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest_asyncio.fixture
async def url() -> AsyncIterator[str]:
    config, _ = config_from_document(document({"f": faulty("f")}, port=free_port()))
    async with Runtime(config, RuntimeOptions(bridge=False, watch=False, wait_ready=True)) as runtime:
        yield runtime.url


async def session(client: httpx2.AsyncClient, url: str, capabilities: dict[str, Any]) -> dict[str, str]:
    opened = await client.post(
        url,
        headers=ACCEPT,
        json={
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": capabilities,
                "clientInfo": {"name": "t", "version": "1"},
            },
        },
    )
    headers = {
        **ACCEPT,
        "Mcp-Session-Id": opened.headers["mcp-session-id"],
        "Mcp-Protocol-Version": "2025-11-25",
    }
    await client.post(url, headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    return headers


def call(request_id: int, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": "f.echo", "arguments": {"text": "hi"}}
    if meta:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def answer_of(response: httpx2.Response) -> dict[str, Any]:
    if response.headers["content-type"].startswith("application/json"):
        return dict(response.json())
    events = [
        line[5:] for line in response.text.splitlines() if line.startswith("data:") and line[5:].strip()
    ]
    return dict(json.loads(events[-1]))


async def test_a_plain_call_is_one_json_body(url: str) -> None:
    async with httpx2.AsyncClient(timeout=30) as client:
        headers = await session(client, url, {})
        response = await client.post(url, headers=headers, json=call(1))
        assert response.status_code == 200 and response.headers["content-type"].startswith("application/json")
        assert answer_of(response)["result"]["content"][0]["text"] == "f: hi"
        unknown = await client.post(url, headers=headers, json={**call(2), "params": {"name": "f.nope"}})
        assert answer_of(unknown)["error"]["code"] == -32602


async def test_progress_or_a_client_that_takes_requests_keeps_the_sse_path(url: str) -> None:
    async with httpx2.AsyncClient(timeout=30) as client:
        plain = await session(client, url, {})
        with_progress = await client.post(url, headers=plain, json=call(3, {"progressToken": "p"}))
        assert with_progress.headers["content-type"].startswith("text/event-stream")
        assert answer_of(with_progress)["result"]["content"][0]["text"] == "f: hi"
        sampler = await session(client, url, {"sampling": {}})
        relayed = await client.post(url, headers=sampler, json=call(4))
        assert relayed.headers["content-type"].startswith("text/event-stream")


async def test_an_unknown_session_is_the_sdks_to_answer(url: str) -> None:
    async with httpx2.AsyncClient(timeout=30) as client:
        headers = {**ACCEPT, "Mcp-Session-Id": "not-a-session", "Mcp-Protocol-Version": "2025-11-25"}
        response = await client.post(url, headers=headers, json=call(5))
        assert response.status_code in (400, 404)
