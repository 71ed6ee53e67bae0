"""A stdlib HTTP MCP server that floods its event stream with one kind of notification.

    python notification_flood_http_server.py --port-file PATH [--method METHOD] [--delay S] [--count-file PATH]

The HTTP twin of notification_flood_server.py, on both HTTP transports at once:
- streamable HTTP at /mcp: a POST answers initialize (with an `Mcp-Session-Id`), tools/list,
  tools/call (`ping` answers `pong`), ping and logging/setLevel as plain JSON, and takes
  notifications with 202. A GET (the client's stream for what the server sends unasked) gets,
  after `--delay` seconds, `METHOD` notifications as SSE events as fast as the socket takes
  them, until the client goes away;
- the older HTTP+SSE transport at /sse: the stream names `/messages` as where to POST; the
  answers to those POSTs go out on the stream, between batches of the same flood, which starts
  `--delay` seconds after the client's `notifications/initialized`.
`--count-file` receives the number written every 0.1 s; `--port-file` the port it listens on
(127.0.0.1, a free one).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from flood_server_parts import PARAMS, answer, write_count_forever

SESSION = "flood-session-1"
_sent = [0]
_sse_answers: queue.Queue[dict[str, Any]] = queue.Queue()  # for the /sse stream to send
_sse_initialized = threading.Event()


def _answer(message: dict[str, Any]) -> dict[str, Any]:
    return answer(message, "flood-http")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the test reads the gateway's log
        return

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            message = json.loads(body)
        except ValueError:
            self._reply(400, b'{"error":"not JSON"}')
            return
        if self.path.startswith("/messages"):  # HTTP+SSE: the answer goes out on the stream
            if isinstance(message, dict) and "id" in message:
                _sse_answers.put(_answer(message))
            elif isinstance(message, dict) and message.get("method") == "notifications/initialized":
                _sse_initialized.set()
            self._reply(202, b"")
            return
        if not isinstance(message, dict) or "id" not in message:
            self._reply(202, b"")  # a notification (or an answer) of the client's
            return
        self._reply(200, json.dumps(_answer(message)).encode())

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        if self.path.startswith("/sse"):
            self.end_headers()
            self._sse_stream()
            return
        self.send_header("Mcp-Session-Id", SESSION)
        self.end_headers()
        time.sleep(_args.delay)
        try:
            while True:  # until the client goes away (the write fails)
                self._flood_batch()
        except OSError:
            return

    def _sse_stream(self) -> None:
        flood_from = float("inf")
        try:
            self.wfile.write(b"event: endpoint\ndata: /messages/?session_id=1\n\n")
            self.wfile.flush()
            while True:
                while not _sse_answers.empty():
                    self.wfile.write(_event(_sse_answers.get()))
                    self.wfile.flush()
                if _sse_initialized.is_set() and flood_from == float("inf"):
                    flood_from = time.monotonic() + _args.delay
                if time.monotonic() >= flood_from:
                    self._flood_batch()
                else:
                    time.sleep(0.005)
        except OSError:
            return

    def _flood_batch(self) -> None:
        note: dict[str, Any] = {"jsonrpc": "2.0", "method": _args.method}
        if _args.method in PARAMS:
            note["params"] = PARAMS[_args.method]
        self.wfile.write(_event(note) * 64)
        self.wfile.flush()
        _sent[0] += 64

    def do_DELETE(self) -> None:
        self._reply(200, b"")

    def _reply(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Mcp-Session-Id", SESSION)
        if body:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _event(message: dict[str, Any]) -> bytes:
    return f"event: message\ndata: {json.dumps(message, separators=(',', ':'))}\n\n".encode()


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    if _args.count_file:
        threading.Thread(
            target=write_count_forever, args=(_args.count_file, lambda: _sent[0]), daemon=True
        ).start()
    with open(f"{_args.port_file}.tmp", "w") as handle:
        handle.write(f"{server.server_address[1]}\n")
    os.replace(f"{_args.port_file}.tmp", _args.port_file)
    server.serve_forever()


parser = argparse.ArgumentParser()
parser.add_argument("--port-file", required=True)
parser.add_argument("--method", default="notifications/tools/list_changed")
parser.add_argument("--delay", type=float, default=0.0)
parser.add_argument("--count-file", default="")
_args = parser.parse_args()

if __name__ == "__main__":
    main()
