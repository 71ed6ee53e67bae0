"""Attack: an upstream writes notifications without end; what does the gateway spend?

    .venv/bin/python bench/attack_notification_flood.py [--seconds 5] [--method M ...] [--transport T ...] [--unbounded]

A fresh `nexus serve` with two servers: `flood` writes `--method` notifications as fast as its
pipe or socket takes them, `quiet` (stdio) does nothing. `--transport stdio` (the default):
tests/robustness/notification_flood_server.py; `http`: notification_flood_http_server.py on its
streamable-HTTP GET stream; `sse`: the same server's HTTP+SSE stream. Once the flood runs, for
`--seconds`: the gateway's CPU time (psutil), a call to `quiet.ping` every 0.1 s, and one call
to `flood.ping` (over stdio and SSE its answer waits behind its own flood; SSE's call times out
after 3 s). `--unbounded` raises the flooding server's notification budget out of the way: the
figures from before the budget.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "tests") not in sys.path:
    sys.path.insert(0, str(ROOT / "tests"))

from robustness.notification_flood import notification_flood  # noqa: E402

METHODS = ["notifications/tools/list_changed", "notifications/message", "notifications/progress"]


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--method", action="append", help=f"default: {', '.join(METHODS)}")
    parser.add_argument(
        "--transport", action="append", choices=["stdio", "http", "sse"], help="default: stdio"
    )
    parser.add_argument("--unbounded", action="store_true", help="no notification budget (before)")
    args = parser.parse_args()
    limits = {"notifications_per_second": 1e9, "notification_burst": 10**9} if args.unbounded else {}
    for transport in args.transport or ["stdio"]:
        for method in args.method or METHODS:
            with tempfile.TemporaryDirectory() as folder:
                report = notification_flood(Path(folder), method, args.seconds, transport, **limits)
            print(f"{transport}: {report.summary()}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
