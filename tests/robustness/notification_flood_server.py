"""A stdlib stdio MCP server that floods the gateway with one kind of notification.

    python notification_flood_server.py [--method METHOD] [--delay S] [--seconds S] [--count-file PATH]

After `notifications/initialized` and `--delay` seconds, a thread writes `METHOD` notifications
(default `notifications/tools/list_changed`; `notifications/message` carries a log record) as
fast as the pipe takes them, for `--seconds` (0: until stdin ends). An answer goes out as soon
as the batch being written is, behind what is already in the pipe. `--count-file` receives the number sent every 0.1 s.

Tools: `ping` answers `pong`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from typing import Any

_out = sys.stdout.buffer
_lock = threading.Lock()
_sent = [0]
_stdin_ended = threading.Event()  # the flood stops with it, so the server exits on stdin's end
_answers_waiting = [0]  # the flood steps aside for them: a lock is not fair, answers would starve
_PARAMS = {
    "notifications/message": {"level": "info", "logger": "flood", "data": "one more log record"},
    "notifications/progress": {"progressToken": "nobody-asked", "progress": 1},
}


def _send(message: dict[str, Any]) -> None:
    data = json.dumps(message, separators=(",", ":")).encode() + b"\n"
    _answers_waiting[0] += 1
    try:
        with _lock:
            _out.write(data)
            _out.flush()
    finally:
        _answers_waiting[0] -= 1


def _flood(method: str, delay: float, seconds: float) -> None:
    time.sleep(delay)
    note: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if method in _PARAMS:
        note["params"] = _PARAMS[method]
    batch = (json.dumps(note, separators=(",", ":")).encode() + b"\n") * 64
    end = time.monotonic() + seconds if seconds > 0 else float("inf")
    try:
        while time.monotonic() < end and not _stdin_ended.is_set():
            if _answers_waiting[0]:
                time.sleep(0.001)
                continue
            with _lock:
                _out.write(batch)
                _out.flush()
            _sent[0] += 64
    except (BrokenPipeError, OSError):
        return


def _count_writer(path: str) -> None:
    while True:
        time.sleep(0.1)
        with open(f"{path}.tmp", "w") as handle:
            handle.write(f"{_sent[0]}\n")
        os.replace(f"{path}.tmp", path)


def _answer(message: dict[str, Any]) -> dict[str, Any] | None:
    method, request_id = message.get("method"), message.get("id")
    if method == "notifications/initialized":
        threading.Thread(target=_flood, args=(_args.method, _args.delay, _args.seconds), daemon=True).start()
        return None
    if request_id is None:
        return None
    if method == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {"listChanged": True}, "logging": {}},
            "serverInfo": {"name": "flood", "version": "1"},
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


def main() -> None:
    if _args.count_file:
        threading.Thread(target=_count_writer, args=(_args.count_file,), daemon=True).start()
    for raw in sys.stdin.buffer:
        try:
            message = json.loads(raw)
        except ValueError:
            continue
        answer = _answer(message) if isinstance(message, dict) else None
        if answer is not None:
            _send(answer)
    _stdin_ended.set()


parser = argparse.ArgumentParser()
parser.add_argument("--method", default="notifications/tools/list_changed")
parser.add_argument("--delay", type=float, default=0.0)
parser.add_argument("--seconds", type=float, default=0.0)
parser.add_argument("--count-file", default="")
_args = parser.parse_args()

if __name__ == "__main__":
    main()
