"""Where the CPU of one stdio tools/call goes, process by process: direct, bare pipe relay, Nexus.

    .venv/bin/python bench/cpu_split.py [--calls 3000] [--runs 2] [--in-flight 1] [--era legacy]
                                        [--builtins] [--compare SRC]

A lean JSON-RPC client (handshake era) sends sequential `echo` calls to each variant (or
`--in-flight N` at once, pipelined, so no process ever waits idle between calls) and
reads, with psutil, the CPU time (user + system) that each process of the variant's tree
spent per call: the upstream (tests/support/demo_server.py, an SDK 2.x server), the relay
and the gateway. The variants alternate run by run, so drift hits them alike.

What it shows on a 2-core machine: a call's latency is close to the sum of the CPU the
processes spend on it one after another; the upstream is most of it, and it spends more on
its 2026-07-28 request path (`protocol: auto`) than on the handshake era's. The gateway's own
CPU per call is the same pipelined as sequential: it is work done per call, not waiting cold.
`--compare SRC` adds the Nexus variants once more, run from another checkout's `src` folder
(`PYTHONPATH=SRC`), alternating with the current code: before/after of a change, in one run.
`--era modern` makes the client speak 2026-07-28 (server/discover, the envelope on every
request) to every variant, direct included. `--builtins` adds the Nexus variants with the
default config (the built-in servers on, never called), alternating with the trimmed ones:
what servers nobody calls cost per call.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import psutil

import _common as bench


def measure(
    command: list[str], calls: int, in_flight: int = 1, era: str = "legacy"
) -> tuple[float, dict[str, float]]:
    """Median latency (µs) and CPU per call (µs) of each process in the variant's tree, by role."""
    client = bench.LeanStdioClient(command, env=bench.child_env(), era=era)
    try:
        for n in range(300):
            client.call(bench.call_message(n + 2, "x"))
        top = psutil.Process(client.proc.pid)
        tree = [top, *top.children(recursive=True)]
        before = {p.pid: p.cpu_times() for p in tree}
        latencies = []
        if in_flight > 1:  # throughput: the latency of one call means nothing here
            client.pipelined(1000, calls, in_flight)
        for n in range(calls if in_flight == 1 else 0):
            started = time.perf_counter()
            if "result" not in client.call(bench.call_message(n + 1000, "x")):
                raise AssertionError(f"call {n} failed through {command}")
            latencies.append(time.perf_counter() - started)
        cpu: dict[str, float] = {}
        for p in tree:
            after, first = p.cpu_times(), before[p.pid]
            spent = (after.user + after.system - first.user - first.system) / calls * 1e6
            if spent >= 1:  # the orphan watchdog and other sleepers spend nothing per call
                cpu[_role(p, top)] = spent
        return (statistics.median(latencies) * 1e6 if latencies else 0.0), cpu
    finally:
        client.close()


def _role(process: psutil.Process, top: psutil.Process) -> str:
    line = " ".join(process.cmdline())
    if "pipe_relay" in line:  # before the upstream: the relay's own command line names it
        return "relay"
    if "demo_server" in line:
        return "upstream"
    return "gateway" if process.pid == top.pid else process.name()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument(
        "--in-flight",
        type=int,
        default=1,
        help="calls in flight at once (1: sequential; more: pipelined, so no process waits cold)",
    )
    parser.add_argument(
        "--compare",
        metavar="SRC",
        help="also run the Nexus variants from this src folder (PYTHONPATH), alternating with the current code",
    )
    bench.add_variant_options(parser)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ[bench.DATA_DIR_ENV] = str(Path(tmp) / "data")  # a new user's data folder
        configs = {
            "": {
                protocol: bench.write_gateway_config(Path(tmp) / f"{protocol}.json", protocol=protocol)
                for protocol in ("legacy", "auto")
            }
        }
        if args.builtins:
            configs[", built-ins"] = {
                protocol: bench.write_gateway_config(
                    Path(tmp) / f"default-{protocol}.json", protocol=protocol, builtins=True
                )
                for protocol in ("legacy", "auto")
            }
        variants = {
            "direct": bench.UPSTREAM,
            "bare pipe relay": [*bench.PIPE_RELAY, *bench.UPSTREAM],
        }
        for protocol in ("legacy", "auto"):
            for label, config in configs.items():
                variants[f"nexus{label}, upstream {protocol}"] = bench.nexus_stdio_command(config[protocol])
        if args.compare:
            other = ["env", f"PYTHONPATH={Path(args.compare).resolve()}"]
            for protocol in ("legacy", "auto"):
                for label, config in configs.items():
                    variants[f"nexus (compared){label}, {protocol}"] = [
                        *other,
                        *bench.nexus_stdio_command(config[protocol]),
                    ]
        seen: dict[str, list[tuple[float, dict[str, float]]]] = {name: [] for name in variants}
        for _ in range(args.runs):
            for name, command in variants.items():
                seen[name].append(measure(command, args.calls, args.in_flight, args.era))
    how = "sequential" if args.in_flight == 1 else f"pipelined ({args.in_flight} in flight)"
    era = "2026-07-28" if args.era == "modern" else "handshake-era"
    print(f"{args.calls} {how} calls per variant and run ({era} client), {args.runs} runs; medians over runs")
    for name, runs in seen.items():
        latency = statistics.median(run[0] for run in runs)
        roles = sorted({role for _, cpu in runs for role in cpu})
        parts = ", ".join(
            f"{role} {statistics.median(cpu.get(role, 0.0) for _, cpu in runs):.0f}" for role in roles
        )
        shown = f"latency {latency:6.0f} us" if latency else "pipelined"
        print(f"{name:38} {shown:17}   CPU per call (us): {parts}")


if __name__ == "__main__":
    main()
