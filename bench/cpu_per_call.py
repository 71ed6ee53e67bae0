"""CPU time the gateway process spends per tools/call, event loop against event loop, side by side.

    .venv/bin/python bench/cpu_per_call.py [--calls 3000] [--runs 3]

A lean JSON-RPC client sends sequential calls of the bench upstream's `echo` through
`nexus serve --stdio` (upstream `protocol: legacy`) and reads the gateway process's own CPU
time (user + system, psutil) before and after. Runs alternate uvloop (the default) and
asyncio's own loop (`NEXUS_EVENT_LOOP=asyncio`), so drift hits both alike. CPU time, unlike
latency, does not depend on how the 2 cores are shared with the client and the upstream.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from pathlib import Path

import psutil

import _common as bench


def measure(config: Path, calls: int, loop: str) -> float:
    client = bench.LeanStdioClient(
        bench.nexus_stdio_command(config), env=dict(os.environ, NEXUS_EVENT_LOOP=loop)
    )
    try:
        gateway = psutil.Process(client.proc.pid)
        before = gateway.cpu_times()
        for n in range(calls):
            client.call(bench.call_message(n + 2, "x"))
        after = gateway.cpu_times()
        return (after.user + after.system - before.user - before.system) / calls * 1e6
    finally:
        client.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        config = bench.write_gateway_config(Path(tmp) / "legacy.json", protocol="legacy")
        seen: dict[str, list[float]] = {"uvloop": [], "asyncio": []}
        for _ in range(args.runs):
            for loop in seen:
                seen[loop].append(measure(config, args.calls, loop))
    for loop, samples in seen.items():
        runs = " / ".join(f"{value:.0f}" for value in samples)
        print(f"{loop:8} CPU per call in the gateway: {runs} us (mean {statistics.mean(samples):.0f} us)")
    ratio = statistics.mean(seen["uvloop"]) / statistics.mean(seen["asyncio"])
    print(f"uvloop / asyncio: {ratio:.2f}x")


if __name__ == "__main__":
    main()
