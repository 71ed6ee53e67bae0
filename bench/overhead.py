"""Gateway overhead: sequential tools/call to a trivial tool, direct vs through Nexus, side by side in one run.

    .venv/bin/python bench/overhead.py [--calls 1000] [--rounds 10] [--runs 3] [--no-in-process]

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
    ..., lean client       both again from a lean JSON-RPC client (bench/_common.py) instead of the
                           SDK's, whose own per-call cost on HTTP blurs the servers' difference
  in one process (optional, uses Nexus internals: skipped with a note if they moved)
    raw JSON-RPC request on the upstream pipe vs `Gateway.call_tool` (every pipeline step)

Prints median/p95/p99 per call, ratios of medians, and the targets of the hot path:
stdio frontend -> stdio upstream <= 1.25x direct; HTTP frontend <= 1.25x a direct HTTP server
(sequential). `--runs 3` repeats the whole measurement and ends with every run's ratios.
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


DIRECT = "direct (client -> stdio upstream)"
RELAY = "bare pipe relay (floor)"
NEXUS_STDIO = ("nexus stdio, upstream auto", "nexus stdio, upstream legacy")
DIRECT_HTTP = "direct http (client -> http server)"
NEXUS_HTTP = "nexus http, upstream legacy"
LEAN = ", lean client"
# Each row's baseline: the like-for-like direct path.
BASELINE = {
    RELAY: DIRECT,
    **dict.fromkeys(NEXUS_STDIO, DIRECT),
    NEXUS_HTTP: DIRECT_HTTP,
    NEXUS_HTTP + LEAN: DIRECT_HTTP + LEAN,
}


async def stdio_group(
    legacy: Path, auto: Path, calls: int, rounds: int, errlog_path: Path
) -> dict[str, list[float]]:
    commands = {
        DIRECT: bench.UPSTREAM,
        RELAY: [*bench.PIPE_RELAY, *bench.UPSTREAM],
        NEXUS_STDIO[1]: bench.nexus_stdio_command(legacy),
        NEXUS_STDIO[0]: bench.nexus_stdio_command(auto),
    }
    return await bench.stdio_rounds(commands, calls, rounds, errlog_path)


async def http_group(urls: dict[str, str], calls: int, rounds: int) -> dict[str, list[float]]:
    async with AsyncExitStack() as stack:
        clients = {name: await bench.open_http_client(stack, url) for name, url in urls.items()}
        return await bench.interleaved_rounds(clients, calls, rounds)


async def lean_http_group(urls: dict[str, str], calls: int, rounds: int) -> dict[str, list[float]]:
    """The same sequential calls from a lean JSON-RPC client (bench/_common.py), checked like the load tests.

    The SDK client spends more per call than either server on HTTP; without it the ratio
    shows the servers' own difference more sharply.
    """
    async with AsyncExitStack() as stack:
        clients = {
            name: await stack.enter_async_context(bench.http_clients(url, 1)) for name, url in urls.items()
        }
        results = {name: bench.LoadResult() for name in urls}
        for group in clients.values():
            await bench.http_load(group, 20)  # warm-up
        for count in bench.split(calls, rounds):
            for name, group in clients.items():
                results[name].merge(await bench.http_load(group, count))
    for name, result in results.items():
        if not result.clean:
            raise AssertionError(result.report(name))
    return {name + LEAN: result.latencies for name, result in results.items()}


async def in_process(config: Path, calls: int) -> tuple[list[float], list[float]]:
    """The gateway's own share: `Gateway.call_tool` (every pipeline step) vs a raw request on the same pipe.

    Runs the gateway through the runtime (no frontend) and sends the raw request on the
    upstream session's own JSON-RPC peer; the caller treats a failure as "not measured".
    """
    from mcp_nexus.config.load import load_config
    from mcp_nexus.runtime import Runtime, RuntimeOptions

    loaded, _ = load_config(config)
    options = RuntimeOptions(http=False, bridge=False, watch=False, wait_ready=True)
    async with Runtime(loaded, options) as runtime:
        gateway = runtime.gateway
        peer = gateway.upstreams[bench.INSTANCE].session().peer  # type: ignore[attr-defined]
        assert peer is not None

        async def raw() -> object:
            return await peer.send_raw_request(
                "tools/call", {"name": "echo", "arguments": {"text": "x"}}, {"timeout": 30}
            )

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


def measure_once(args: argparse.Namespace, tmp: Path) -> dict[str, list[float]]:
    """One run of every variant: the stdio group, then the HTTP groups, each interleaved."""
    # The client always speaks the handshake era (as IDEs do). The upstream, an SDK 2.x
    # server, speaks whatever Nexus negotiates: 2026-07-28 by default ("auto"), or the
    # handshake era with "protocol": "legacy" - the like-for-like pair with `direct`.
    auto = bench.write_gateway_config(tmp / "auto.json", protocol="auto")
    legacy = bench.write_gateway_config(tmp / "legacy.json", protocol="legacy")
    stdio_log = tmp / "stdio-stderr.log"
    with bench.explain_failure(stdio_log):
        samples = asyncio.run(stdio_group(legacy, auto, args.calls, args.rounds, stdio_log))
    port, direct_port = bench.free_port(), bench.free_port()
    with (
        bench.explain_failure(tmp / "gw.log"),
        bench.nexus_http(legacy, port, tmp / "gw.log"),
        bench.direct_http(direct_port, tmp / "direct-http.log"),
    ):
        urls = {
            DIRECT_HTTP: f"http://127.0.0.1:{direct_port}/mcp",
            NEXUS_HTTP: f"http://127.0.0.1:{port}/mcp",
        }
        samples.update(asyncio.run(http_group(urls, args.calls, args.rounds)))
        samples.update(asyncio.run(lean_http_group(urls, args.calls, args.rounds)))
    return samples


def ratios(samples: dict[str, list[float]]) -> dict[str, float]:
    """The ratios of medians the hot path is judged by, and the floor."""
    median = {name: statistics.median(series) for name, series in samples.items()}
    found = {f"{name} / direct": median[name] / median[DIRECT] for name in NEXUS_STDIO}
    found["nexus http / direct http (sequential)"] = median[NEXUS_HTTP] / median[DIRECT_HTTP]
    found["  the same, lean client"] = median[NEXUS_HTTP + LEAN] / median[DIRECT_HTTP + LEAN]
    found["bare pipe relay / direct"] = median[RELAY] / median[DIRECT]
    found |= {f"{name} / bare pipe relay": median[name] / median[RELAY] for name in NEXUS_STDIO}
    return found


def print_run(samples: dict[str, list[float]]) -> None:
    median = {name: statistics.median(series) for name, series in samples.items()}
    for name, series in samples.items():
        print(bench.latency_row(name, series, median[BASELINE[name]] if name in BASELINE else None, width=50))
    found = ratios(samples)
    print("targets (median ratios):")
    for name in NEXUS_STDIO:
        print(f"  {name + ' / direct':<50} {bench.verdict(found[name + ' / direct'], STDIO_TARGET)}")
    for name in ("nexus http / direct http (sequential)", "  the same, lean client"):
        print(f"  {name:<50} {bench.verdict(found[name], HTTP_TARGET)}")
    print("the floor, and Nexus's own share above it:")
    for name in ("bare pipe relay / direct", *(n + " / bare pipe relay" for n in NEXUS_STDIO)):
        print(f"  {name:<50} {found[name]:5.2f}x  ({own_ms(median, name):+.3f} ms per call)")


def own_ms(median: dict[str, float], ratio_name: str) -> float:
    """What the upper side of a `X / Y` ratio costs above Y, per call, in ms."""
    upper, lower = ratio_name.split(" / ")
    names = {"bare pipe relay": RELAY, "direct": DIRECT}
    return (median[names.get(upper, upper)] - median[names.get(lower, lower)]) * 1000


def print_in_process(args: argparse.Namespace, tmp: Path) -> None:
    if not args.in_process:
        print("in one process: not measured (--no-in-process)")
        return
    legacy = bench.write_gateway_config(tmp / "in-process.json", protocol="legacy")
    try:
        raw, full = asyncio.run(in_process(legacy, args.calls))
    except (ImportError, AttributeError, KeyError, TypeError) as exc:
        print(
            f"in one process: not measured: Nexus internals moved ({type(exc).__name__}: {exc}); port in_process()"
        )
        return
    print("in one process, same upstream pipe (the gateway's own cost, no extra process hop):")
    print(bench.latency_row("raw JSON-RPC request on the pipe", raw, None))
    print(bench.latency_row("Gateway.call_tool (full pipeline)", full, statistics.median(raw)))


def run(args: argparse.Namespace, tmp: Path) -> None:
    print(
        f"{args.calls} sequential tools/call of a trivial tool per variant, {args.rounds} interleaved rounds, "
        f"{args.runs} run(s) (python {sys.version.split()[0]}, {os.cpu_count()} cpus)",
        flush=True,
    )
    every_run = []
    for number in range(1, args.runs + 1):
        samples = measure_once(args, tmp)
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"--- run {number} of {args.runs} (load average {load})")
        print_run(samples)
        every_run.append(ratios(samples))
    if args.runs > 1:
        print(f"--- ratios of every run (runs 1..{args.runs})")
        for name in every_run[0]:
            print(f"  {name:<50} " + " / ".join(f"{found[name]:.2f}" for found in every_run))
    print_in_process(args, tmp)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=1000, help="sequential calls per variant (default 1000)")
    parser.add_argument("--rounds", type=int, default=10, help="interleaved rounds the calls are split into")
    parser.add_argument(
        "--runs", type=int, default=1, help="repeat the whole measurement (e.g. 3 for the record)"
    )
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
