"""Attack: an upstream floods `notifications/tools/list_changed` (issue item 3).

    .venv/bin/python bench/attack_list_changed.py [--seconds 10]

A fresh `nexus serve` with one hostile stdio server (tests/robustness/hostile_stdio_server.py)
that sends list_changed as fast as the pipe takes it for `--seconds`, its tool list changing at
every tools/list. Meanwhile a handshake-era client holds its /mcp stream open and counts the
tools/list_changed it hears, and another calls the hostile server's `ping` every 0.2 s.
Printed: the gateway's RSS (before, peak, after), its CPU time and log growth, how many
list_changed the server sent and how many tools/list refreshes it was asked, the downstream
notifications, the slowest call, and the "Task exception was never retrieved" count.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "tests") not in sys.path:
    sys.path.insert(0, str(ROOT / "tests"))

from robustness.hostile_stdio import list_changed_attack  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        report = asyncio.run(list_changed_attack(Path(folder), seconds=args.seconds))
    print(f"list_changed flood for {args.seconds:g} s: {report.summary()}")
    print(f"server h: state {report.server.get('state')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
