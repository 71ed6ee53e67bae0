"""Gateway overhead: N sequential tools/call to a trivial tool, direct vs through Nexus, side by side.

    .venv/bin/python bench/overhead.py [--calls 1000]

Measures, in one run and against the same upstream program (tests/support/demo_server.py):
  direct     client -> stdio upstream
  stdio      client -> `nexus serve --stdio` -> the same upstream over stdio
  http       client -> `nexus serve` (streamable HTTP) -> the same upstream over stdio
  direct http  client -> the same server program serving streamable HTTP itself
and prints median and p95 per call and the gateway/direct ratio of medians (the HTTP
frontend is also compared with the direct HTTP server, its like-for-like baseline).
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
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from mcp import Client, StdioServerParameters  # noqa: E402

from support.processes import VENV_BIN, child_env, free_port, running, wait_for_http  # noqa: E402

UPSTREAM = [sys.executable, "-m", "support.demo_server", "bench"]


async def measure(client: Client, tool: str, calls: int) -> list[float]:
    for _ in range(20):  # warm-up: imports, JIT-free but caches and first-call paths
        await client.call_tool(tool, {"text": "x"})
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        await client.call_tool(tool, {"text": "x"})
        samples.append(time.perf_counter() - started)
    return samples


def stdio_params(command: list[str]) -> StdioServerParameters:
    return StdioServerParameters(command=command[0], args=command[1:], env=child_env())


async def direct(calls: int) -> list[float]:
    async with Client(stdio_params(UPSTREAM), mode="legacy") as client:
        return await measure(client, "echo", calls)


async def through_stdio(config: Path, calls: int) -> list[float]:
    command = [str(VENV_BIN / "nexus"), "serve", "--stdio", "--config", str(config)]
    async with Client(stdio_params(command), mode="legacy") as client:
        return await measure(client, "echo", calls)


async def through_http(url: str, calls: int) -> list[float]:
    async with Client(url, mode="legacy") as client:
        return await measure(client, "echo", calls)


def summary(name: str, samples: list[float], baseline: float | None) -> str:
    ordered = sorted(samples)
    median = statistics.median(ordered) * 1000
    p95 = ordered[int(len(ordered) * 0.95) - 1] * 1000
    ratio = f"{median / baseline:5.2f}x" if baseline else "  1.00x"
    return f"{name:<34} median {median:7.3f} ms   p95 {p95:7.3f} ms   ratio {ratio}"


async def in_process(config: Path, calls: int) -> tuple[list[float], list[float]]:
    """The gateway's own share: `Gateway.call_tool` (every pipeline step) vs a raw request on the same pipe."""
    from mcp_nexus.config.load import load_config
    from mcp_nexus.gateway import Gateway

    loaded, _ = load_config(config)
    async with Gateway(loaded) as gateway:
        process = gateway.upstreams["bench"]._process
        assert process is not None

        async def raw() -> object:
            data = {"method": "tools/call", "params": {"name": "echo", "arguments": {"text": "x"}}}
            return await process.request(data, timeout=30)

        async def full() -> object:
            return await gateway.call_tool("echo", {"text": "x"})

        samples: dict[str, list[float]] = {"raw": [], "full": []}
        for _ in range(20):
            await raw()
            await full()
        for _ in range(calls):  # interleaved, so drift hits both alike
            for name, fn in (("raw", raw), ("full", full)):
                started = time.perf_counter()
                await fn()
                samples[name].append(time.perf_counter() - started)
        return samples["raw"], samples["full"]


def write_config(path: Path, port: int, protocol: str) -> Path:
    path.write_text(
        json.dumps(
            {
                # No rate limit: 1000 back-to-back calls would hit the default 5/second.
                "gateway": {"include_builtins": False, "port": port, "rate_limit": None},
                "servers": {
                    "bench": {
                        "command": UPSTREAM[0],
                        "args": UPSTREAM[1:],
                        "namespace": "",
                        "protocol": protocol,
                        "env": {"PYTHONPATH": str(ROOT / "tests")},
                    }
                },
            }
        )
    )
    return path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=1000)
    args = parser.parse_args()
    tmp_dir = tempfile.TemporaryDirectory()
    tmp = Path(tmp_dir.name)
    port = free_port()
    auto = write_config(tmp / "auto.json", port, "auto")
    legacy = write_config(tmp / "legacy.json", port, "legacy")
    # The client always speaks the handshake era (as IDEs do). The upstream, an SDK 2.x
    # server, speaks whatever Nexus negotiates: 2026-07-28 by default ("auto"), or the
    # handshake era with "protocol": "legacy" - the like-for-like pair with `direct`.
    results: dict[str, list[float]] = {}
    results["direct (client -> stdio upstream)"] = asyncio.run(direct(args.calls))
    results["nexus stdio, upstream legacy"] = asyncio.run(through_stdio(legacy, args.calls))
    results["nexus stdio, upstream auto"] = asyncio.run(through_stdio(auto, args.calls))
    with running(
        [str(VENV_BIN / "nexus"), "serve", "--no-watch", "--config", str(legacy)], log=tmp / "gw.log"
    ) as proc:
        wait_for_http(f"http://127.0.0.1:{port}/healthz", proc=proc)
        results["nexus http, upstream legacy"] = asyncio.run(
            through_http(f"http://127.0.0.1:{port}/mcp", args.calls)
        )
    direct_port = free_port()
    with running([*UPSTREAM, "--http", str(direct_port)], log=tmp / "direct-http.log") as proc:
        wait_for_http(f"http://127.0.0.1:{direct_port}/mcp", proc=proc)
        results["direct http (client -> http server)"] = asyncio.run(
            through_http(f"http://127.0.0.1:{direct_port}/mcp", args.calls)
        )
    raw, full = asyncio.run(in_process(legacy, args.calls))
    tmp_dir.cleanup()
    baseline = statistics.median(results["direct (client -> stdio upstream)"]) * 1000
    http_baseline = statistics.median(results["direct http (client -> http server)"]) * 1000
    print(
        f"{args.calls} sequential tools/call of a trivial tool (python {sys.version.split()[0]}, {os.cpu_count()} cpus)"
    )
    for name, samples in results.items():
        print(summary(name, samples, baseline if "direct" not in name else None))
    print(summary("nexus http vs direct http", results["nexus http, upstream legacy"], http_baseline))
    print("in one process, same upstream pipe (the gateway's own cost, no extra process hop):")
    raw_median = statistics.median(raw) * 1000
    print(summary("raw JSON-RPC request on the pipe", raw, None))
    print(summary("Gateway.call_tool (full pipeline)", full, raw_median))


if __name__ == "__main__":
    main()
