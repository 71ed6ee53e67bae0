"""Gateway overhead: sequential tools/call to a trivial tool, direct vs through Nexus, side by side in one run.

    .venv/bin/python bench/overhead.py [--calls 1000] [--epochs 5] [--rounds 2] [--runs 3] [--no-in-process]

What is measured is what users run: Nexus with its default config, the built-in servers (the
embedded Cortex and device servers) on beside the bench upstream and every setting at its
default but `rate_limit` (null: the default "5/second" per tool would turn most back-to-back
calls into rate-limit alerts; bench/_common.py, `write_gateway_config`). The trimmed gateway
(`include_builtins: false`) runs beside it as a secondary row. Every gateway writes to a
temporary data folder (`NEXUS_DATA_DIR`), as a new user's would be.

Both client eras, each against a direct baseline of the same era: the handshake era (the
SDK's `Client(mode="legacy")`, 2025-11-25, as IDEs speak today) and 2026-07-28 (the SDK's
`Client(mode="auto")`: server/discover, the envelope on every request; checked, so a fallback
to the handshake fails the run). The upstream program is the same everywhere
(tests/support/demo_server.py, an SDK 2.x server, tool `echo`); the variants of one group run
in interleaved rounds (A B C D A B C D ...) so machine drift hits them alike.

A run is `--epochs` process sets: each epoch starts every variant's processes afresh (clients,
upstreams, relays, gateways, HTTP servers), runs `--rounds` interleaved rounds, and stops them;
a row's median is over the calls of all its epochs. Why: one set of processes is one draw of
effects that stay with a process for its life (where its memory landed, which core it shares,
its hash seed). Eight fresh sets of the same direct client and upstream read medians from
1.73 to 2.38 ms, and the bare relay from 0.89x to 1.25x direct (2026-11-27,
docs/PERFORMANCE.md); a run of one set measured that draw more than the gateway. Every epoch's
ratio is printed too, so the spread stays in sight.

  stdio, handshake-era client (baseline: direct)
    direct                     client -> stdio upstream
    bare pipe relay            client -> bench/pipe_relay.py (copies bytes, parses nothing) -> upstream:
                               the floor of any out-of-process relay; the gap above it is Nexus's own
    nexus, default config      client -> `nexus serve --stdio` -> upstream; built-ins on, `protocol: auto`
                               (the default: over stdio, the handshake era to an upstream that speaks it)
    nexus, default, 2026 up    the same with `protocol: latest` (Nexus speaks 2026-07-28 to the upstream,
                               the default before 2026-11-27: what the choice of era is worth)
    nexus, trimmed             `include_builtins: false`, `protocol: auto`
  stdio, 2026-07-28 client (baseline: direct, 2026-07-28)
    direct, relay, nexus default config, nexus trimmed: as above
  HTTP, handshake-era client, then 2026-07-28 client (baseline: direct http of that era)
    direct http                client -> the same server program serving streamable HTTP itself
    nexus http, default config client -> `nexus serve` (HTTP frontend) -> upstream over stdio
    nexus http, trimmed        the same, trimmed
    ..., lean client           direct and default config again from a lean JSON-RPC client
                               (handshake era; bench/_common.py) instead of the SDK's, whose own
                               per-call cost on HTTP blurs the servers' difference
  in one process (optional, uses Nexus internals: skipped with a note if they moved)
    raw JSON-RPC request on the upstream pipe vs `Gateway.call_tool` (every pipeline step),
    default config with `protocol: legacy`

Prints median/p95/p99 per call, ratios of medians, and the targets of the hot path: every
Nexus row of the default and the trimmed config <= 1.25x its direct baseline (stdio frontend ->
stdio upstream; HTTP frontend vs a direct HTTP server, sequential). The `upstream 2026 (latest)`
rows are a comparison, not a target: no user runs that config unless they set it. `--runs 3` repeats the whole measurement and ends with every
run's ratios. Ratios are what to compare between runs; absolute times drift with the machine's load.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path

import _common as bench

TARGET = 1.25

# The two eras, by the SDK Client's mode; each group's rows carry the era's tag.
HANDSHAKE, MODERN = "legacy", "auto"
TAG = {HANDSHAKE: "handshake", MODERN: "2026-07-28"}

DIRECT = "direct"
RELAY = "bare pipe relay (floor)"
DEFAULT = "nexus, default config"
DEFAULT_LATEST_UP = "nexus, default config, upstream 2026 (latest)"
TRIMMED = "nexus, trimmed (no built-ins)"
LEAN = ", lean client"


def name(transport: str, mode: str, variant: str) -> str:
    """A row's name, e.g. `stdio 2026-07-28: nexus, default config`."""
    return f"{transport} {TAG[mode]}: {variant}"


def baseline(row: str) -> str:
    """Each row's baseline: the like-for-like direct path (same transport, same era, same client)."""
    transport_era, variant = row.split(": ", 1)
    return f"{transport_era}: {DIRECT}{LEAN if variant.endswith(LEAN) else ''}"


def is_nexus(row: str) -> bool:
    return ": nexus" in row


def is_target(row: str) -> bool:
    """A row the 1.25x target is for: what users run (the default config, and the trimmed one)."""
    return is_nexus(row) and DEFAULT_LATEST_UP not in row


class Configs:
    """The gateway configs of one run (bench/_common.py, `write_gateway_config`)."""

    def __init__(self, tmp: Path) -> None:
        self.default = bench.write_gateway_config(tmp / "default.json", protocol="auto", builtins=True)
        self.default_latest = bench.write_gateway_config(
            tmp / "default-latest.json", protocol="latest", builtins=True
        )
        self.trimmed = bench.write_gateway_config(tmp / "trimmed.json", protocol="auto", builtins=False)


async def stdio_group(
    configs: Configs, mode: str, calls: int, rounds: int, errlog: Path
) -> dict[str, list[float]]:
    commands = {
        name("stdio", mode, DIRECT): bench.UPSTREAM,
        name("stdio", mode, RELAY): [*bench.PIPE_RELAY, *bench.UPSTREAM],
        name("stdio", mode, DEFAULT): bench.nexus_stdio_command(configs.default),
        name("stdio", mode, TRIMMED): bench.nexus_stdio_command(configs.trimmed),
        name("stdio", mode, DEFAULT_LATEST_UP): bench.nexus_stdio_command(configs.default_latest),
    }
    return await bench.stdio_rounds(commands, calls, rounds, errlog, mode)


async def http_group(urls: dict[str, str], mode: str, calls: int, rounds: int) -> dict[str, list[float]]:
    async with AsyncExitStack() as stack:
        clients = {
            name("http", mode, variant): await bench.open_http_client(stack, url, mode)
            for variant, url in urls.items()
        }
        return await bench.interleaved_rounds(clients, calls, rounds)


async def lean_http_group(urls: dict[str, str], calls: int, rounds: int) -> dict[str, list[float]]:
    """The same sequential calls from a lean JSON-RPC client (bench/_common.py), checked like the load tests.

    The SDK client spends more per call than either server on HTTP; without it the ratio
    shows the servers' own difference more sharply.
    """
    async with AsyncExitStack() as stack:
        clients = {
            variant: await stack.enter_async_context(bench.http_clients(url, 1))
            for variant, url in urls.items()
        }
        results = {variant: bench.LoadResult() for variant in urls}
        for group in clients.values():
            await bench.http_load(group, 20)  # warm-up
        for count in bench.split(calls, rounds):
            for variant, group in clients.items():
                results[variant].merge(await bench.http_load(group, count))
    for variant, result in results.items():
        if not result.clean:
            raise AssertionError(result.report(variant))
    return {name("http", HANDSHAKE, variant + LEAN): result.latencies for variant, result in results.items()}


async def in_process(config: Path, calls: int) -> tuple[list[float], list[float]]:
    """The gateway's own share: `Gateway.call_tool` (every pipeline step) vs a raw request on the same pipe.

    Runs the gateway through the runtime (no frontend) and sends the raw request on the
    upstream session's own JSON-RPC peer; the caller treats a failure as "not measured".
    """
    from mcp_nexus.config.load import load_config
    from mcp_nexus.runtime import Runtime, RuntimeOptions

    loaded, _ = load_config(config)
    options = RuntimeOptions(http=False, bridge=False, watch=False, wait_ready=True)
    # The runtime's INFO lines (servers starting and stopping) would land among the results.
    logging.getLogger("mcp_nexus").setLevel(logging.WARNING)
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
            for label, fn in (("raw", raw), ("full", full)):
                started = time.perf_counter()
                await fn()
                samples[label].append(time.perf_counter() - started)
        return samples["raw"], samples["full"]


def measure_once(
    args: argparse.Namespace, tmp: Path
) -> tuple[dict[str, list[float]], list[dict[str, float]]]:
    """One run: `args.epochs` fresh process sets of every variant, their calls pooled by row.
    Returns the pooled samples and each epoch's ratios."""
    configs = Configs(tmp)
    samples: dict[str, list[float]] = {}
    epochs: list[dict[str, float]] = []
    for calls in bench.split(args.calls, args.epochs):
        found = measure_epoch(configs, calls, args.rounds, tmp)
        for row, series in found.items():
            samples.setdefault(row, []).extend(series)
        epochs.append(ratios(found))
    return samples, epochs


def measure_epoch(configs: Configs, calls: int, rounds: int, tmp: Path) -> dict[str, list[float]]:
    """Every variant on processes of its own, started here and stopped before returning: the stdio
    groups of both eras, then the HTTP groups, each interleaved."""
    stdio_log = tmp / "stdio-stderr.log"
    samples: dict[str, list[float]] = {}
    with bench.explain_failure(stdio_log):
        for mode in (HANDSHAKE, MODERN):
            samples.update(asyncio.run(stdio_group(configs, mode, calls, rounds, stdio_log)))
    port, trimmed_port, direct_port = bench.free_port(), bench.free_port(), bench.free_port()
    with (
        bench.explain_failure(tmp / "gw.log"),
        bench.nexus_http(configs.default, port, tmp / "gw.log"),
        bench.nexus_http(configs.trimmed, trimmed_port, tmp / "gw-trimmed.log"),
        bench.direct_http(direct_port, tmp / "direct-http.log"),
    ):
        urls = {
            DIRECT: f"http://127.0.0.1:{direct_port}/mcp",
            DEFAULT: f"http://127.0.0.1:{port}/mcp",
            TRIMMED: f"http://127.0.0.1:{trimmed_port}/mcp",
        }
        for mode in (HANDSHAKE, MODERN):
            samples.update(asyncio.run(http_group(urls, mode, calls, rounds)))
        lean = {variant: urls[variant] for variant in (DIRECT, DEFAULT)}
        samples.update(asyncio.run(lean_http_group(lean, calls, rounds)))
    return samples


def ratios(samples: dict[str, list[float]]) -> dict[str, float]:
    """Every Nexus row's and the floor's ratio of medians to its baseline."""
    median = {row: statistics.median(series) for row, series in samples.items()}
    return {row: median[row] / median[baseline(row)] for row in samples if is_nexus(row) or RELAY in row}


def print_run(samples: dict[str, list[float]], epochs: list[dict[str, float]]) -> None:
    median = {row: statistics.median(series) for row, series in samples.items()}
    for row, series in samples.items():
        base = baseline(row)
        print(bench.latency_row(row, series, median[base] if base != row else None, width=58))
    found = ratios(samples)
    print(
        "targets (ratio of medians to the direct path of the same transport, era and client; "
        f"then each of the {len(epochs)} process sets' own):"
    )
    for row, ratio in found.items():
        if is_target(row):
            print(f"  {row:<58} {bench.verdict(ratio, TARGET)}   {spread(row, epochs)}")
    print("comparisons (not a target: a config users run only if they set it):")
    for row, ratio in found.items():
        if is_nexus(row) and not is_target(row):
            print(f"  {row:<58} {ratio:5.2f}x   {spread(row, epochs)}")
    print("the floor, and Nexus's own share above it (stdio):")
    for row, ratio in found.items():
        if RELAY in row:
            print(f"  {row:<58} {ratio:5.2f}x   {spread(row, epochs)}")
    for row in samples:
        if row.startswith("stdio") and is_nexus(row):
            relay = row.split(": ", 1)[0] + ": " + RELAY
            own = (median[row] - median[relay]) * 1000
            print(f"  {row + ' - relay':<58} {own:+.3f} ms per call")


def spread(row: str, epochs: list[dict[str, float]]) -> str:
    return "sets: " + " ".join(f"{found[row]:.2f}" for found in epochs)


def print_in_process(args: argparse.Namespace, tmp: Path) -> None:
    if not args.in_process:
        print("in one process: not measured (--no-in-process)")
        return
    config = bench.write_gateway_config(tmp / "in-process.json", protocol="legacy", builtins=True)
    try:
        raw, full = asyncio.run(in_process(config, args.calls))
    except (ImportError, AttributeError, KeyError, TypeError) as exc:
        print(
            f"in one process: not measured: Nexus internals moved ({type(exc).__name__}: {exc}); port in_process()"
        )
        return
    print(
        "in one process, same upstream pipe (the gateway's own cost, no extra process hop; default config):"
    )
    print(bench.latency_row("raw JSON-RPC request on the pipe", raw, None))
    print(bench.latency_row("Gateway.call_tool (full pipeline)", full, statistics.median(raw)))


def run(args: argparse.Namespace, tmp: Path) -> None:
    print(
        f"{args.calls} sequential tools/call of a trivial tool per variant and run, over {args.epochs} fresh "
        f"process sets of {args.rounds} interleaved rounds each, {args.runs} run(s) "
        f"(python {sys.version.split()[0]}, {os.cpu_count()} cpus)",
        flush=True,
    )
    every_run = []
    for number in range(1, args.runs + 1):
        before = os.getloadavg()
        samples, epochs = measure_once(args, tmp)
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"--- run {number} of {args.runs} (load average {load}; at its start {before[0]:.2f})")
        print_run(samples, epochs)
        every_run.append(ratios(samples))
    if args.runs > 1:
        print(
            f"--- ratios of every run (runs 1..{args.runs}; target <= {TARGET:.2f} for the default and "
            "trimmed rows)"
        )
        for row in every_run[0]:
            mark = "" if is_target(row) or not is_nexus(row) else "   (comparison)"
            print(f"  {row:<58} " + " / ".join(f"{found[row]:.2f}" for found in every_run) + mark)
    print_in_process(args, tmp)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=1000, help="sequential calls per variant (default 1000)")
    parser.add_argument(
        "--epochs", type=int, default=5, help="fresh process sets per run, their calls pooled (default 5)"
    )
    parser.add_argument(
        "--rounds", type=int, default=2, help="interleaved rounds per process set (default 2)"
    )
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
            # Every gateway (and the in-process one) writes to a fresh data folder, as a new user's.
            os.environ[bench.DATA_DIR_ENV] = str(Path(tmp) / "data")
            run(args, Path(tmp))
    finally:
        bench.safe_cleanup()


if __name__ == "__main__":
    main()
