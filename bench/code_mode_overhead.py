"""Cost of a tool call made from code in python_sandbox (code mode) against the same call made directly.

    .venv/bin/python bench/code_mode_overhead.py [--calls 200] [--rounds 5]

One gateway with the governance test server inside it (an embedded MCP server: no process hop, so
the figures show the gateway's own cost) and the real bubblewrap sandbox. Per round:
  direct   `Gateway.call_tool` N times (what a frontend does for each tools/call)
  code     one python_sandbox run whose code makes the same N calls through the tool channel,
           minus the same run with no calls (start-up of the sandbox), divided by N
for two tools: `gov.stamp` with a cache TTL (each call after the first is a cache hit: the
pipeline's cheapest path, so the channel's share shows most) and `gov.stamp_args` with new
arguments each time (a miss: the server is called). Prints the median over rounds, in ms per call.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from mcp_nexus.pipeline.call import Caller
from support.gateway import running_gateway
from support.governance_gateway import document, embedded

CALLER = Caller("stdio", "bench")


async def _direct(gateway, tool: str, calls: int, round_: int) -> float:  # type: ignore[no-untyped-def]
    started = time.perf_counter()
    for n in range(calls):
        arguments = {"key": "k"} if tool == "gov.stamp" else {"a": f"d{round_}-{n}"}
        await gateway.call_tool(tool, arguments, caller=CALLER)
    return (time.perf_counter() - started) / calls * 1000


async def _run_seconds(gateway, code: str) -> float:  # type: ignore[no-untyped-def]
    result = await gateway.call_tool("python_sandbox", {"code": code}, caller=CALLER)
    assert not result.is_error, result.content[0].text
    return float(result.meta["nexus/sandbox"]["duration_s"])


async def _code(gateway, tool: str, calls: int, round_: int) -> float:  # type: ignore[no-untyped-def]
    if tool == "gov.stamp":
        body = f"for n in range({calls}):\n    tools.gov.stamp(key='k')\nprint('ok')"
    else:
        body = f"for n in range({calls}):\n    tools.gov.stamp_args(a='c{round_}-%d' % n)\nprint('ok')"
    empty = await _run_seconds(gateway, "tools.gov\nprint('ok')")  # the stub list is fetched in both
    full = await _run_seconds(gateway, body)
    return max(0.0, full - empty) / calls * 1000


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="nexus-bench-codemode-"))
    gov = embedded("gov", tool_config={"stamp": {"cache_ttl": 600}})
    doc = document(
        folder / "offload", {"gov": gov}, rate_limit=None, sandbox_tool_calls=100_000, sandbox_timeout=120
    )
    async with running_gateway(doc) as gateway:
        await _run_seconds(gateway, "print('warm')")  # the sandbox probe, once
        rows = []
        for tool, what in (("gov.stamp", "cache hit"), ("gov.stamp_args", "cache miss, server called")):
            direct, code = [], []
            for round_ in range(args.rounds):
                direct.append(await _direct(gateway, tool, args.calls, round_))
                code.append(await _code(gateway, tool, args.calls, round_))
            rows.append((f"{tool} ({what})", statistics.median(direct), statistics.median(code)))
    print(f"{args.calls} calls per round, {args.rounds} rounds, median ms per call")
    print(f"{'call':40} {'direct':>8} {'from code':>10} {'added':>8}")
    for name, direct_ms, code_ms in rows:
        print(f"{name:40} {direct_ms:8.3f} {code_ms:10.3f} {code_ms - direct_ms:8.3f}")


if __name__ == "__main__":
    asyncio.run(main())
