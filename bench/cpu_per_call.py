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
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

import _common as bench


def measure(config: Path, calls: int, loop: str) -> float:
    env = dict(os.environ, NEXUS_EVENT_LOOP=loop)
    proc = subprocess.Popen(
        bench.nexus_stdio_command(config),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout

    def send(message: dict[str, Any]) -> None:
        stdin.write(json.dumps(message).encode() + b"\n")
        stdin.flush()

    def answer() -> dict[str, Any]:
        while True:
            message: dict[str, Any] = json.loads(stdout.readline())
            if "id" in message and "method" not in message:
                return message

    try:
        send(bench.initialize_message(0))
        answer()
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        for _ in range(400):  # until the upstream has joined
            send(bench.call_message(1, "warm"))
            if "result" in answer():
                break
            time.sleep(0.05)
        gateway = psutil.Process(proc.pid)
        before = gateway.cpu_times()
        for n in range(calls):
            send(bench.call_message(n + 2, "x"))
            answer()
        after = gateway.cpu_times()
        return (after.user + after.system - before.user - before.system) / calls * 1e6
    finally:
        stdin.close()
        proc.wait(timeout=30)


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
