"""Attack: an upstream writes 100 MB to its stderr, then dies (issue item 6).

    .venv/bin/python bench/attack_stderr.py [--mb 100] [--line-bytes 1024]

A fresh `nexus serve` with one hostile stdio server (tests/robustness/hostile_stdio_server.py)
that writes `--mb` megabytes to stderr in lines of `--line-bytes` bytes (0: one single line),
then a last line (its "last words") and exits with code 3; meanwhile a calm server's `ping` is
called every 0.2 s. Printed: the gateway's RSS (before, peak, after), its CPU time, how much its
log grew, the slowest call, and the hostile server's state and last_error.
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

from robustness.hostile_stdio import stderr_attack  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mb", type=float, default=100.0)
    parser.add_argument("--line-bytes", type=int, default=1024)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        report = asyncio.run(stderr_attack(Path(folder), megabytes=args.mb, line_bytes=args.line_bytes))
    print(f"stderr flood of {args.mb:g} MB in lines of {args.line_bytes} bytes: {report.summary()}")
    print(
        f"server h: state {report.server.get('state')}, last_error {str(report.server.get('last_error'))[:300]!r}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
