"""An MCP server over stdio that will not stop: it ignores SIGTERM, SIGINT, SIGHUP and the end of its stdin.

Only SIGKILL ends it, so a test that finds it still running after a stop has found a leak.
Its command line carries `--nexus-orphan-marker=<id>`: tests find survivors by scanning
/proc/*/cmdline for it (see tests/support/orphans.py).

Run: `python stubborn_server.py --nexus-orphan-marker=ID [--initialize-after SECONDS|never]`.
It answers `initialize` after that delay (default 0; `never`: a server stuck in startup),
then `tools/list` with `sleep` (answers after `seconds`) and `echo`. Stdlib only, no SDK
import: it starts in about 30 ms.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
import threading
import time
from typing import Any

PROTOCOL_VERSION = "2025-11-25"
TOOLS = [
    {
        "name": "sleep",
        "description": "Answer after `seconds`.",
        "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}},
    },
    {
        "name": "echo",
        "description": "Answer with the text.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
    },
]

_write_lock = threading.Lock()


def _send(message: dict[str, Any]) -> None:
    with _write_lock:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def _answer(request_id: Any, result: dict[str, Any]) -> None:
    _send({"jsonrpc": "2.0", "id": request_id, "result": result})


def _call(request_id: Any, params: dict[str, Any]) -> None:
    arguments = params.get("arguments") or {}
    if params.get("name") == "sleep":
        seconds = float(arguments.get("seconds", 1))
        time.sleep(seconds)
        text = f"slept {seconds:g}"
    else:
        text = str(arguments.get("text", ""))
    _answer(request_id, {"content": [{"type": "text", "text": text}], "isError": False})


def _initialize(request_id: Any, delay: float | None) -> None:
    if delay is None:
        return  # never: the gateway waits for an answer that will not come
    time.sleep(delay)
    _answer(
        request_id,
        {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "stubborn", "version": "1"},
        },
    )


def serve(delay: float | None) -> None:
    for raw in sys.stdin:
        try:
            message = json.loads(raw)
        except ValueError:
            continue
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            continue  # a notification
        if method == "initialize":
            threading.Thread(target=_initialize, args=(request_id, delay), daemon=True).start()
        elif method == "tools/list":
            _answer(request_id, {"tools": TOOLS})
        elif method == "tools/call":
            threading.Thread(
                target=_call, args=(request_id, message.get("params") or {}), daemon=True
            ).start()
        elif method == "ping":
            _answer(request_id, {})
        else:
            _send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": method}})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nexus-orphan-marker", required=True)
    parser.add_argument("--initialize-after", default="0")
    options = parser.parse_args()
    delay = None if options.initialize_after == "never" else float(options.initialize_after)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    with contextlib.suppress(OSError, ValueError):  # stdout gone with the gateway: stay anyway
        serve(delay)
    while True:  # end of stdin: a well-behaved server would exit here
        time.sleep(3600)


if __name__ == "__main__":
    main()
