"""Load: 10,000 calls over HTTP and over stdio with 64 at a time, 0 lost, 0 misrouted, memory before/after.

    .venv/bin/python bench/load.py [--calls 10000] [--concurrency 64] [--only http|stdio] [--protocol auto]

  http    `--concurrency` clients (each its own connection and session) share `--calls`
          calls to `nexus serve` (HTTP frontend) -> tests/support/demo_server.py over stdio
  stdio   one client keeps `--concurrency` requests pipelined to `nexus serve --stdio`
Every call carries a unique text that the upstream's `echo` returns, so every answer is
checked to be its own call's: lost (never answered), misrouted (another call's payload or
an id nobody sent), duplicated (an id answered twice), failed (an error answer) are counted.
Prints p50/p99 per call, calls/s and the gateway process's RSS (psutil) after start and
after the load. Exit status 1 if any call was lost, misrouted, duplicated or failed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path

import _common as bench


async def http_load(url: str, calls: int, concurrency: int) -> bench.LoadResult:
    async with bench.http_clients(url, concurrency) as clients:
        return await bench.http_load(clients, calls)


async def stdio_load(
    config: Path, calls: int, concurrency: int, errlog_path: Path
) -> tuple[bench.LoadResult, float, float]:
    with open(errlog_path, "w") as errlog:
        async with bench.StdioPeer(bench.nexus_stdio_command(config), errlog) as peer:
            before = bench.rss_mb(peer.pid)
            result = await peer.pipeline(calls, concurrency)
            return result, before, bench.rss_mb(peer.pid)


def rss_line(before: float, after: float) -> str:
    return f"{'':<34} gateway RSS {before:7.1f} MB after start -> {after:7.1f} MB after the load ({after - before:+.1f} MB)"


def run(args: argparse.Namespace, tmp: Path) -> bool:
    config = bench.write_gateway_config(tmp / "gateway.json", protocol=args.protocol)
    print(
        f"load: {args.calls} calls, {args.concurrency} at a time, upstream protocol {args.protocol} "
        f"(python {sys.version.split()[0]}, {os.cpu_count()} cpus, load average "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())})",
        flush=True,
    )
    results = []
    if args.only in (None, "http"):
        port = bench.free_port()
        with bench.explain_failure(tmp / "gw.log"), bench.nexus_http(config, port, tmp / "gw.log") as gateway:
            before = bench.rss_mb(gateway.pid)
            result = asyncio.run(http_load(f"http://127.0.0.1:{port}/mcp", args.calls, args.concurrency))
            after = bench.rss_mb(gateway.pid)
            alive = gateway.poll() is None
        print(result.report(f"http, {args.concurrency} clients"))
        print(rss_line(before, after))
        if not alive:
            print(f"{'':<34} ! the gateway exited during the load")
        if not (result.clean and alive):
            bench.print_log_tail(tmp / "gw.log")
        results.append(result.clean and alive)
    if args.only in (None, "stdio"):
        with bench.explain_failure(tmp / "stdio.log"):
            result, before, after = asyncio.run(
                stdio_load(config, args.calls, args.concurrency, tmp / "stdio.log")
            )
        print(result.report(f"stdio, {args.concurrency} in flight"))
        print(rss_line(before, after))
        if not result.clean:
            bench.print_log_tail(tmp / "stdio.log")
        results.append(result.clean)
    clean = all(results)
    print("checks: 0 lost, 0 misrouted" if clean else "checks FAILED: see the counts above")
    return clean


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=10_000, help="calls per transport (default 10000)")
    parser.add_argument(
        "--concurrency", type=int, default=64, help="HTTP clients / stdio requests in flight (64)"
    )
    parser.add_argument("--only", choices=["http", "stdio"], help="run one transport only")
    parser.add_argument(
        "--protocol", choices=["auto", "legacy"], default="auto", help="upstream era (default auto)"
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
