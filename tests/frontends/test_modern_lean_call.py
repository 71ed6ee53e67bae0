"""A plain 2026-07-28 tools/call skips the SDK's per-request server, on stdio and HTTP, and answers as it would.

Each case sends the same call twice: plain (served by frontends/mcp/modern_call.py) and with one
more `_meta` key (which sends it down the SDK's path), and compares the answers. A spy on
`ModernToolCall.call` (the real method runs) shows which path each took; every request the
SDK must judge (a header mismatch, a bad envelope, a refused Accept) still reaches it.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx2
import pytest
import pytest_asyncio
from mcp_types import HEADER_MISMATCH

from lifecycle.faults import document, faulty
from mcp_nexus.config.load import config_from_document
from mcp_nexus.frontends.mcp.modern_call import ModernToolCall
from mcp_nexus.frontends.mcp.stdio import StdioServer
from mcp_nexus.runtime import Runtime, RuntimeOptions
from robustness.http_client import modern_headers, modern_meta
from support.processes import free_port

SDK_PATH = {"io.example/note": "one more key: the SDK's path"}


@pytest.fixture
def lean_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Names of the calls ModernToolCall served (a spy: the real method runs)."""
    served: list[str] = []
    real = ModernToolCall.call

    async def spy(self: ModernToolCall, request_id: Any, params: Any, **options: Any) -> dict[str, Any]:
        served.append(params["name"])
        return await real(self, request_id, params, **options)

    monkeypatch.setattr(ModernToolCall, "call", spy)
    return served


def request(
    request_id: int, name: str, arguments: Any = None, extra_meta: dict[str, Any] | None = None
) -> Any:
    params: dict[str, Any] = {"name": name, "_meta": {**modern_meta(), **(extra_meta or {})}}
    if arguments is not None:
        params["arguments"] = arguments
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def comparable(answer: dict[str, Any]) -> dict[str, Any]:
    """The answer less its id and an error's timestamp (the two calls are made apart)."""
    assert answer.get("jsonrpc") == "2.0", answer
    kept = {key: value for key, value in answer.items() if key != "id"}
    data = kept.get("error", {}).get("data")
    if isinstance(data, dict):
        kept["error"] = {**kept["error"], "data": {k: v for k, v in data.items() if k != "timestamp"}}
    return kept


# -- HTTP ------------------------------------------------------------------------------------


@pytest_asyncio.fixture
async def url() -> AsyncIterator[str]:
    config, _ = config_from_document(document({"f": faulty("f")}, port=free_port()))
    async with Runtime(config, RuntimeOptions(bridge=False, watch=False, wait_ready=True)) as runtime:
        yield runtime.url


async def post(
    client: httpx2.AsyncClient, url: str, message: Any, **headers: str
) -> tuple[int, dict[str, Any]]:
    response = await client.post(url, headers={**modern_headers(message), **headers}, json=message)
    return response.status_code, dict(response.json())


async def test_http_plain_calls_take_the_lean_path_and_answer_as_the_sdk(
    url: str, lean_calls: list[str]
) -> None:
    async with httpx2.AsyncClient(timeout=30) as client:
        for arguments in ({"text": "hi"}, {"text": "ünï 😀"}):
            lean = await post(client, url, request(1, "f.echo", arguments))
            sdk = await post(client, url, request(2, "f.echo", arguments, SDK_PATH))
            assert lean[0] == sdk[0] == 200
            assert comparable(lean[1]) == comparable(sdk[1])
            assert lean[1]["result"]["resultType"] == "complete"
            assert lean[1]["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "mcp-nexus"
        # The pipeline's errors: the same code, message and HTTP status on both paths.
        for name, arguments in (("f.nope", {}), ("f.fail", {"text": "x"}), ("f.echo", {"text": 5})):
            lean = await post(client, url, request(3, name, arguments))
            sdk = await post(client, url, request(4, name, arguments, SDK_PATH))
            assert lean[0] == sdk[0]
            assert comparable(lean[1]) == comparable(sdk[1]), name
    assert lean_calls == ["f.echo", "f.echo", "f.nope", "f.fail", "f.echo"]


async def test_http_requests_the_sdk_must_judge_still_reach_it(url: str, lean_calls: list[str]) -> None:
    async with httpx2.AsyncClient(timeout=30) as client:
        message = request(1, "f.echo", {"text": "hi"})
        status, answer = await post(client, url, message, **{"Mcp-Name": "f.other"})
        assert status == 400 and answer["error"]["code"] == HEADER_MISMATCH, answer
        status, answer = await post(client, url, message, **{"Mcp-Method": "tools/list"})
        assert status == 400 and answer["error"]["code"] == HEADER_MISMATCH, answer
        refused = await client.post(
            url, headers={**modern_headers(message), "Accept": "application/json"}, json=message
        )
        assert refused.status_code == 406
        repeated = await client.post(
            url,
            headers=[*modern_headers(message).items(), ("Mcp-Param-Text", "hi"), ("Mcp-Param-Text", "ho")],
            json=message,
        )
        sdk = await post(client, url, request(1, "f.echo", {"text": "hi"}, SDK_PATH))
        assert repeated.status_code == sdk[0] and comparable(repeated.json()) == comparable(sdk[1])
        bad_envelope = request(2, "f.echo", {"text": "hi"})
        bad_envelope["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = {"sampling": 5}
        status, answer = await post(client, url, bad_envelope)
        assert "error" in answer and status == 400, answer
    assert lean_calls == []


# -- stdio -----------------------------------------------------------------------------------


@pytest_asyncio.fixture
async def stdio() -> AsyncIterator[Callable[[Any], Awaitable[dict[str, Any]]]]:
    """Send one message to an in-process stdio frontend and read its answer."""
    config, _ = config_from_document(document({"f": faulty("f")}))
    options = RuntimeOptions(http=False, bridge=False, watch=False, wait_ready=True)
    async with Runtime(config, options) as runtime:
        in_read, in_write = os.pipe()
        out_read, out_write = os.pipe()
        with (
            open(in_read, "rb", buffering=0) as stdin,
            open(out_write, "wb", buffering=0) as stdout,
            open(in_write, "wb", buffering=0) as to_server,
            open(out_read, "rb") as from_server,
        ):
            serving = asyncio.create_task(StdioServer(runtime.gateway).serve(stdin, stdout))
            loop = asyncio.get_running_loop()

            async def exchange(message: Any) -> dict[str, Any]:
                to_server.write(json.dumps(message).encode() + b"\n")
                line = await asyncio.wait_for(loop.run_in_executor(None, from_server.readline), 20)
                return dict(json.loads(line))

            try:
                yield exchange
            finally:
                to_server.close()
                await asyncio.wait_for(serving, 20)


async def test_stdio_plain_calls_take_the_lean_path_and_answer_as_the_sdk(
    stdio: Callable[[Any], Awaitable[dict[str, Any]]], lean_calls: list[str]
) -> None:
    cases = [
        ("f.echo", {"text": "hi"}),
        ("f.echo", None),
        ("f.nope", {}),
        ("f.fail", {"text": "x"}),
        ("f.echo", {"text": 5}),
    ]
    for name, arguments in cases:
        lean = await stdio(request(1, name, arguments))
        sdk = await stdio(request(2, name, arguments, SDK_PATH))
        assert comparable(lean) == comparable(sdk), name
    assert lean_calls == [name for name, _ in cases]
    # An envelope the SDK refuses is refused as before, not served.
    bad = request(3, "f.echo", {"text": "hi"})
    bad["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = {"sampling": 5}
    assert "error" in await stdio(bad)
    assert len(lean_calls) == len(cases)
