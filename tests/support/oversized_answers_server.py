"""A hostile streamable-HTTP MCP server (handshake era, stdlib only) whose answers are as large as asked.

Tools (argument `mib`: the answer's size, decoded, in MiB; each body is streamed, never held):
- `plain`: a JSON answer, chunked (no Content-Length to refuse it by);
- `inflating`: a gzip JSON answer a few hundred KiB on the wire that inflates to `mib`;
- `event`: an SSE answer whose one event is `mib` large;
- `encoded`: a JSON answer in content-encoding `encoding`: `deflate` (zlib), `raw-deflate` (sent as
  `deflate` without its zlib header, as some servers do) or `br` (not asked for: sent uncompressed).

With `--locked-metadata-mib N` it is an OAuth-protected server instead: every POST is refused with
401, and its protected-resource metadata document is N MiB of JSON (labelled
`--metadata-content-type`, application/json unless told). With `--stdio` it serves
`plain` over stdio (one line per message, written as it is made).

Run: `python oversized_answers_server.py --port PORT [--locked-metadata-mib N]`, or `--stdio`.
"""

from __future__ import annotations

import argparse
import json
import sys
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MIB = 1024 * 1024
SIZED = {"type": "object", "properties": {"mib": {"type": "number"}}, "required": ["mib"]}
TOOLS = [
    {"name": name, "description": f"An answer of `mib` MiB ({how}).", "inputSchema": SIZED}
    for name, how in (("plain", "JSON"), ("inflating", "gzip JSON"), ("event", "one SSE event"))
]
ENCODED = {"type": "object", "properties": {"mib": {"type": "number"}, "encoding": {"type": "string"}}}
TOOLS.append({"name": "encoded", "description": "An answer in `encoding`.", "inputSchema": ENCODED})


def result_json(request_id: Any, mib: float) -> Iterator[bytes]:
    """A tools/call result whose text is `mib` MiB of "x", in 1 MiB pieces."""
    yield b'{"jsonrpc": "2.0", "id": ' + json.dumps(request_id).encode() + b', "result": {"content": '
    yield b'[{"type": "text", "text": "'
    left = int(mib * MIB)
    while left > 0:
        piece = min(left, MIB)
        yield b"x" * piece
        left -= piece
    yield b'"}]}}'


def gzipped(parts: Iterator[bytes], wbits: int = zlib.MAX_WBITS | 16) -> Iterator[bytes]:
    deflate = zlib.compressobj(9, zlib.DEFLATED, wbits)
    for part in parts:
        out = deflate.compress(part)
        if out:
            yield out
    yield deflate.flush()


def serve(port: int, locked_metadata_mib: float | None, metadata_type: str = "application/json") -> None:
    base = f"http://127.0.0.1:{port}"

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # chunked answers

        def log_message(self, *args: Any) -> None:
            pass

        def _fixed(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            for key, value in {"Content-Type": "application/json", **(headers or {})}.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _chunked(self, content_type: str, parts: Iterator[bytes], encoding: str | None = None) -> None:
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            if encoding:
                self.send_header("Content-Encoding", encoding)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            try:
                for part in parts:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                self.wfile.write(b"0\r\n\r\n")
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the gateway stopped reading: as it should

        def do_GET(self) -> None:
            if locked_metadata_mib is not None and self.path.startswith(
                "/.well-known/oauth-protected-resource"
            ):
                head = b'{"resource": "' + f"{base}/mcp".encode() + b'", "authorization_servers": ["'
                padding = (b"x" * MIB for _ in range(int(locked_metadata_mib)))
                self._chunked(metadata_type, iter([head, *padding, b'"]}']))
                return
            self._fixed(405, b"")

        def do_DELETE(self) -> None:
            self._fixed(200, b"")

        def do_POST(self) -> None:
            message = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
            if locked_metadata_mib is not None:
                challenge = f'Bearer resource_metadata="{base}/.well-known/oauth-protected-resource/mcp"'
                self._fixed(401, b'{"error": "invalid_token"}', {"WWW-Authenticate": challenge})
                return
            method, request_id = message.get("method"), message.get("id")
            if request_id is None:
                self._fixed(202, b"")
            elif method == "initialize":
                result = {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "oversized", "version": "1"},
                }
                body = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode()
                self._fixed(200, body, {"Mcp-Session-Id": "oversized-session"})
            elif method == "tools/list":
                self._fixed(
                    200, json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {"tools": TOOLS}}).encode()
                )
            elif method == "tools/call":
                params = message["params"]
                name, mib = params["name"], float(params["arguments"]["mib"])
                if name == "plain":
                    self._chunked("application/json", result_json(request_id, mib))
                elif name == "inflating":
                    self._chunked("application/json", gzipped(result_json(request_id, mib)), "gzip")
                elif name == "encoded":
                    encoding = params["arguments"]["encoding"]
                    body = result_json(request_id, mib)
                    if encoding == "deflate":
                        self._chunked("application/json", gzipped(body, zlib.MAX_WBITS), "deflate")
                    elif encoding == "raw-deflate":
                        self._chunked("application/json", gzipped(body, -zlib.MAX_WBITS), "deflate")
                    else:
                        self._chunked("application/json", body, encoding)
                else:
                    event = iter([b"event: message\ndata: ", *result_json(request_id, mib), b"\n\n"])
                    self._chunked("text/event-stream", event)
            else:
                error = {"code": -32601, "message": f"no method {method}"}
                self._fixed(200, json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode())

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


def serve_stdio() -> None:
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            continue
        if method == "tools/call":
            parts: Iterator[bytes] = result_json(request_id, float(message["params"]["arguments"]["mib"]))
        else:
            if method == "initialize":
                result: dict[str, Any] = {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "oversized", "version": "1"},
                }
            elif method == "tools/list":
                result = {"tools": TOOLS[:1]}
            else:
                result = {}
            parts = iter([json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode()])
        for part in parts:
            out.write(part)
        out.write(b"\n")
        out.flush()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int)
    parser.add_argument("--locked-metadata-mib", type=float, default=None)
    parser.add_argument("--metadata-content-type", default="application/json")
    parser.add_argument("--stdio", action="store_true")
    options = parser.parse_args()
    if options.stdio:
        serve_stdio()
    else:
        serve(options.port, options.locked_metadata_mib, options.metadata_content_type)


if __name__ == "__main__":
    main()
