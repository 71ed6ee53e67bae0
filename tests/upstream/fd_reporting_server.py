"""A stdlib stdio MCP server that reports the descriptors it was started with.

    python fd_reporting_server.py REPORT_PATH

At start it writes one line per open descriptor, `<fd> <target>` (from /proc/self/fd), to
REPORT_PATH (atomically), then answers the handshake and lists no tools, until stdin ends.
"""

from __future__ import annotations

import json
import os
import sys


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


def _answer(message: dict[str, object]) -> dict[str, object] | None:
    if "id" not in message:
        return None
    method = message.get("method")
    if method == "initialize":
        result: dict[str, object] = {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "fd-reporter", "version": "1"},
        }
    elif method == "tools/list":
        result = {"tools": []}
    elif method == "ping":
        result = {}
    else:
        return {
            "jsonrpc": "2.0",
            "id": message["id"],
            "error": {"code": -32601, "message": "Method not found"},
        }
    return {"jsonrpc": "2.0", "id": message["id"], "result": result}


def main() -> None:
    _report(sys.argv[1])
    for raw in sys.stdin.buffer:
        try:
            message = json.loads(raw)
        except ValueError:
            continue
        answer = _answer(message) if isinstance(message, dict) else None
        if answer is not None:
            sys.stdout.write(json.dumps(answer) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
