"""A stdio MCP server that reports the descriptors it was started with.

    python fd_reporting_server.py REPORT_PATH

At start it writes one line per open descriptor, `<fd> <target>` (from /proc/self/fd), to
REPORT_PATH (atomically), then becomes the robustness suite's calm stdlib server
(hostile_stdio_server.py without options) to answer the handshake.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

SERVER = Path(__file__).resolve().parents[1] / "robustness" / "hostile_stdio_server.py"


def _report(path: str) -> None:
    lines = []
    for name in sorted(os.listdir("/proc/self/fd"), key=int):
        try:
            lines.append(f"{name} {os.readlink(f'/proc/self/fd/{name}')}")
        except OSError:  # the listing's own descriptor, closed by now
            continue
    with open(f"{path}.tmp", "w") as handle:
        handle.write("\n".join(lines) + "\n")
    os.replace(f"{path}.tmp", path)


if __name__ == "__main__":
    _report(sys.argv[1])
    os.execv(sys.executable, [sys.executable, str(SERVER)])
