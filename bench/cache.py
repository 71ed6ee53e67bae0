"""Cache benchmark: cached vs uncached vs direct tools/call latency, side by side in one run.

    .venv/bin/python bench/cache.py [--calls 1000]

Against one stdio upstream program (tests/support/demo_server.py, tool `echo`):
  direct                 SDK client -> stdio upstream
  gateway uncached       Gateway.call_tool (the full pipeline) -> the same upstream over stdio
  gateway cached         Gateway.call_tool, every call a cache hit
  client uncached        in-memory SDK client -> Nexus MCP frontend -> pipeline -> stdio upstream
  client cached          the same with every call a cache hit
  stdio frontend cached  SDK client -> `nexus serve --stdio` (cache hit) : a process hop of its own
Target (issue 3): a cache hit through the gateway costs <= 0.5x a direct call.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from mcp import Client, StdioServerParameters  # noqa: E402

from mcp_nexus.config.load import config_from_document  # noqa: E402
from mcp_nexus.frontends.mcp.server import McpFrontend  # noqa: E402
from mcp_nexus.gateway import Gateway  # noqa: E402
from support.processes import VENV_BIN, child_env  # noqa: E402

UPSTREAM = [sys.executable, "-m", "support.demo_server", "bench"]


def config_doc(cache_ttl: float) -> dict[str, Any]:
    return {
        "gateway": {"include_builtins": False, "rate_limit": None},
        "servers": {
            "bench": {
                "command": UPSTREAM[0],
                "args": UPSTREAM[1:],
                "namespace": "",
                # by name: echo has no readOnlyHint, and a wide cache_ttl only caches read-only tools
                "tool_config": {"echo": {"cache_ttl": cache_ttl}},
                "env": {"PYTHONPATH": str(ROOT / "tests")},
            }
        },
    }


async def measure(call: Callable[[], Awaitable[Any]], calls: int) -> list[float]:
    for _ in range(20):  # warm-up (and, when cached, the one miss)
        await call()
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        await call()
        samples.append(time.perf_counter() - started)
    return samples


def stdio_params(command: list[str]) -> StdioServerParameters:
    return StdioServerParameters(command=command[0], args=command[1:], env=child_env())


async def direct(calls: int) -> list[float]:
    async with Client(stdio_params(UPSTREAM), mode="legacy") as client:
        return await measure(lambda: client.call_tool("echo", {"text": "x"}), calls)


async def in_process(calls: int, cache_ttl: float) -> tuple[list[float], list[float]]:
    config, _ = config_from_document(config_doc(cache_ttl))
    async with Gateway(config) as gateway:
        pipeline = await measure(lambda: gateway.call_tool("echo", {"text": "x"}), calls)
        async with Client(McpFrontend(gateway, "bench").server, mode="legacy") as client:
            through_client = await measure(lambda: client.call_tool("echo", {"text": "x"}), calls)
    return pipeline, through_client


async def stdio_frontend(config: Path, calls: int) -> list[float]:
    command = [str(VENV_BIN / "nexus"), "serve", "--stdio", "--config", str(config)]
    async with Client(stdio_params(command), mode="legacy") as client:
        return await measure(lambda: client.call_tool("echo", {"text": "x"}), calls)


def summary(name: str, samples: list[float], baseline: float | None) -> str:
    ordered = sorted(samples)
    median = statistics.median(ordered) * 1000
    p95 = ordered[int(len(ordered) * 0.95) - 1] * 1000
    ratio = f"{median / baseline:6.3f}x" if baseline else " 1.000x"
    return f"{name:<28} median {median:7.3f} ms   p95 {p95:7.3f} ms   ratio {ratio}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=1000)
    args = parser.parse_args()
    results: dict[str, list[float]] = {}
    results["direct (client -> stdio)"] = asyncio.run(direct(args.calls))
    results["gateway uncached"], results["client uncached"] = asyncio.run(in_process(args.calls, 0))
    results["gateway cached"], results["client cached"] = asyncio.run(in_process(args.calls, 3600))
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "nexus.json"
        config.write_text(json.dumps(config_doc(3600)))
        results["stdio frontend cached"] = asyncio.run(stdio_frontend(config, args.calls))
    baseline = statistics.median(results["direct (client -> stdio)"]) * 1000
    print(
        f"{args.calls} sequential tools/call `echo` (python {sys.version.split()[0]}, {os.cpu_count()} cpus)"
    )
    for name, samples in results.items():
        print(summary(name, samples, None if name.startswith("direct") else baseline))
    hit = statistics.median(results["gateway cached"]) * 1000
    print(
        f"target: gateway cache hit <= 0.5x direct -> {hit / baseline:.3f}x ({'met' if hit / baseline <= 0.5 else 'MISSED'})"
    )


if __name__ == "__main__":
    main()
