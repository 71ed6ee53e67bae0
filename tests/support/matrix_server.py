"""The upstream of the first-contact matrix: a handshake-era MCP server, over stdio or streamable HTTP.

Stdlib only (starts in ~30 ms), so the delay a test asks for is the only slow part. It answers
`initialize` after `--start-delay` seconds: the gateway is then still in this server's first
start while the client's first requests arrive.

Roles:
- `main`: `ticket` (read-only; a number that grows with every call that reaches the server, so a
  cache hit shows the same number), `echo`, `rows` (~20 KB of JSON: offloaded), `picture` (a
  ~8 KB PNG: media, must pass through), `report` (the rows and the picture).
- `primary` / `backup`: `lookup` answering with the role (priority fallback); `primary` also has
  `crash`, which ends the process (a server that goes down).

Run: `python matrix_server.py --role main [--start-delay 3] [--http PORT]`.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import random
import struct
import sys
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

PROTOCOL_VERSION = "2025-11-25"
OBJECT: dict[str, Any] = {"type": "object", "properties": {}}
ROOMS = ("kitchen", "hall", "study", "garage")


def _png(width: int = 48, height: int = 48) -> str:
    """A real PNG of noise (noise does not compress: ~7 KB), base64."""
    rng = random.Random(7)
    rows = b"".join(b"\x00" + bytes(rng.getrandbits(8) for _ in range(width * 3)) for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    png = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )
    return base64.b64encode(png).decode()


def _devices() -> str:
    """~20 KB of JSON rows: 300 lights, 100 of them on."""
    devices = [
        {"id": f"light-{i:03d}", "room": ROOMS[i % 4], "on": i % 3 == 0, "watts": 5 + i % 11}
        for i in range(300)
    ]
    return json.dumps(devices)


def _tools(role: str) -> list[dict[str, Any]]:
    if role == "main":
        return [
            {
                "name": "ticket",
                "description": "The current ticket number.",
                "inputSchema": OBJECT,
                "annotations": {"readOnlyHint": True},
            },
            {
                "name": "echo",
                "description": "Answer with the text.",
                "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
            },
            {
                "name": "rows",
                "description": "Every device with its room and power state.",
                "inputSchema": OBJECT,
            },
            {"name": "picture", "description": "A small picture.", "inputSchema": OBJECT},
            {
                "name": "report",
                "description": "Every device, and a picture of the house.",
                "inputSchema": OBJECT,
            },
        ]
    tools = [{"name": "lookup", "description": "Say which server answered.", "inputSchema": OBJECT}]
    if role == "primary":
        tools.append({"name": "crash", "description": "End this server's process.", "inputSchema": OBJECT})
    return tools


class Server:
    def __init__(self, role: str, start_delay: float) -> None:
        self.role = role
        self.start_delay = start_delay
        self.tickets = 0
        self.lock = threading.Lock()

    def handle(self, message: dict[str, Any]) -> dict[str, Any] | None:
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            return None  # a notification
        if method == "initialize":
            time.sleep(self.start_delay)
            result: dict[str, Any] = {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": f"matrix-{self.role}", "version": "1"},
            }
        elif method == "tools/list":
            result = {"tools": _tools(self.role)}
        elif method == "tools/call":
            result = self.call(message.get("params") or {})
        elif method == "ping":
            result = {}
        else:
            return {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": str(method)}}
        return {"jsonrpc": "2.0", "id": request_id, "result": result}

    def call(self, params: dict[str, Any]) -> dict[str, Any]:
        name = params.get("name")
        arguments = params.get("arguments") or {}
        if name == "ticket":
            with self.lock:
                self.tickets += 1
                text = str(self.tickets)
        elif name == "echo":
            text = str(arguments.get("text", ""))
        elif name == "rows":
            text = _devices()
        elif name == "picture":
            return {"content": [{"type": "image", "data": _png(), "mimeType": "image/png"}]}
        elif name == "report":
            return {
                "content": [
                    {"type": "text", "text": _devices()},
                    {"type": "image", "data": _png(), "mimeType": "image/png"},
                ]
            }
        elif name == "lookup":
            text = self.role
        elif name == "crash" and self.role == "primary":
            sys.stdout.flush()
            os._exit(3)
        else:
            return {"content": [{"type": "text", "text": f"unknown tool {name}"}], "isError": True}
        return {"content": [{"type": "text", "text": text}]}


def serve_stdio(server: Server) -> None:
    write_lock = threading.Lock()

    def answer(message: dict[str, Any]) -> None:
        reply = server.handle(message)
        if reply is not None:
            with write_lock:
                sys.stdout.write(json.dumps(reply) + "\n")
                sys.stdout.flush()

    for raw in sys.stdin:
        try:
            message = json.loads(raw)
        except ValueError:
            continue
        if isinstance(message, dict):
            threading.Thread(target=answer, args=(message,), daemon=True).start()


def serve_http(server: Server, port: int) -> None:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # quiet: the test reads the gateway's log
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            try:
                message = json.loads(body)
            except ValueError:
                self.send_error(400)
                return
            reply = server.handle(message) if isinstance(message, dict) else None
            if reply is None:
                self.send_response(202)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            data = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            if message.get("method") == "initialize":
                self.send_header("Mcp-Session-Id", "matrix-session")
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # no standalone stream
            self.send_response(405)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_DELETE(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--role", choices=("main", "primary", "backup"), default="main")
    parser.add_argument("--start-delay", type=float, default=0.0)
    parser.add_argument("--http", type=int, default=None, help="serve streamable HTTP on this port")
    options = parser.parse_args()
    server = Server(options.role, options.start_delay)
    if options.http is not None:
        serve_http(server, options.http)
    else:
        serve_stdio(server)


if __name__ == "__main__":
    main()
