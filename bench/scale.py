"""Scale-out: 1, 2 and 3 `nexus serve` replicas behind HAProxy, and what Redis-backed stores cost per call.

    .venv/bin/python bench/scale.py [--replicas 1,2,3] [--clients 48] [--calls 3000] [--delay-ms 20]
                                    [--store-calls 2000]

Throughput: each replica runs its own upstream (tests/support/shared_backend.py over stdio,
whose `echo` answers after `--delay-ms`, so the upstream has a fixed cost per call and the
gateways set the pace); the replicas share one redis-server (`stores.default`) and sit behind
HAProxy (round robin, sessions sticky on Mcp-Session-Id, docs/SCALING.md). `--clients` lean
HTTP clients (one session and connection each, one call at a time) share `--calls` calls;
every answer is checked to carry its own request's payload. Prints calls/s, p50/p99 and the
scaling factor against one replica.

Store cost: one gateway in this process, a trivial embedded tool, `--store-calls` sequential
calls per case, stores in memory vs in Redis: a cache hit, a cache miss (lookup, claim, store,
release) and a rate-limited call (moving-window test + hit). Prints microseconds per call.

Everything (client, balancer, replicas, upstreams, Redis) shares this machine's CPUs: on a
2-core machine more replicas than cores cannot scale, so read the factor with the core count
printed at the top. Exit status 1 if any call was lost, misrouted or failed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import _common as bench
from support.haproxy import haproxy
from support.processes import free_port, running, wait_for_http
from support.redis_server import redis_server

UPSTREAM = "support.shared_backend"


def replica_document(redis_url: str, delay_ms: int) -> dict[str, Any]:
    return {
        "gateway": {"include_builtins": False, "rate_limit": None},
        "stores": {"default": redis_url, "key_prefix": "bench"},
        "servers": {
            bench.INSTANCE: {
                "command": sys.executable,
                "args": ["-m", UPSTREAM, "stdio", "--delay-ms", str(delay_ms), "--instance", bench.INSTANCE],
                "namespace": "",
                "env": {"PYTHONPATH": str(bench.ROOT / "tests")},
            }
        },
    }


@contextmanager
def replicas_behind_balancer(folder: Path, count: int, redis_url: str, delay_ms: int) -> Iterator[str]:
    """`count` replicas and HAProxy in front; yields the balancer's MCP URL."""
    config = folder / "replica.json"
    config.write_text(json.dumps(replica_document(redis_url, delay_ms)))
    with ExitStack() as stack:
        ports = []
        for i in range(count):
            port = free_port()
            proc = stack.enter_context(
                running(bench.nexus_http_command(config, port), log=folder / f"replica{count}-{i}.log")
            )
            ports.append((port, proc))
        for port, proc in ports:
            wait_for_http(f"http://127.0.0.1:{port}/mcp", timeout=60, proc=proc)
        base = stack.enter_context(haproxy(folder, [port for port, _ in ports]))
        yield f"{base}/mcp"


async def throughput(url: str, clients: int, calls: int) -> bench.LoadResult:
    async with bench.http_clients(url, clients) as group:
        await bench.http_load(group, 2 * clients)  # warm-up: connections, imports, first-call paths
        # Every replica must serve its upstream's echo before measuring (they start in parallel).
        for client in group:
            await bench.wait_until_listed(client.tool_names, url)
        return await bench.http_load(group, calls)


# --- what the Redis-backed stores cost per call ---------------------------------------------


def store_document(redis_url: str | None, prefix: str) -> dict[str, Any]:
    document: dict[str, Any] = {
        "gateway": {"include_builtins": False, "rate_limit": None},
        "servers": {
            "demo": {
                "transport": "embedded",
                "module": "support.demo_server:create_server",
                "options": {"instance": "store"},
                "tool_config": {
                    "add": {"cache_ttl": 300},
                    "echo": {"rate_limit": "1000000/second"},
                },
            }
        },
    }
    if redis_url:
        document["stores"] = {"default": redis_url, "key_prefix": prefix}
    return document


async def per_call_us(redis_url: str | None, calls: int) -> dict[str, float]:
    from support.gateway import running_gateway

    logging.disable(logging.INFO)  # the in-process gateway's start and stop lines
    async with running_gateway(store_document(redis_url, f"cost{time.monotonic_ns()}")) as gateway:

        async def timed(tool: str, arguments: Any) -> float:
            for i in range(50):  # warm-up
                await gateway.call_tool(tool, arguments(-1 - i))
            started = time.perf_counter()
            for i in range(calls):
                result = await gateway.call_tool(tool, arguments(i))
                if getattr(result, "is_error", False):
                    raise AssertionError(f"{tool} failed: {result}")
            return (time.perf_counter() - started) / calls * 1e6

        return {
            "cache hit": await timed("demo.add", lambda i: {"a": 1, "b": 2}),
            "cache miss + store": await timed("demo.add", lambda i: {"a": i, "b": time.monotonic_ns()}),
            "rate-limited call": await timed("demo.echo", lambda i: {"text": "x"}),
        }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--replicas", default="1,2,3")
    parser.add_argument("--clients", type=int, default=48)
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--delay-ms", type=int, default=20)
    parser.add_argument("--store-calls", type=int, default=2000)
    args = parser.parse_args()
    counts = [int(n) for n in args.replicas.split(",")]
    print(f"machine: {os.cpu_count()} cores (client, balancer, replicas, upstreams and Redis share them)")
    print(f"upstream: {args.delay_ms} ms per call; {args.clients} clients, {args.calls} calls per run\n")
    failures = 0
    with tempfile.TemporaryDirectory(prefix="nexus-scale-") as tmp:
        folder = Path(tmp)
        with redis_server(folder / "redis") as redis:
            rates: dict[int, float] = {}
            for count in counts:
                with replicas_behind_balancer(folder, count, redis.url, args.delay_ms) as url:
                    result = asyncio.run(throughput(url, args.clients, args.calls))
                rates[count] = result.rate
                failures += 0 if result.clean else 1
                label = f"{count} replica{'s' if count > 1 else ''} behind haproxy"
                print(result.report(label))
            base = rates.get(counts[0]) or 1.0
            print(
                "\nscaling factor vs 1 replica: " + ", ".join(f"{n}: {rates[n] / base:.2f}x" for n in counts)
            )
            print(f"\nper call, one gateway in process, {args.store_calls} sequential calls each:")
            memory = asyncio.run(per_call_us(None, args.store_calls))
            shared = asyncio.run(per_call_us(redis.url, args.store_calls))
            for case in memory:
                print(
                    f"  {case:<20} memory {memory[case]:8.0f} us   redis {shared[case]:8.0f} us"
                    f"   (+{shared[case] - memory[case]:.0f} us)"
                )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
