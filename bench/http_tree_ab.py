"""Two source trees of Nexus side by side over HTTP: the gateway process's CPU and the latency per tools/call.

    git worktree add /tmp/before <commit>
    .venv/bin/python bench/http_tree_ab.py --before /tmp/before [--calls 3000] [--era auto|legacy]

Starts the direct HTTP server of the bench upstream and two `nexus serve` gateways on the
default config (built-ins on, bench/_common.py `write_gateway_config`), one importing Nexus
from this checkout and one from `--before`'s `src/` (put first on PYTHONPATH; the venv and
everything else are shared), then sends sequential `echo` calls from the SDK's client of one
era to all three in interleaved rounds. Prints each one's median latency, its ratio to the
direct server, and the gateway process's own CPU time per call (user + system, psutil; the
upstream's is not in it). CPU time, unlike latency, hardly depends on how the 2 cores are
shared: it is the figure to compare when the machine is not quiet.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack, ExitStack
from pathlib import Path

import psutil
from mcp import Client

import _common as bench


def cpu_seconds(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return float(times.user + times.system)


async def measure(targets: dict[str, tuple[str, int]], mode: str, calls: int, rounds: int) -> None:
    latencies: dict[str, list[float]] = {name: [] for name in targets}
    cpu: dict[str, float] = dict.fromkeys(targets, 0.0)
    async with AsyncExitStack() as stack:
        clients = {}
        for name, (url, _) in targets.items():
            client = clients[name] = await bench.open_http_client(stack, url, mode)

            async def listed(client: Client = client) -> set[str]:
                return {tool.name for tool in (await client.list_tools()).tools}

            await bench.wait_until_listed(listed, url)
            for _ in range(50):  # warm-up
                await bench.call_echo(client, "x")
        for _ in range(rounds):
            for name, client in clients.items():
                pid = targets[name][1]
                before = cpu_seconds(pid)
                for _ in range(calls // rounds):
                    started = time.perf_counter()
                    await bench.call_echo(client, "hello")
                    latencies[name].append(time.perf_counter() - started)
                cpu[name] += cpu_seconds(pid) - before
    direct = statistics.median(latencies["direct"])
    for name in targets:
        median = statistics.median(latencies[name])
        print(
            f"{name:8s} median {median * 1e3:6.3f} ms  ratio {median / direct:5.3f}x  "
            f"server process CPU {cpu[name] / calls * 1e6:6.0f} us per call"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--before", type=Path, required=True, help="a checkout of the other tree (its src/ is used)"
    )
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument(
        "--era", choices=["auto", "legacy"], default="auto", help="auto: 2026-07-28; legacy: handshake"
    )
    args = parser.parse_args()
    before_src = (args.before / "src").resolve()
    if not (before_src / "mcp_nexus").is_dir():
        sys.exit(f"--before {args.before}: no src/mcp_nexus there")
    with tempfile.TemporaryDirectory() as folder, ExitStack() as running:
        tmp = Path(folder)
        config = bench.write_gateway_config(tmp / "default.json", builtins=True)
        port = bench.free_port()
        direct = running.enter_context(bench.direct_http(port, tmp / "direct.log"))
        targets = {"direct": (f"http://127.0.0.1:{port}/mcp", direct.pid)}
        for name, pythonpath in (("after", ""), ("before", str(before_src))):
            os.environ["NEXUS_DATA_DIR"] = str(tmp / f"data-{name}")
            os.environ["PYTHONPATH"] = pythonpath
            port = bench.free_port()
            gateway = running.enter_context(bench.nexus_http(config, port, tmp / f"{name}.log"))
            targets[name] = (f"http://127.0.0.1:{port}/mcp", gateway.pid)
        print(f"{args.calls} sequential echo calls each, era {args.era}, {args.rounds} interleaved rounds")
        asyncio.run(measure(targets, args.era, args.calls, args.rounds))


if __name__ == "__main__":
    main()
