"""The port a `nexus serve --port 0` process serves on, read from its banner.

Started on port 0, the gateway binds a port the kernel picks and holds it from then on. A port
probed by the test and passed on could be taken before the gateway binds it: that gateway then
exits, and whoever polls the port talks to the process that holds it (two of the official
suite's OAuth scenarios once failed together that way, their drivers talking to one gateway).
"""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

# Printed once the gateway serves: "Nexus 0.1.0 serving 9 tools from 1/1 servers at
# http://127.0.0.1:PORT/mcp".
BANNER = re.compile(rb" serving .* at http://[^\s/]+:(\d+)/")


def serving_port(log: Path, process: subprocess.Popen[bytes], timeout: float = 60.0) -> int:
    """The port in the banner of the gateway writing `log`; fails at once if it exits before."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = BANNER.search(log.read_bytes()) if log.exists() else None
        if found:
            return int(found.group(1))
        if process.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise RuntimeError(f"the gateway exited with {process.returncode} before serving:\n{tail}")
        time.sleep(0.05)
    raise RuntimeError(f"the gateway printed no banner within {timeout:g} s (log: {log})")
