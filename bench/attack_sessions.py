"""Attack: fill the HTTP session slots with initializes that never come back (issue item 5).

    .venv/bin/python bench/attack_sessions.py [--count 10100] [--concurrency 64] [--wait 0]

Starts a fresh `nexus serve` on loopback with its default session settings (the echo
upstream, no built-ins), sends `--count` handshake-era initializes from one address (each
opens a session and never sends a second request), then a new, well-behaved client
(initialize, initialized, tools/list) tries to get a session: at once, and again after
`--wait` seconds if given. Printed: the flood's status counts and duration, the open
sessions the gateway reports, the new client's result, and the gateway's RSS (VmRSS)
before and after.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "tests") not in sys.path:
    sys.path.insert(0, str(ROOT / "tests"))

from robustness.hostile_http import MB, initialize_flood, open_session, open_sessions, serve, vm_rss  # noqa: E402


def new_client(url: str) -> str:
    try:
        open_session(url)
    except AssertionError as exc:
        return f"refused ({str(exc)[:80]})"
    return "got a session"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--count", type=int, default=10_100)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--wait", type=float, default=0.0, help="seconds before the new client tries again")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder, serve(Path(folder)) as gateway:
        before = vm_rss(gateway.pid)
        flood = asyncio.run(initialize_flood(gateway.mcp_url, args.count, concurrency=args.concurrency))
        after = vm_rss(gateway.pid)
        print(
            f"flood: {args.count} initializes in {flood.seconds:.1f} s, statuses {dict(sorted(flood.statuses.items()))}; "
            f"open sessions {open_sessions(gateway.base)}; RSS {before / MB:.0f} -> {after / MB:.0f} MB"
        )
        print(f"new client right after the flood: {new_client(gateway.mcp_url)}")
        if args.wait:
            time.sleep(args.wait)
            print(
                f"new client {args.wait:g} s later: {new_client(gateway.mcp_url)}; "
                f"open sessions {open_sessions(gateway.base)}; RSS {vm_rss(gateway.pid) / MB:.0f} MB"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
