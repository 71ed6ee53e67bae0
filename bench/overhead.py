"""Gateway overhead: sequential tools/call to a trivial tool, direct vs through Nexus, side by side in one run.

    .venv/bin/python bench/overhead.py [--calls 1000] [--rounds 10] [--no-in-process]

Every variant uses the same client (the SDK's `Client`, handshake era, as IDEs speak) and
the same upstream program (tests/support/demo_server.py, tool `echo`); the variants of
one group run in interleaved rounds (A B C D A B C D ...) so machine drift hits them alike:

  stdio group (baseline: direct)
    direct                 client -> stdio upstream
    bare pipe relay        client -> bench/pipe_relay.py (copies bytes, parses nothing) -> upstream:
                           the floor of any out-of-process relay; the gap above it is Nexus's own
    nexus stdio, legacy    client -> `nexus serve --stdio` -> upstream, `protocol: legacy`
    nexus stdio, auto      the same with `protocol: auto` (the default: 2026-07-28 upstream)
  HTTP group (baseline: direct http)
    direct http            client -> the same server program serving streamable HTTP itself
    nexus http             client -> `nexus serve` (HTTP frontend) -> upstream over stdio (legacy)
  in one process (optional, uses Nexus internals: skipped with a note if they moved)
    raw JSON-RPC request on the upstream pipe vs `Gateway.call_tool` (every pipeline step)

Prints median/p95/p99 per call, ratios of medians, and the targets of the hot path:
stdio frontend -> stdio upstream <= 1.25x direct; HTTP frontend <= 1.25x a direct HTTP server.
Ratios are what to compare between runs; absolute times drift with the machine's load.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path

import _common as bench

STDIO_TARGET = 1.25
HTTP_TARGET = 1.25


async def stdio_group(
    legacy: Path, auto: Path, calls: int, rounds: int, errlog_path: Path
) -> dict[str, list[float]]:
    commands = {
        "direct (client -> stdio upstream)": bench.UPSTREAM,
        "bare pipe relay (floor)": [*bench.PIPE_RELAY, *bench.UPSTREAM],
        "nexus stdio, upstream legacy": bench.nexus_stdio_command(legacy),
        "nexus stdio, upstream auto": bench.nexus_stdio_command(auto),
    }
    with open(errlog_path, "w") as errlog:
        async with AsyncExitStack() as stack:
            clients = {
                name: await bench.open_stdio_client(stack, cmd, errlog) for name, cmd in commands.items()
            }
            return await bench.interleaved_rounds(clients, calls, rounds)


async def http_group(urls: dict[str, str], calls: int, rounds: int) -> dict[str, list[float]]:
    async with AsyncExitStack() as stack:
        clients = {name: await bench.open_http_client(stack, url) for name, url in urls.items()}
        return await bench.interleaved_rounds(clients, calls, rounds)


async def in_process(config: Path, calls: int) -> tuple[list[float], list[float]]:
    """The gateway's own share: `Gateway.call_tool` (every pipeline step) vs a raw request on the same pipe.

    Reaches into Nexus internals (the gateway object and its upstream's process); the
    caller treats their absence as "not measured" so the rest of the benchmark still runs.
    """
    from mcp_nexus.config.load import load_config
    from mcp_nexus.gateway import Gateway

    loaded, _ = load_config(config)
    async with Gateway(loaded) as gateway:
        process = gateway.upstreams[bench.INSTANCE]._process
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


def run(args: argparse.Namespace, tmp: Path) -> None:
    # The client always speaks the handshake era (as IDEs do). The upstream, an SDK 2.x
    # server, speaks whatever Nexus negotiates: 2026-07-28 by default ("auto"), or the
    # handshake era with "protocol": "legacy" - the like-for-like pair with `direct`.
    auto = bench.write_gateway_config(tmp / "auto.json", protocol="auto")
    legacy = bench.write_gateway_config(tmp / "legacy.json", protocol="legacy")
    stdio = asyncio.run(stdio_group(legacy, auto, args.calls, args.rounds, tmp / "stdio-stderr.log"))

    port, direct_port = bench.free_port(), bench.free_port()
    with (
        bench.nexus_http(legacy, port, tmp / "gw.log"),
        bench.direct_http(direct_port, tmp / "direct-http.log"),
    ):
        urls = {
            "direct http (client -> http server)": f"http://127.0.0.1:{direct_port}/mcp",
            "nexus http, upstream legacy": f"http://127.0.0.1:{port}/mcp",
        }
        http = asyncio.run(http_group(urls, args.calls, args.rounds))

    raw_full: tuple[list[float], list[float]] | None = None
    skipped = "--no-in-process"
    if args.in_process:
        try:
            raw_full = asyncio.run(in_process(legacy, args.calls))
        except (ImportError, AttributeError, KeyError, TypeError) as exc:
            skipped = f"Nexus internals moved ({type(exc).__name__}: {exc}); port in_process() to the new API"

    print(
        f"{args.calls} sequential tools/call of a trivial tool per variant, {args.rounds} interleaved rounds "
        f"(python {sys.version.split()[0]}, {os.cpu_count()} cpus, load average "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())})"
    )
    direct = statistics.median(stdio["direct (client -> stdio upstream)"])
    for name, samples in stdio.items():
        print(bench.latency_row(name, samples, None if name.startswith("direct") else direct))
    direct_http = statistics.median(http["direct http (client -> http server)"])
    for name, samples in http.items():
        print(bench.latency_row(name, samples, None if name.startswith("direct") else direct_http))

    relay = statistics.median(stdio["bare pipe relay (floor)"])
    print("targets (median ratios):")
    for name in ("nexus stdio, upstream auto", "nexus stdio, upstream legacy"):
        median = statistics.median(stdio[name])
        print(f"  {name + ' / direct':<50} {bench.verdict(median / direct, STDIO_TARGET)}")
    nexus_http = statistics.median(http["nexus http, upstream legacy"])
    print(
        f"  {'nexus http / direct http (sequential)':<50} {bench.verdict(nexus_http / direct_http, HTTP_TARGET)}"
    )
    print("the floor and Nexus's own share above it:")
    print(
        f"  {'bare pipe relay / direct':<50} {relay / direct:5.2f}x  (+{(relay - direct) * 1000:.3f} ms per call)"
    )
    for name in ("nexus stdio, upstream auto", "nexus stdio, upstream legacy"):
        median = statistics.median(stdio[name])
        print(
            f"  {name + ' / bare pipe relay':<50} {median / relay:5.2f}x  "
            f"(+{(median - relay) * 1000:.3f} ms per call is Nexus's own)"
        )

    if raw_full is None:
        print(f"in one process: not measured ({skipped})")
    else:
        raw, full = raw_full
        print("in one process, same upstream pipe (the gateway's own cost, no extra process hop):")
        print(bench.latency_row("raw JSON-RPC request on the pipe", raw, None))
        print(bench.latency_row("Gateway.call_tool (full pipeline)", full, statistics.median(raw)))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=1000, help="sequential calls per variant (default 1000)")
    parser.add_argument("--rounds", type=int, default=10, help="interleaved rounds the calls are split into")
    parser.add_argument(
        "--no-in-process", dest="in_process", action="store_false", help="skip the in-process measurement"
    )
    args = parser.parse_args()
    bench.adopt_orphans()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            run(args, Path(tmp))
    finally:
        bench.safe_cleanup()


if __name__ == "__main__":
    main()
