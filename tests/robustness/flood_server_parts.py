"""What both flooding servers (notification_flood_server.py over stdio, notification_flood_http_server.py
over HTTP) share: their answers (the handshake, one tool `ping` that answers `pong`, ping and
logging/setLevel), the flood's params, and the count file the tests read."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

PARAMS = {
    "notifications/message": {"level": "info", "logger": "flood", "data": "one more log record"},
    "notifications/progress": {"progressToken": "nobody-asked", "progress": 1},
}
"""The params of the flood's notification, where its method has any."""


def answer(message: dict[str, Any], server_name: str) -> dict[str, Any]:
    """The answer to one request of the gateway's."""
    method, request_id = message.get("method"), message.get("id")
    if method == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {"listChanged": True}, "logging": {}},
            "serverInfo": {"name": server_name, "version": "1"},
        }
    elif method == "tools/list":
        result = {
            "tools": [{"name": "ping", "description": "Answer pong.", "inputSchema": {"type": "object"}}]
        }
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": "pong"}], "isError": False}
    elif method in ("ping", "logging/setLevel"):
        result = {}
    else:
        return {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "Method not found"}}
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def write_count_forever(path: str, sent: Callable[[], int]) -> None:
    """Every 0.1 s, replace the file at `path` with the number of notifications sent so far."""
    while True:
        time.sleep(0.1)
        with open(f"{path}.tmp", "w") as handle:
            handle.write(f"{sent()}\n")
        os.replace(f"{path}.tmp", path)
