"""Nexus vs other ways to relay MCP: fastmcp's proxy, a naive SDK relay, a bare pipe; same upstream, same client.

    .venv/bin/python bench/peers.py [--calls 900] [--epochs 5] [--rounds 3] [--runs 1]
                                    [--fastmcp-version 4.1.6] [--no-fastmcp]

Every variant is a stdio process in front of the same upstream, tests/support/demo_server.py
(an SDK 2.x server; its `echo` tool is the trivial call), reached by the same client, the
SDK's `Client`, in both eras, each era a group of its own with its own direct baseline:
`mode="legacy"` (the handshake era, as IDEs speak today) and `mode="auto"` (server/discover,
then 2026-07-28 with every server that offers it). `--calls` sequential calls per variant,
in interleaved rounds (A B C D E F A B C ...) so machine drift hits every variant alike.

A run is `--epochs` fresh process sets per era, as in bench/overhead.py: each epoch starts every
variant's processes anew (client, relay, upstream), runs `--rounds` interleaved rounds and stops
them; a row's median is over the calls of all epochs, and each epoch's ratio is printed beside
it. Why: one process set is one draw. Three single-set runs on one quiet VM (2026-11-27) read
the direct 2026-07-28 path at 1.72, 1.26 and 1.70 ms, and Nexus's ratio at 1.16, 1.46 and
1.35 with nothing changed between them: the run measured its draw of the direct process more
than any relay. `--runs 3` repeats the whole measurement and ends with every run's ratios.
The exact commands (U = the upstream, `.venv/bin/python -m support.demo_server bench`
with PYTHONPATH=tests):

  direct            U
  bare pipe relay   .venv/bin/python bench/pipe_relay.py U          (copies bytes: the floor)
  nexus (default)   .venv/bin/nexus serve --stdio --no-watch --config F     (F: U with bare names
                    beside the built-in servers, every setting at its default but `rate_limit`:
                    null, since the default "5/second" per tool stops back-to-back calls;
                    bench/_common.py, `write_gateway_config`)
  nexus (trimmed)   the same with `include_builtins: false` (U alone)
  naive SDK relay   .venv/bin/python bench/naive_relay.py U         (SDK low-level Server + Client)
  fastmcp proxy     bench/.venv-peers/bin/python bench/fastmcp_proxy.py U   (`create_proxy` defaults)

The direct and Nexus rows must speak the group's era (checked: the run fails otherwise). A
peer relay that answers the 2026-07-28 probe with the handshake era is measured all the same
and its row names the era it spoke: that row compares two eras, not two relays.

fastmcp is installed by this script into the throwaway venv bench/.venv-peers (gitignored;
bench/fastmcp_venv.py says how, including the `--no-deps` route when its pins are not on
the registry); it brings whatever MCP SDK it needs there and runs as its own process.
Every gateway writes to a temporary data folder (`NEXUS_DATA_DIR`), as a new user's.
Prints median/p95/p99 per call and each variant's ratio of medians to direct, per era.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
from contextlib import AsyncExitStack
from pathlib import Path

import _common as bench
from fastmcp_venv import DEFAULT_VERSION, ensure_fastmcp

DIRECT = "direct"
NEXUS = ("nexus (default config)", "nexus (trimmed: no built-ins)")
# The rows that must speak the group's era; the peer relays may fall back (their row says so).
SAME_ERA = {DIRECT, "bare pipe relay (floor)", *NEXUS}
ERA_NAMES = {"legacy": "handshake era", "auto": "2026-07-28"}
TARGET = 1.25  # issue 20: Nexus, default config, <= 1.25x direct in each era


def variants(tmp: Path, fastmcp_python: Path | None) -> dict[str, list[str]]:
    default = bench.write_gateway_config(tmp / "default.json", protocol="auto", builtins=True)
    trimmed = bench.write_gateway_config(tmp / "trimmed.json", protocol="auto", builtins=False)
    commands = {
        DIRECT: bench.UPSTREAM,
        "bare pipe relay (floor)": [*bench.PIPE_RELAY, *bench.UPSTREAM],
        NEXUS[0]: bench.nexus_stdio_command(default),
        NEXUS[1]: bench.nexus_stdio_command(trimmed),
        "naive SDK relay": [*bench.NAIVE_RELAY, *bench.UPSTREAM],
    }
    if fastmcp_python is not None:
        commands["fastmcp proxy"] = [
            str(fastmcp_python),
            str(bench.BENCH / "fastmcp_proxy.py"),
            *bench.UPSTREAM,
        ]
    return commands


async def measure(
    commands: dict[str, list[str]], mode: str, calls: int, rounds: int, errlog_path: Path
) -> tuple[dict[str, list[float]], dict[str, str]]:
    """The samples per variant, and the protocol version each one spoke."""
    with open(errlog_path, "a") as errlog:
        async with AsyncExitStack() as stack:
            clients = {}
            for name, cmd in commands.items():
                clients[name] = await bench.open_stdio_client(stack, cmd, errlog, mode)
                if name in SAME_ERA:
                    bench.expect_era(clients[name], name, mode)
            spoken = {name: client.protocol_version for name, client in clients.items()}
            return await bench.interleaved_rounds(clients, calls, rounds), spoken


def ratios(samples: dict[str, list[float]]) -> dict[str, float]:
    """Each relay's ratio of medians to the direct path."""
    direct = statistics.median(samples[DIRECT])
    return {name: statistics.median(series) / direct for name, series in samples.items() if name != DIRECT}


def measure_era(
    commands: dict[str, list[str]], mode: str, args: argparse.Namespace, errlog: Path
) -> tuple[dict[str, list[float]], dict[str, str], list[dict[str, float]]]:
    """One era of one run: `args.epochs` fresh process sets, their calls pooled by variant.
    Returns the pooled samples, the version each variant spoke, and each epoch's ratios."""
    samples: dict[str, list[float]] = {}
    spoken: dict[str, str] = {}
    epochs: list[dict[str, float]] = []
    for calls in bench.split(args.calls, args.epochs):
        with bench.explain_failure(errlog):
            found, spoken = asyncio.run(measure(commands, mode, calls, args.rounds, errlog))
        for name, series in found.items():
            samples.setdefault(name, []).extend(series)
        epochs.append(ratios(found))
    return samples, spoken, epochs


def measure_run(
    commands: dict[str, list[str]], args: argparse.Namespace, tmp: Path
) -> dict[str, dict[str, float]]:
    """One run, every era: prints its rows and returns each era's pooled ratios."""
    found: dict[str, dict[str, float]] = {}
    for mode in args.eras:
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
        samples, spoken, epochs = measure_era(commands, mode, args, tmp / "stderr.log")
        load += " -> " + " ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"--- {ERA_NAMES[mode]} client (SDK Client mode={mode!r}; load average {load})")
        direct = statistics.median(samples[DIRECT])
        for name, series in samples.items():
            fallback = f"  (spoke {spoken[name]})" if spoken[name] != bench.ERAS[mode] else ""
            sets = "" if name == DIRECT else "   sets: " + " ".join(f"{epoch[name]:.2f}" for epoch in epochs)
            print(
                bench.latency_row(name, series, None if name == DIRECT else direct, width=32)
                + fallback
                + sets
            )
        found[mode] = ratios(samples)
    return found


def run(args: argparse.Namespace, tmp: Path) -> None:
    fastmcp_python = ensure_fastmcp(args.fastmcp_version) if args.fastmcp else None
    commands = variants(tmp, fastmcp_python)
    print(
        f"{args.calls} sequential tools/call per variant and era, over {args.epochs} fresh process sets of "
        f"{args.rounds} interleaved rounds each, {args.runs} run(s); SDK 2.x echo upstream over stdio "
        f"(python {sys.version.split()[0]}, {os.cpu_count()} cpus)",
        flush=True,
    )
    every_run = []
    for number in range(1, args.runs + 1):
        if args.runs > 1:
            print(f"=== run {number} of {args.runs}", flush=True)
        every_run.append(measure_run(commands, args, tmp))
    if args.runs > 1:
        print(f"--- ratios of every run (runs 1..{args.runs}; target <= {TARGET:.2f} for Nexus)")
        for mode in args.eras:
            for name in every_run[0][mode]:
                shown = f"{ERA_NAMES[mode]}: {name}"
                print(f"  {shown:<50} " + " / ".join(f"{found[mode][name]:.2f}" for found in every_run))
    if fastmcp_python is not None:
        print(f"fastmcp {args.fastmcp_version} from {fastmcp_python.parent.parent}")
    print("commands (U = upstream; configs are temporary files):")
    upstream = " ".join(bench.UPSTREAM)
    for name, command in commands.items():
        shown = " ".join(command).replace(upstream, "U") if name != DIRECT else upstream
        print(f"  {name:<32} {shown}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=900, help="sequential calls per variant (default 900)")
    parser.add_argument(
        "--epochs",
        type=int,
        default=5,
        help="fresh process sets per era and run, their calls pooled (default 5)",
    )
    parser.add_argument(
        "--rounds", type=int, default=3, help="interleaved rounds per process set (default 3)"
    )
    parser.add_argument(
        "--runs", type=int, default=1, help="repeat the whole measurement (e.g. 3 for the record)"
    )
    parser.add_argument("--fastmcp-version", default=DEFAULT_VERSION, help=f"default {DEFAULT_VERSION}")
    parser.add_argument(
        "--no-fastmcp", dest="fastmcp", action="store_false", help="leave fastmcp's proxy out"
    )
    parser.add_argument(
        "--eras",
        nargs="+",
        choices=["legacy", "auto"],
        default=["legacy", "auto"],
        help="the client eras to measure, by SDK Client mode (default: both)",
    )
    args = parser.parse_args()
    bench.adopt_orphans()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            os.environ[bench.DATA_DIR_ENV] = str(Path(tmp) / "data")  # a new user's data folder
            run(args, Path(tmp))
    finally:
        bench.safe_cleanup()


if __name__ == "__main__":
    main()
