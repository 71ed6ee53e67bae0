"""A minimal, strict JSON-RPC 2.0 peer over stdio: the yardstick for the robustness suite itself.

It does what the suite demands of the gateway and nothing more: strict parsing (UTF-8, no
NaN, bounded depth), -32700 / -32600 / -32602 / -32601 with the ids JSON-RPC prescribes,
silence for notifications and responses, and output that escapes everything non-ASCII (so
lone surrogates travel as `\\ud800`). test_suite_is_satisfiable.py runs the fixed cases and
the fuzz against it: an expectation no correct peer can meet fails there, not on the gateway.

Run: `python -m robustness.reference_server`.
"""

from __future__ import annotations

import json
import sys
from typing import Any

MAX_DEPTH = 64


def _refuse(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _depth(value: Any) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            stack.extend((c, level + 1) for c in (item.values() if isinstance(item, dict) else item))
    return deepest


def _usable(request_id: Any) -> bool:
    return isinstance(request_id, str) or (isinstance(request_id, int) and not isinstance(request_id, bool))


def _error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def _result(request_id: Any, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def answer(raw: bytes) -> dict[str, Any] | None:
    try:
        message = json.loads(raw.decode("utf-8"), parse_constant=_refuse)
    except (ValueError, RecursionError):
        return _error(None, -32700, "Parse error")
    if _depth(message) > MAX_DEPTH:
        return _error(None, -32700, "Parse error: nested too deeply")
    if not isinstance(message, dict):
        return _error(None, -32600, "Invalid request: expected one JSON object")
    request_id = message.get("id")
    if "method" not in message and ("result" in message or "error" in message):
        return None  # a response: nothing of ours is waiting for one
    method, params = message.get("method"), message.get("params", {})
    if (
        message.get("jsonrpc") != "2.0"
        or not isinstance(method, str)
        or "result" in message
        or "error" in message
    ):
        return _error(request_id if _usable(request_id) else None, -32600, "Invalid request")
    if "id" not in message:
        return None  # a notification, however wrong
    if not _usable(request_id):
        return _error(None, -32600, "Invalid request: id must be a string or an integer")
    if not isinstance(params, dict):
        return _error(request_id, -32602, "Invalid params: expected an object")
    if method == "ping":
        return _result(request_id, {})
    if method == "initialize":
        info = {"name": "reference", "version": "1"}
        return _result(request_id, {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": info})
    if method == "tools/list":
        return _result(request_id, {"tools": [{"name": "echo.echo", "inputSchema": {"type": "object"}}]})
    if method == "tools/call":
        if not isinstance(params.get("name"), str) or not isinstance(params.get("arguments", {}), dict):
            return _error(request_id, -32602, "Invalid params: name (a string) and arguments (an object)")
        text = json.dumps(params.get("arguments", {}), sort_keys=True, separators=(",", ":"))
        return _result(request_id, {"content": [{"type": "text", "text": text}], "isError": False})
    return _error(request_id, -32601, "Method not found")


def main() -> None:
    out = sys.stdout.buffer
    for raw in sys.stdin.buffer:
        if not raw.strip():
            continue
        reply = answer(raw)
        if reply is not None:
            out.write(json.dumps(reply, separators=(",", ":")).encode() + b"\n")
            out.flush()


if __name__ == "__main__":
    main()
