"""The governance pipeline's own cost per tools/call, with the upstream answering instantly.

    .venv/bin/python bench/pipeline_cpu.py [--blocks 30] [--calls 500]

Runs a gateway in this process (the bench upstream over stdio, `protocol: legacy`, no
frontend), then replaces that one session's `call_tool` with a coroutine that returns a
ready-made `CallToolResult`: what is left of `Gateway.call_tool` is every pipeline step,
the route and the upstream wrapper, with no pipe and no other process. Blocks of calls
alternate with blocks of the bare replacement (the floor); the difference of the medians is
the pipeline's warm cost. Uses Nexus internals: if they moved, it says so and stops.

On the 2-core machine the whole call costs the gateway process 250-400 us of CPU (see
bench/cpu_split.py); this figure says how little of it is the pipeline itself when warm.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import mcp_types as types

import _common as bench

RESULT = {
    "content": [{"type": "text", "text": "bench: x"}],
    "isError": False,
    "structuredContent": {"result": "bench: x"},
}


async def measure(blocks: int, calls: int) -> tuple[list[float], list[float]]:
    from mcp_nexus.config.load import load_config
    from mcp_nexus.runtime import Runtime, RuntimeOptions

    with tempfile.TemporaryDirectory() as tmp:
        config, _ = load_config(bench.write_gateway_config(Path(tmp) / "legacy.json", protocol="legacy"))
        options = RuntimeOptions(http=False, bridge=False, watch=False, wait_ready=True)
        async with Runtime(config, options) as runtime:
            gateway = runtime.gateway
            session: Any = gateway.upstreams[bench.INSTANCE].session()

            async def instant(name: str, arguments: Any, **_: Any) -> types.CallToolResult:
                return types.CallToolResult.model_validate(RESULT, by_name=False)

            session.call_tool = instant

            async def full() -> object:
                return await gateway.call_tool("echo", {"text": "x"})

            async def floor() -> object:
                return await instant("echo", {"text": "x"})

            for _ in range(2000):  # warm-up: memoised policies, validators, chains
                await full()
                await floor()
            samples: dict[str, list[float]] = {"floor": [], "full": []}
            for _ in range(blocks):
                for name, run in (("floor", floor), ("full", full)):
                    started = time.perf_counter()
                    for _ in range(calls):
                        await run()
                    samples[name].append((time.perf_counter() - started) / calls * 1e6)
            return samples["floor"], samples["full"]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--blocks", type=int, default=30)
    parser.add_argument("--calls", type=int, default=500)
    args = parser.parse_args()
    try:
        from mcp_nexus import event_loop

        floor, full = event_loop.run(measure(args.blocks, args.calls))
    except (ImportError, AttributeError, KeyError) as exc:
        sys.exit(f"not measured: Nexus internals moved ({exc})")
    low, high = statistics.median(floor), statistics.median(full)
    print(f"floor (the replaced call alone): {low:.1f} us per call")
    print(f"Gateway.call_tool, every step:   {high:.1f} us per call")
    print(f"the pipeline's own warm cost:    {high - low:.1f} us per call")


if __name__ == "__main__":
    main()
