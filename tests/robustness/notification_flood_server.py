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
import sys
import threading
import time
from typing import Any

from flood_server_parts import PARAMS, answer, write_count_forever

_out = sys.stdout.buffer
_lock = threading.Lock()
_sent = [0]
_stdin_ended = threading.Event()  # the flood stops with it, so the server exits on stdin's end
_answers_waiting = [0]  # the flood steps aside for them: a lock is not fair, answers would starve


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
    if method in PARAMS:
        note["params"] = PARAMS[method]
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


def _answer(message: dict[str, Any]) -> dict[str, Any] | None:
    if message.get("method") == "notifications/initialized":
        threading.Thread(target=_flood, args=(_args.method, _args.delay, _args.seconds), daemon=True).start()
        return None
    if message.get("id") is None:
        return None  # a notification (or an answer) of the gateway's
    return answer(message, "flood")


def main() -> None:
    if _args.count_file:
        threading.Thread(
            target=write_count_forever, args=(_args.count_file, lambda: _sent[0]), daemon=True
        ).start()
    for raw in sys.stdin.buffer:
        try:
            message = json.loads(raw)
        except ValueError:
            continue
        reply = _answer(message) if isinstance(message, dict) else None
        if reply is not None:
            _send(reply)
    _stdin_ended.set()


parser = argparse.ArgumentParser()
parser.add_argument("--method", default="notifications/tools/list_changed")
parser.add_argument("--delay", type=float, default=0.0)
parser.add_argument("--seconds", type=float, default=0.0)
parser.add_argument("--count-file", default="")
_args = parser.parse_args()

if __name__ == "__main__":
    main()
