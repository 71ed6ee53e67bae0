"""A steady-state profile of `nexus serve --stdio` under sequential tools/call, warm-up excluded.

    .venv/bin/python bench/profile_gateway.py [--calls 5000] [--protocol legacy] [--era legacy] [--builtins] [--top 30]
        [--sort cumulative] [--save gateway.prof]

Starts the gateway under this script (`--serve`), which installs cProfile behind two signals:
the driver sends 1000 warm-up calls of the bench upstream's `echo`, then SIGUSR1 (profiling on),
`--calls` more, then SIGUSR2 (off, stats written). Prints the function calls per tools/call
and the functions with the most own time. cProfile inflates small functions; read the counts
and the order, not the absolute times. `--builtins` runs the default config (the built-in
servers on, never called here) instead of the trimmed one: the counts of the two, side by
side, say whether servers nobody calls cost anything per call. Besides the profile, the
gateway records the cyclic garbage collector's collections per generation over the timed calls.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path


class GcWatch:
    """The cyclic collector over the timed calls: collections per generation, time spent, heap size."""

    def __init__(self) -> None:
        self.first: list[dict[str, int]] = []
        self.paused = 0.0
        self._since = 0.0
        self.on = False

    def start(self) -> None:
        self.first = gc.get_stats()
        self.on = True
        gc.callbacks.append(self._timed)

    def _timed(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._since = time.perf_counter()
        elif self.on:
            self.paused += time.perf_counter() - self._since

    def stop(self) -> dict[str, object]:
        self.on = False
        gc.callbacks.remove(self._timed)
        last = gc.get_stats()
        return {
            "collections": [
                b["collections"] - a["collections"] for a, b in zip(self.first, last, strict=True)
            ],
            "collected": [b["collected"] - a["collected"] for a, b in zip(self.first, last, strict=True)],
            "seconds": self.paused,
            "tracked": len(gc.get_objects()),
            "frozen": gc.get_freeze_count(),
        }


def serve_profiled(stats_path: str, argv: list[str]) -> None:
    """The gateway side: `nexus serve ...` with cProfile and the GC watch switched by SIGUSR1/SIGUSR2."""
    import _common as bench

    profile = cProfile.Profile()
    watch = GcWatch()

    def start() -> None:
        watch.start()
        profile.enable()

    def stop() -> None:
        profile.disable()
        Path(stats_path + ".gc.json").write_text(json.dumps(watch.stop()))
        profile.dump_stats(stats_path)  # last: the driver waits for this file

    bench.serve_switched(start, stop, argv)


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--serve":
        serve_profiled(sys.argv[2], sys.argv[3:])
        return
    import _common as bench

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--protocol", choices=["legacy", "auto"], default="legacy")
    bench.add_variant_options(parser)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument(
        "--sort", default="tottime", help="pstats order of the listing (tottime, cumulative, ncalls)"
    )
    parser.add_argument("--save", type=Path, help="also keep the profile here (for pstats or snakeviz)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ[bench.DATA_DIR_ENV] = str(Path(tmp) / "data")  # a new user's data folder
        stats_path = Path(tmp) / "gateway.prof"
        bench.switched_calls(
            __file__, stats_path, args.protocol, 1000, args.calls, builtins=args.builtins, era=args.era
        )
        stats = pstats.Stats(str(stats_path))
        collector = json.loads(Path(str(stats_path) + ".gc.json").read_text())
        config = (
            "default config (built-ins on)" if args.builtins else "trimmed config (include_builtins: false)"
        )
        print(
            f"{config}, {args.era}-era client, upstream protocol {args.protocol}, "
            f"{args.calls} calls after 1000 warm-up calls"
        )
        print(f"{stats.total_calls / args.calls:.0f} Python function calls per tools/call")  # type: ignore[attr-defined]
        per_1000 = " / ".join(f"{n * 1000 / args.calls:.2f}" for n in collector["collections"])
        print(
            f"cyclic GC per 1000 calls: collections by generation 0/1/2 {per_1000}; "
            f"{collector['seconds'] * 1e6 / args.calls:.1f} us per call in collections (under cProfile); "
            f"{collector['tracked']} objects tracked, {collector['frozen']} frozen"
        )
        if args.save is not None:
            stats.dump_stats(str(args.save))
        stats.sort_stats(args.sort).print_stats(args.top)


if __name__ == "__main__":
    main()
