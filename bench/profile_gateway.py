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
import pstats
import sys
import tempfile
from pathlib import Path


def serve_profiled(stats_path: str, argv: list[str]) -> None:
    """The gateway side: `nexus serve ...` with cProfile switched by SIGUSR1/SIGUSR2."""
    import _common as bench

    profile = cProfile.Profile()

    def stop() -> None:
        profile.disable()
        profile.dump_stats(stats_path)

    bench.serve_switched(profile.enable, stop, argv)


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
        stats_path = Path(tmp) / "gateway.prof"
        bench.switched_calls(__file__, stats_path, args.protocol, 1000, args.calls)
        stats = pstats.Stats(str(stats_path))
        print(f"{stats.total_calls / args.calls:.0f} Python function calls per tools/call")  # type: ignore[attr-defined]
        stats.sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
