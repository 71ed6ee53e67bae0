"""Nexus vs other ways to relay MCP: fastmcp's proxy, a naive SDK relay, a bare pipe; same upstream, same client.

    .venv/bin/python bench/peers.py [--calls 900] [--rounds 9] [--fastmcp-version 4.1.6] [--no-fastmcp]

Every variant is a stdio process in front of the same upstream, tests/support/demo_server.py
(an SDK 2.x server; its `echo` tool is the trivial call), reached by the same client (the
SDK's `Client`, handshake era, as IDEs speak), `--calls` sequential calls each, in
interleaved rounds (A B C D E F A B C ...) so machine drift hits every variant alike.
The exact commands (U = the upstream, `.venv/bin/python -m support.demo_server bench`
with PYTHONPATH=tests):

  direct            U
  bare pipe relay   .venv/bin/python bench/pipe_relay.py U          (copies bytes: the floor)
  nexus             .venv/bin/nexus serve --stdio --no-watch --config F     (F: U with bare names,
                    no rate limit, `protocol: auto`, the default)
  nexus legacy      the same with `protocol: legacy` (handshake era upstream, like the client)
  naive SDK relay   .venv/bin/python bench/naive_relay.py U         (SDK low-level Server + Client)
  fastmcp proxy     bench/.venv-peers/bin/python bench/fastmcp_proxy.py U   (`create_proxy` defaults)

fastmcp is installed by this script into the throwaway venv bench/.venv-peers (gitignored;
bench/fastmcp_venv.py says how, including the `--no-deps` route when its pins are not on
the registry); it brings whatever MCP SDK it needs there and runs as its own process.
Prints median/p95/p99 per call and each variant's ratio of medians to direct.
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


def variants(tmp: Path, fastmcp_python: Path | None) -> dict[str, list[str]]:
    auto = bench.write_gateway_config(tmp / "auto.json", protocol="auto")
    legacy = bench.write_gateway_config(tmp / "legacy.json", protocol="legacy")
    commands = {
        "direct": bench.UPSTREAM,
        "bare pipe relay (floor)": [*bench.PIPE_RELAY, *bench.UPSTREAM],
        "nexus (protocol auto, default)": bench.nexus_stdio_command(auto),
        "nexus (protocol legacy)": bench.nexus_stdio_command(legacy),
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
    commands: dict[str, list[str]], calls: int, rounds: int, errlog_path: Path
) -> dict[str, list[float]]:
    with open(errlog_path, "w") as errlog:
        async with AsyncExitStack() as stack:
            clients = {
                name: await bench.open_stdio_client(stack, cmd, errlog) for name, cmd in commands.items()
            }
            return await bench.interleaved_rounds(clients, calls, rounds)


def run(args: argparse.Namespace, tmp: Path) -> None:
    fastmcp_python = ensure_fastmcp(args.fastmcp_version) if args.fastmcp else None
    commands = variants(tmp, fastmcp_python)
    with bench.explain_failure(tmp / "stderr.log"):
        samples = asyncio.run(measure(commands, args.calls, args.rounds, tmp / "stderr.log"))
    print(
        f"{args.calls} sequential tools/call per variant, {args.rounds} interleaved rounds, "
        f"handshake-era client, SDK 2.x echo upstream over stdio "
        f"(python {sys.version.split()[0]}, {os.cpu_count()} cpus, load average "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())})"
    )
    direct = statistics.median(samples["direct"])
    for name, series in samples.items():
        print(bench.latency_row(name, series, None if name == "direct" else direct, width=32))
    if fastmcp_python is not None:
        print(f"fastmcp {args.fastmcp_version} from {fastmcp_python.parent.parent}")
    print("commands (U = upstream; configs are temporary files):")
    upstream = " ".join(bench.UPSTREAM)
    for name, command in commands.items():
        shown = " ".join(command).replace(upstream, "U") if name != "direct" else upstream
        print(f"  {name:<32} {shown}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=900, help="sequential calls per variant (default 900)")
    parser.add_argument("--rounds", type=int, default=9, help="interleaved rounds the calls are split into")
    parser.add_argument("--fastmcp-version", default=DEFAULT_VERSION, help=f"default {DEFAULT_VERSION}")
    parser.add_argument(
        "--no-fastmcp", dest="fastmcp", action="store_false", help="leave fastmcp's proxy out"
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
