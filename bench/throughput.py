"""Throughput with many calls in flight, gateway vs direct, every answer checked.

    .venv/bin/python bench/throughput.py [--clients 32] [--calls 5000] [--in-flight 64]
                                         [--stdio-calls 5000] [--rounds 2] [--protocol legacy]

HTTP: `--clients` concurrent clients (each its own connection and session, one call at a
time, handshake era) share `--calls` calls of the trivial `echo` tool:
  direct http   tests/support/demo_server.py serving streamable HTTP itself
  nexus http    `nexus serve` (HTTP frontend) -> the same program over stdio
stdio: one client keeps `--in-flight` requests pipelined on one pipe:
  direct stdio  the same program over stdio
  nexus stdio   `nexus serve --stdio` -> the same program over stdio
Each pair runs in `--rounds` interleaved rounds (A B A B ...). Every call carries a unique
text that the echo returns, so every answer is checked to belong to its own request:
every id answered exactly once, with its own payload.

Prints calls/s, p50/p99 per variant and the ratios; the target of the hot path is nexus
http >= 0.8x direct http requests/s. The clients are lean JSON-RPC clients (bench/_common.py),
not the SDK's `Client`, so the servers, not the client, set the pace; on a 2-core machine
client and servers still share the CPUs, so compare ratios, not absolute rates.
Exit status 1 if any call was lost, misrouted, duplicated or failed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path

import _common as bench

HTTP_TARGET = 0.8


async def http_pair(
    urls: dict[str, str], clients: int, calls: int, rounds: int
) -> dict[str, bench.LoadResult]:
    results = {name: bench.LoadResult() for name in urls}
    async with (
        bench.http_clients(urls["direct http"], clients) as direct,
        bench.http_clients(urls["nexus http"], clients) as nexus,
    ):
        sessions = {"direct http": direct, "nexus http": nexus}
        for name, group in sessions.items():  # warm-up: connections, imports, first-call paths
            warm = await bench.http_load(group, 5 * clients)
            if not warm.clean:
                results[name].merge(warm)
        for count in bench.split(calls, rounds):
            for name, group in sessions.items():
                results[name].merge(await bench.http_load(group, count))
    return results


async def stdio_pair(
    commands: dict[str, list[str]], in_flight: int, calls: int, rounds: int, errlog_path: Path
) -> dict[str, bench.LoadResult]:
    results = {name: bench.LoadResult() for name in commands}
    with open(errlog_path, "w") as errlog:
        async with (
            bench.StdioPeer(commands["direct stdio"], errlog) as direct,
            bench.StdioPeer(commands["nexus stdio"], errlog) as nexus,
        ):
            peers = {"direct stdio": direct, "nexus stdio": nexus}
            for name, peer in peers.items():
                warm = await peer.pipeline(2 * in_flight, in_flight)
                if not warm.clean:
                    results[name].merge(warm)
            for count in bench.split(calls, rounds):
                for name, peer in peers.items():
                    results[name].merge(await peer.pipeline(count, in_flight))
    return results


def run(args: argparse.Namespace, tmp: Path) -> bool:
    config = bench.write_gateway_config(tmp / "gateway.json", protocol=args.protocol)
    port, direct_port = bench.free_port(), bench.free_port()
    with (
        bench.explain_failure(tmp / "gw.log"),
        bench.nexus_http(config, port, tmp / "gw.log"),
        bench.direct_http(direct_port, tmp / "direct-http.log"),
    ):
        urls = {
            "direct http": f"http://127.0.0.1:{direct_port}/mcp",
            "nexus http": f"http://127.0.0.1:{port}/mcp",
        }
        http = asyncio.run(http_pair(urls, args.clients, args.calls, args.rounds))
    commands = {"direct stdio": bench.UPSTREAM, "nexus stdio": bench.nexus_stdio_command(config)}
    with bench.explain_failure(tmp / "stdio.log"):
        stdio = asyncio.run(
            stdio_pair(commands, args.in_flight, args.stdio_calls, args.rounds, tmp / "stdio.log")
        )

    print(
        f"throughput, {args.rounds} interleaved rounds, upstream protocol {args.protocol} "
        f"(python {sys.version.split()[0]}, {os.cpu_count()} cpus, load average "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())})"
    )
    print(f"HTTP: {args.clients} concurrent clients, {args.calls} calls per variant")
    for name, result in http.items():
        print(result.report(name))
    print(f"stdio: one client, {args.in_flight} requests in flight, {args.stdio_calls} calls per variant")
    for name, result in stdio.items():
        print(result.report(name))
    print("ratios:")
    print(
        f"  {'nexus http / direct http, calls/s':<40} {bench.verdict(http['nexus http'].rate / http['direct http'].rate, HTTP_TARGET, at_most=False)}"
    )
    print(
        f"  {'nexus stdio / direct stdio, calls/s':<40} {stdio['nexus stdio'].rate / stdio['direct stdio'].rate:5.2f}x"
    )
    clean = all(result.clean for result in [*http.values(), *stdio.values()])
    print(
        "checks: every id answered exactly once with its own payload"
        if clean
        else "checks FAILED: calls were lost, misrouted, duplicated or failed (see above)"
    )
    return clean


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", type=int, default=32, help="concurrent HTTP clients (default 32)")
    parser.add_argument("--calls", type=int, default=5000, help="HTTP calls per variant (default 5000)")
    parser.add_argument("--in-flight", type=int, default=64, help="pipelined stdio requests (default 64)")
    parser.add_argument(
        "--stdio-calls", type=int, default=5000, help="stdio calls per variant (default 5000)"
    )
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds (default 2)")
    parser.add_argument(
        "--protocol",
        choices=["auto", "legacy"],
        default="legacy",
        help="the gateway's upstream era; legacy (default) matches the direct baseline's era",
    )
    args = parser.parse_args()
    bench.adopt_orphans()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            clean = run(args, Path(tmp))
    finally:
        bench.safe_cleanup()
    sys.exit(0 if clean else 1)


if __name__ == "__main__":
    main()
