"""Cost of metrics: the same gateway with `gateway.metrics` on (the default) and off, side by side.

    .venv/bin/python bench/metrics_cost.py [--calls 2000] [--rounds 10] [--runs 3]

Three views, each interleaved so machine drift hits both variants alike:
  stdio      client -> `nexus serve --stdio` (metrics on | off) -> the demo upstream (legacy),
             the path of bench/overhead.py's "nexus stdio, upstream legacy" row, plus direct
  http       the same through the HTTP frontend, lean JSON-RPC client (bench/_common.py)
  in-process one gateway's pipeline with and without its metrics step, same upstream process,
             alternating call by call; and the bare cost of `MetricsStep.record` (no I/O at all)
Prints median/p95/p99 per variant and the difference of medians, on minus off, per call.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path

import _common as bench

ON, OFF = "metrics on", "metrics off"


def write_config(path: Path, *, metrics: bool) -> Path:
    bench.write_gateway_config(path, protocol="legacy")
    doc = json.loads(path.read_text())
    doc["gateway"]["metrics"] = metrics
    path.write_text(json.dumps(doc))
    return path


async def stdio_group(tmp: Path, calls: int, rounds: int) -> dict[str, list[float]]:
    commands = {
        "direct": bench.UPSTREAM,
        ON: bench.nexus_stdio_command(write_config(tmp / "on.json", metrics=True)),
        OFF: bench.nexus_stdio_command(write_config(tmp / "off.json", metrics=False)),
    }
    return await bench.stdio_rounds(commands, calls, rounds, tmp / "stdio.log")


async def http_group(urls: dict[str, str], calls: int, rounds: int) -> dict[str, list[float]]:
    """One call to each gateway in turn (who goes first alternates), so load hits both alike."""
    async with AsyncExitStack() as stack:
        clients = {
            name: (await stack.enter_async_context(bench.http_clients(url, 1)))[0]
            for name, url in urls.items()
        }
        results = {name: bench.LoadResult(calls=calls) for name in urls}
        warm = bench.LoadResult()
        for client in clients.values():
            for i in range(20):
                await client.call(i + 1, f"warm-{i}", warm)
        order = list(clients.items())
        for number in range(calls):
            for name, client in order if number % 2 else order[::-1]:
                await client.call(number + 100, f"call-{number}", results[name])
    for name, result in results.items():
        if not result.clean:
            raise AssertionError(result.report(name))
    return {name: result.latencies for name, result in results.items()}


async def in_process(tmp: Path, calls: int) -> dict[str, list[float]]:
    """One gateway, one upstream: its own pipeline (metrics first) against the same steps without
    the metrics step, alternating call by call. Nothing else differs, not even the upstream process."""
    from mcp_nexus.config.load import load_config
    from mcp_nexus.pipeline.call import Caller, ToolCall
    from mcp_nexus.pipeline.chain import Pipeline
    from mcp_nexus.pipeline.steps.metrics import MetricsStep
    from mcp_nexus.runtime import Runtime, RuntimeOptions

    options = RuntimeOptions(http=False, bridge=False, watch=False, wait_ready=True)
    config, _ = load_config(write_config(tmp / "in-process.json", metrics=True))
    async with Runtime(config, options) as runtime:
        with_metrics = runtime.gateway.pipeline
        steps = [step for step in with_metrics.steps if not isinstance(step, MetricsStep)]
        assert len(steps) == len(with_metrics.steps) - 1
        pipelines = {ON: with_metrics, OFF: Pipeline(steps, with_metrics.terminal)}
        caller = Caller("bench", "bench")
        samples: dict[str, list[float]] = {ON: [], OFF: []}
        for pipeline in pipelines.values():
            for _ in range(50):
                await pipeline(ToolCall("echo", {"text": "x"}, caller))
        order = list(pipelines.items())
        for number in range(calls):
            for name, pipeline in order if number % 2 else order[::-1]:  # who goes first alternates
                call = ToolCall("echo", {"text": "x"}, caller)
                started = time.perf_counter()
                await pipeline(call)
                samples[name].append(time.perf_counter() - started)
        return samples


def record_cost(count: int = 200_000) -> float:
    """Seconds per `MetricsStep.record` of a plain successful call (no I/O; the step's whole own work)."""
    import mcp_types as types

    from mcp_nexus.pipeline.call import Caller, ToolCall
    from mcp_nexus.pipeline.steps.metrics import MetricsStep

    step = MetricsStep()
    result = types.CallToolResult(content=[types.TextContent(type="text", text="x")])
    call = ToolCall("echo", {}, Caller("stdio", "bench"), server="bench", servers_tried=["bench"])
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        for _ in range(count):
            step.record(call, 0.001, result, None)
        best = min(best, (time.perf_counter() - started) / count)
    return best


def report(title: str, samples: dict[str, list[float]], *, paired: bool = False) -> None:
    print(title)
    baseline = statistics.median(samples[OFF])
    for name, series in samples.items():
        print("  " + bench.latency_row(name, series, baseline, width=16))
    diff = (statistics.median(samples[ON]) - baseline) * 1e6
    print(
        f"  on - off: {diff:+.1f} µs per call (median), ratio {statistics.median(samples[ON]) / baseline:.3f}"
    )
    if paired:
        # The calls alternate on/off one by one: the median of the pairwise differences is robust
        # to load from other processes, which hits both calls of a pair alike.
        pairs = [a - b for a, b in zip(samples[ON], samples[OFF], strict=True)]
        print(
            f"  median of paired differences (on - off, call by call): {statistics.median(pairs) * 1e6:+.1f} µs"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument(
        "--views", default="stdio,http,in-process", help="which views to measure (comma-separated)"
    )
    args = parser.parse_args()
    views = set(args.views.split(","))
    bench.adopt_orphans()
    print(f"{args.calls} sequential calls per variant, {args.rounds} rounds, python {sys.version.split()[0]}")
    print(f"MetricsStep.record alone: {record_cost() * 1e6:.2f} µs per call")
    try:
        with tempfile.TemporaryDirectory() as name:
            tmp = Path(name)
            for number in range(1, args.runs + 1):
                print(f"--- run {number} of {args.runs}")
                if "stdio" in views:
                    report("stdio (SDK client):", asyncio.run(stdio_group(tmp, args.calls, args.rounds)))
                ports = {ON: bench.free_port(), OFF: bench.free_port()}
                with contextlib.ExitStack() as http_stack:
                    if "http" not in views:
                        ports = {}
                    for name, port in ports.items():
                        http_stack.enter_context(
                            bench.nexus_http(
                                write_config(tmp / f"h-{port}.json", metrics=name == ON),
                                port,
                                tmp / f"{port}.log",
                            )
                        )
                    if ports:
                        urls = {name: f"http://127.0.0.1:{port}/mcp" for name, port in ports.items()}
                        report(
                            "http (lean client):",
                            asyncio.run(http_group(urls, args.calls, args.rounds)),
                            paired=True,
                        )
                if "in-process" in views:
                    report(
                        "in one process (the same pipeline with | without the step):",
                        asyncio.run(in_process(tmp, args.calls)),
                        paired=True,
                    )
    finally:
        bench.safe_cleanup()


if __name__ == "__main__":
    main()
