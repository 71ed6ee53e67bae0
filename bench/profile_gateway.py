"""A steady-state profile of `nexus serve --stdio` under sequential tools/call, warm-up excluded.

    .venv/bin/python bench/profile_gateway.py [--calls 5000] [--protocol legacy] [--top 30]

Starts the gateway under this script (`--serve`), which installs cProfile behind two signals:
the driver sends 1000 warm-up calls of the bench upstream's `echo`, then SIGUSR1 (profiling on),
`--calls` more, then SIGUSR2 (off, stats written). Prints the function calls per tools/call
and the functions with the most own time. cProfile inflates small functions; read the counts
and the order, not the absolute times.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import signal
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def serve_profiled(stats_path: str, argv: list[str]) -> None:
    """The gateway side: `nexus serve ...` with cProfile switched by SIGUSR1/SIGUSR2."""
    profile = cProfile.Profile()

    def start(*_: Any) -> None:
        profile.enable()

    def stop(*_: Any) -> None:
        profile.disable()
        profile.dump_stats(stats_path)

    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, stop)
    from mcp_nexus.cli import app

    sys.argv = ["nexus", *argv]
    app()


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--serve":
        serve_profiled(sys.argv[2], sys.argv[3:])
        return
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--protocol", choices=["legacy", "auto"], default="legacy")
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()

    import _common as bench

    with tempfile.TemporaryDirectory() as tmp:
        config = bench.write_gateway_config(Path(tmp) / "config.json", protocol=args.protocol)
        stats_path = str(Path(tmp) / "gateway.prof")
        command = [sys.executable, __file__, "--serve", stats_path, "serve", "--stdio", "--no-watch"]
        client = bench.LeanStdioClient([*command, "--config", str(config)], env=bench.child_env())
        try:
            for n in range(1000):
                client.call(bench.call_message(n + 2, "x"))
            os.kill(client.proc.pid, signal.SIGUSR1)
            time.sleep(0.2)
            for n in range(args.calls):
                client.call(bench.call_message(n + 10_000, "x"))
            os.kill(client.proc.pid, signal.SIGUSR2)
            for _ in range(100):  # the gateway writes the stats in its signal handler
                if Path(stats_path).exists():
                    break
                time.sleep(0.05)
        finally:
            client.close()
        stats = pstats.Stats(stats_path)
        print(f"{stats.total_calls / args.calls:.0f} Python function calls per tools/call")  # type: ignore[attr-defined]
        stats.sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
