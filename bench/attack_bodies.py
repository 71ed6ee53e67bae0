"""Attack: many large request bodies at once against a fresh `nexus serve` (issue item 4).

    .venv/bin/python bench/attack_bodies.py [--count 400] [--size-mb 4] [--scenario NAME ...]

Each scenario starts its own gateway on loopback (the echo upstream, no built-ins), opens
`--count` connections at once, each declaring a `--size-mb` body; a connection sends its
head, waits a second for an early answer, then sends the whole body. Printed per scenario:
HTTP status counts, how many were answered before the body was sent, body bytes sent, and
the gateway's RSS (VmRSS) before, at its peak and two seconds after every connection closed.

Scenarios:
    healthz        GET /healthz with a body, no token configured (the issue's run)
    healthz-token  the same with a token configured (/healthz stays open)
    api-no-token   POST /api/reload without the token, a token configured
    mcp-open       POST /mcp, no token configured: bodies a route does take (the in-flight budget)
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

from robustness.hostile_http import MB, body_flood, serve  # noqa: E402

TOKEN = "attack-bench-token-0123456789"
SCENARIOS: dict[str, tuple[str, str, bool]] = {
    "healthz": ("GET", "/healthz", False),
    "healthz-token": ("GET", "/healthz", True),
    "api-no-token": ("POST", "/api/reload", True),
    "mcp-open": ("POST", "/mcp", False),
}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--count", type=int, default=400)
    parser.add_argument("--size-mb", type=float, default=4.0)
    parser.add_argument("--scenario", action="append", choices=sorted(SCENARIOS))
    args = parser.parse_args()
    size = int(args.size_mb * MB)
    for name in args.scenario or list(SCENARIOS):
        method, path, with_token = SCENARIOS[name]
        settings = {"token": TOKEN} if with_token else {}
        with tempfile.TemporaryDirectory() as folder, serve(Path(folder), **settings) as gateway:
            flood = asyncio.run(body_flood(gateway, count=args.count, size=size, method=method, path=path))
            alive = "alive" if gateway.alive else "DEAD"
        print(
            f"{name:14} {method} {path} x{args.count} ({args.size_mb:g} MB each): {flood.summary()}, {alive}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
