"""Issue 24's done-when for code mode: a client over stdio and over HTTP, in both protocol eras, runs a
code-mode task in python_sandbox whose inner calls show in `/metrics` and in the admin API's recent
calls (the dashboard's call log) as coming from the sandbox, hit the cache on the second run and are
rate limited like direct calls.

One gateway per case, with the real governance test server over stdio as its upstream, its HTTP
frontend on a free 127.0.0.1 port, and its stdio frontend served over a pair of pipes (the same
`StdioServer` `nexus serve --stdio` runs). The sandbox is the real bubblewrap one.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from prometheus_client.parser import text_string_to_metric_families

from matrix.clients import ERAS, HttpClient, MatrixClient
from mcp_nexus.frontends.mcp.stdio import StdioServer
from robustness.http_client import CLIENT_INFO, HANDSHAKE_VERSION, modern_meta
from support.gateway import running
from support.governance_gateway import document, embedded, stdio

TASK = """
rows = tools.gov.big_list(items=300)          # > 5 KB: offloaded for a model, plain data here
lights = [row["id"] for row in rows if row["id"].startswith("light.")]
stamp = call_tool("gov.stamp", {"key": "k"})
limited = []
for n in range(3):
    try:
        tools.gov.stamp_args(a=str(n))
        limited.append("ok")
    except RateLimitError as error:
        limited.append("limited" if "SYSTEM_ALERT" in str(error) else "other: " + str(error))
return {"lights": len(lights), "stamp": stamp, "limited": limited}
"""


def _config(tmp_path: Path, transport: str = "stdio") -> dict[str, Any]:
    policy = {
        "stamp": {"cache_ttl": 60},
        "big_list": {"cache_ttl": 60},
        "stamp_args": {"rate_limit": "2/minute"},
    }
    gov = (stdio if transport == "stdio" else embedded)("codemode", tool_config=policy)
    return document(tmp_path / "offload", {"gov": gov}, rate_limit=None)


class PipeStdioClient:
    """A client of the gateway's stdio frontend (StdioServer) over two pipes, in either era."""

    def __init__(self, server: StdioServer, era: str) -> None:
        self.server, self.era = server, era
        self._ids = itertools.count(1)

    async def __aenter__(self) -> PipeStdioClient:
        in_read, in_write = os.pipe()
        out_read, out_write = os.pipe()
        self._files = [
            open(in_read, "rb", buffering=0),  # noqa: SIM115 - closed in __aexit__
            open(out_write, "wb", buffering=0),  # noqa: SIM115
            open(in_write, "wb", buffering=0),  # noqa: SIM115
            open(out_read, "rb"),  # noqa: SIM115
        ]
        stdin, stdout, self._to_server, self._from_server = self._files
        self._serving = asyncio.create_task(self.server.serve(stdin, stdout))
        if self.era == HANDSHAKE_VERSION:
            params = {"protocolVersion": HANDSHAKE_VERSION, "capabilities": {}, "clientInfo": CLIENT_INFO}
            answer = await self._exchange(
                {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
            )
            assert "result" in answer, answer
            self._write({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._to_server.close()
        try:
            await asyncio.wait_for(self._serving, 20)
        finally:
            for handle in self._files:
                with contextlib.suppress(OSError):
                    handle.close()

    def _write(self, message: dict[str, Any]) -> None:
        self._to_server.write(json.dumps(message).encode() + b"\n")

    async def _exchange(self, message: dict[str, Any]) -> dict[str, Any]:
        self._write(message)
        loop = asyncio.get_running_loop()
        while True:
            line = await asyncio.wait_for(loop.run_in_executor(None, self._from_server.readline), 60)
            assert line, "the stdio frontend closed its output"
            answer = json.loads(line)
            if answer.get("id") == message["id"]:
                return dict(answer)

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        params = dict(params or {})
        if self.era != HANDSHAKE_VERSION:
            params["_meta"] = modern_meta()
        return await self._exchange(
            {"jsonrpc": "2.0", "id": next(self._ids), "method": method, "params": params}
        )


@contextlib.asynccontextmanager
async def _client(frontend: str, era: str, tmp_path: Path) -> AsyncIterator[tuple[MatrixClient, str]]:
    """(a client of `frontend` in `era`, the gateway's base URL for /metrics and /api/calls)."""
    async with running(_config(tmp_path, "embedded"), http=True) as runtime:
        base = runtime.url.removesuffix("/mcp")
        client: Any
        if frontend == "stdio":
            client = PipeStdioClient(StdioServer(runtime.gateway), era)
        else:
            client = HttpClient(runtime.url, era)
        async with client:
            yield client, base


def _answer_text(answer: dict[str, Any]) -> str:
    assert "result" in answer, answer
    return "\n".join(item.get("text", "") for item in answer["result"]["content"])


async def _run_task(client: MatrixClient) -> dict[str, Any]:
    answer = await client.request("tools/call", {"name": "python_sandbox", "arguments": {"code": TASK}})
    text = _answer_text(answer)
    assert not answer["result"].get("isError"), text
    assert "SYSTEM_ALERT" not in text and "tool_output_" not in text, text  # the rows stayed in the sandbox
    return dict(json.loads(text))


def _samples(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    found: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found.setdefault(sample.name, []).append((sample.labels, sample.value))
    return found


def _value(found: dict[str, list[tuple[dict[str, str], float]]], name: str, **labels: str) -> float:
    for sample_labels, number in found.get(name, []):
        if all(sample_labels.get(k) == v for k, v in labels.items()):
            return number
    raise AssertionError(f"no {name} with {labels}; have {found.get(name)}")


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("frontend", ["stdio", "http"])
async def test_code_mode_task_is_governed_like_direct_calls(frontend: str, era: str, tmp_path: Path) -> None:
    async with _client(frontend, era, tmp_path) as (client, base):
        first = await _run_task(client)
        assert first == {"lights": 150, "stamp": "codemode:k:1", "limited": ["ok", "ok", "limited"]}
        second = await _run_task(client)
        # Cached: the same stamp (the server was not called again); the rate limit window is still full.
        assert second == {"lights": 150, "stamp": "codemode:k:1", "limited": ["limited"] * 3}
        direct = await client.request("tools/call", {"name": "gov.stamp_args", "arguments": {"a": "x"}})
        assert _answer_text(direct).startswith("SYSTEM_ALERT"), direct  # the same limit for a direct call
        counts = json.loads(_answer_text(await client.request("tools/call", {"name": "gov.counts"})))
        assert counts == {"big_list": 1, "stamp": 1, "stamp_args": 2}, counts

        async with httpx2.AsyncClient(timeout=30) as http:
            calls = (await http.get(base + "/api/calls")).json()["calls"]
            scrape = (await http.get(base + "/metrics")).text
    inner = [c for c in calls if c["tool"].startswith("gov.") and c["tool"] != "gov.counts"]
    assert {c["via"] for c in inner if c["tool"] != "gov.stamp_args" or c["outcome"] == "ok"} == {"sandbox"}
    assert all(c["frontend"] == frontend for c in inner), inner
    stamps = [(c["cache"], c["via"]) for c in inner if c["tool"] == "gov.stamp"]
    assert stamps == [("miss", "sandbox"), ("hit", "sandbox")], stamps
    limited = [c["via"] for c in inner if c["tool"] == "gov.stamp_args" and c["outcome"] == "rate_limited"]
    assert limited == ["sandbox"] * 4 + [None], limited  # four from code, then the direct one
    runs = [c for c in calls if c["tool"] == "python_sandbox"]
    assert len(runs) == 2 and all(c["via"] is None for c in runs)

    found = _samples(scrape)
    # 2 runs x (big_list + stamp + 3 stamp_args) = 10 calls from code, their own row per frontend.
    assert _value(found, "nexus_frontend_calls_total", frontend=f"{frontend}/sandbox") == 10
    assert _value(found, "nexus_tool_cache_hits_total", tool="gov.stamp") == 1
    assert _value(found, "nexus_tool_cache_hits_total", tool="gov.big_list") == 1
    assert _value(found, "nexus_tool_rate_limited_total", tool="gov.stamp_args") == 5


async def test_code_mode_reaches_a_stdio_upstream_through_the_same_pipeline(tmp_path: Path) -> None:
    """The cases above use the governance server inside the gateway (fast to start); here it is a
    child process over stdio, and code mode reaches it the same way."""
    from mcp_nexus.pipeline.call import Caller

    async with running(_config(tmp_path, "stdio")) as runtime:
        caller = Caller("stdio", "desktop")
        answers = []
        for _ in range(2):
            result = await runtime.gateway.call_tool("python_sandbox", {"code": TASK}, caller=caller)
            answers.append(json.loads(result.content[0].text))  # type: ignore[union-attr]
    assert answers[0] == {"lights": 150, "stamp": "codemode:k:1", "limited": ["ok", "ok", "limited"]}
    assert answers[1] == {"lights": 150, "stamp": "codemode:k:1", "limited": ["limited"] * 3}
