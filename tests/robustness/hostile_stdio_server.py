"""A hostile stdio MCP server, stdlib only: it floods the gateway through what the protocol allows.

    python hostile_stdio_server.py [--flood-list-changed SECONDS] [--flood-delay S] [--changing-tools]
                                   [--stderr-mb MB] [--stderr-line-bytes N] [--final-words TEXT]
                                   [--exit-code CODE] [--count-file PATH]

Handshake era only (`server/discover` is answered "Method not found", so the gateway falls back
to `initialize`). After `notifications/initialized`:

- `--flood-list-changed S` writes `notifications/tools/list_changed` as fast as the pipe takes
  them for S seconds (from a thread; answers still go out between them);
- `--stderr-mb MB` writes MB megabytes to stderr in lines of `--stderr-line-bytes` bytes (0: one
  single line without a newline), then `--final-words` as its last stderr line, then exits with
  `--exit-code` when one is given (else keeps serving).

Both floods start `--flood-delay` seconds after the handshake (so a test can measure first).

`--count-file` receives `<tools/list answered> <list_changed sent>` every 0.1 s and at exit, so a
test can tell how many refreshes the gateway made. `--changing-tools` names its one listed tool
after the number of lists so far (`tool_1`, `tool_2`, ...): every refresh changes the catalog.

Tools: `ping` answers `pong`; `slow` answers `done` after `seconds` (default 2).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from typing import Any

PROTOCOL_VERSION = "2025-11-25"

_out = sys.stdout.buffer
_lock = threading.Lock()
_counts = {"lists": 0, "notifications": 0}


def _send(message: dict[str, Any]) -> None:
    data = json.dumps(message, separators=(",", ":")).encode() + b"\n"
    with _lock:
        _out.write(data)
        _out.flush()


def _tools(changing: bool) -> list[dict[str, Any]]:
    schema = {"type": "object", "properties": {"seconds": {"type": "number"}}}
    listed = [
        {"name": "ping", "description": "Answer pong.", "inputSchema": {"type": "object"}},
        {"name": "slow", "description": "Answer after `seconds`.", "inputSchema": schema},
    ]
    if changing:
        listed.append(
            {"name": f"tool_{_counts['lists']}", "description": "Changes.", "inputSchema": {"type": "object"}}
        )
    return listed


def _flood_list_changed(seconds: float, delay: float) -> None:
    time.sleep(delay)
    frame = b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n'
    batch = frame * 64
    end = time.monotonic() + seconds
    try:
        while time.monotonic() < end:
            with _lock:
                _out.write(batch)
                _out.flush()
            _counts["notifications"] += 64
    except (BrokenPipeError, OSError):
        return


def _flood_stderr(megabytes: float, line_bytes: int, final_words: str, exit_code: int | None) -> None:
    time.sleep(_args.flood_delay)
    total = int(megabytes * 1024 * 1024)
    err = sys.stderr.buffer
    try:
        if line_bytes <= 0:
            chunk = b"x" * 65536
            for _ in range(total // len(chunk)):
                err.write(chunk)
            err.write(b"\n")
        else:
            line = b"e" * (line_bytes - 1) + b"\n"
            block = line * max(1, 65536 // line_bytes)
            for _ in range(max(1, total // len(block))):
                err.write(block)
        if final_words:
            err.write(final_words.encode() + b"\n")
        err.flush()
    except (BrokenPipeError, OSError):
        return
    if exit_code is not None:
        _write_counts()
        os._exit(exit_code)


def _write_counts() -> None:
    path = _args.count_file
    if path:
        tmp = f"{path}.tmp"
        with open(tmp, "w") as handle:
            handle.write(f"{_counts['lists']} {_counts['notifications']}\n")
        os.replace(tmp, path)


def _count_writer() -> None:
    while True:
        time.sleep(0.1)
        _write_counts()


def _answer(message: dict[str, Any]) -> dict[str, Any] | None:
    method, request_id = message.get("method"), message.get("id")
    if method == "notifications/initialized":
        if _args.flood_list_changed:
            threading.Thread(
                target=_flood_list_changed, args=(_args.flood_list_changed, _args.flood_delay), daemon=True
            ).start()
        if _args.stderr_mb:
            threading.Thread(
                target=_flood_stderr,
                args=(_args.stderr_mb, _args.stderr_line_bytes, _args.final_words, _args.exit_code),
                daemon=True,
            ).start()
        return None
    if request_id is None:
        return None
    params = message.get("params") if isinstance(message.get("params"), dict) else {}
    if method == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": "hostile", "version": "1"},
        }
    elif method == "ping":
        result = {}
    elif method == "tools/list":
        _counts["lists"] += 1
        result = {"tools": _tools(_args.changing_tools)}
    elif method == "tools/call":
        name = params.get("name")
        arguments = params.get("arguments") or {}
        if name == "slow":
            time.sleep(float(arguments.get("seconds", 2)))
            text = "done"
        else:
            text = "pong"
        result = {"content": [{"type": "text", "text": text}], "isError": False}
    else:
        return {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "Method not found"}}
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def _serve_one(message: dict[str, Any]) -> None:
    answer = _answer(message)
    if answer is not None:
        _send(answer)


def main() -> None:
    threading.Thread(target=_count_writer, daemon=True).start()
    for raw in sys.stdin.buffer:
        try:
            message = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(message, dict):
            continue
        if message.get("method") == "tools/call":
            # A slow call must not hold the answers to others (the SIGHUP test calls `slow`).
            threading.Thread(target=_serve_one, args=(message,), daemon=True).start()
        else:
            _serve_one(message)
    _write_counts()


parser = argparse.ArgumentParser()
parser.add_argument("--flood-list-changed", type=float, default=0.0)
parser.add_argument("--flood-delay", type=float, default=0.0)
parser.add_argument("--changing-tools", action="store_true")
parser.add_argument("--stderr-mb", type=float, default=0.0)
parser.add_argument("--stderr-line-bytes", type=int, default=1024)
parser.add_argument("--final-words", default="")
parser.add_argument("--exit-code", type=int, default=None)
parser.add_argument("--count-file", default="")
_args = parser.parse_args()

if __name__ == "__main__":
    main()
