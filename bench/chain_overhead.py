"""Cost of a chain against the same calls made one by one by the client.

    .venv/bin/python bench/chain_overhead.py [--runs 300] [--rounds 5]

One gateway with the governance test server inside it (an embedded MCP server: no process hop,
so the figures show the gateway's own cost). Per round:
  direct  two `Gateway.call_tool` calls (gov.stamp_args, then gov.stamp_args with the first
          result as an argument), as a client would make them: what the chain replaces
  chain   one call of a chain with those two steps (templates filled, results read as data,
          each step through the whole pipeline)
Neither is cached (new arguments each run). Prints the median over rounds, in ms per run
(two tool calls), and the chain's extra cost per run.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import mcp_types as types

from mcp_nexus.pipeline.call import Caller
from support.gateway import running_gateway
from support.governance_gateway import document, embedded

CHAIN: dict[str, Any] = {
    "description": "Two stamps, the second carrying the first.",
    "input_schema": {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]},
    "steps": [
        {"id": "first", "tool": "gov.stamp_args", "arguments": {"a": "{{ input.key }}"}},
        {"tool": "gov.stamp_args", "arguments": {"a": "{{ steps.first }}", "b": "{{ input.key }}"}},
    ],
}


async def main(runs: int, rounds: int) -> None:
    caller = Caller("bench", "chain")
    with tempfile.TemporaryDirectory() as tmp:
        doc = document(Path(tmp) / "offload", {"gov": embedded("gov")}, rate_limit=None)
        doc["chains"] = {"two_stamps": CHAIN}
        async with running_gateway(doc) as gateway:

            async def direct(key: str) -> None:
                first = await gateway.call_tool("gov.stamp_args", {"a": key}, caller=caller)
                assert isinstance(first, types.CallToolResult) and isinstance(
                    first.content[0], types.TextContent
                )
                await gateway.call_tool(
                    "gov.stamp_args", {"a": first.content[0].text, "b": key}, caller=caller
                )

            async def chain(key: str) -> None:
                result = await gateway.call_tool("two_stamps", {"key": key}, caller=caller)
                assert isinstance(result, types.CallToolResult) and not result.is_error, result

            figures: dict[str, list[float]] = {"direct": [], "chain": []}
            for round_ in range(rounds):
                for label, run in (("direct", direct), ("chain", chain)):
                    started = time.perf_counter()
                    for i in range(runs):
                        await run(f"{label}-{round_}-{i}")
                    figures[label].append((time.perf_counter() - started) * 1000 / runs)
    direct_ms = statistics.median(figures["direct"])
    chain_ms = statistics.median(figures["chain"])
    print(f"runs per round {runs}, rounds {rounds}; median ms per run of two tool calls")
    print(f"  direct (two client calls)  {direct_ms:.3f}")
    print(f"  chain  (one call, 2 steps) {chain_ms:.3f}")
    print(f"  chain extra per run        {chain_ms - direct_ms:+.3f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(main(args.runs, args.rounds))
