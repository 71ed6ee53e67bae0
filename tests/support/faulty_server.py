"""A real MCP server that misbehaves on request, for fault-injection tests.

Over stdio it speaks JSON-RPC by hand (no SDK import: it starts in ~30 ms, so tests can
restart it a hundred times, and it can break the protocol in ways an SDK would not let it).
With `--http PORT` it serves the same tools over streamable HTTP through the SDK.

Run: `python -m support.faulty_server [options]`. Faults chosen at launch (flags, or the env
var FAULTY_ARGS holding the same flags):
  --exit-during-initialize CODE   read the initialize request and exit with CODE unanswered
  --crash-after SECONDS           exit(7) that long after answering initialize (crash loops)
  --garbage-on-start              print non-JSON lines on stdout before anything else
  --stderr-noise N                write N lines to stderr at start
  --slow-start SECONDS            sleep before reading anything (start timeouts)
  --slow-relist SECONDS           answer every tools/list after the first that late (index sync timeouts)
  --no-ping                       answer ping with "Method not found" (health falls back to tools/list)
  --modern-only                   speak 2026-07-28 only: answer server/discover, refuse initialize (-32022)
  --name NAME                     the name every answer carries (default "faulty")
  --count-file PATH               append this process's pid to PATH at start (tests count restarts)

Faults chosen per call, as tools: `crash` (exit mid-call), `hang` (never answer), `slow`
(answer after N seconds), `garbage` (non-JSON lines on stdout, then answer or hang),
`noise` (stderr lines), `fail` (an isError result), `crash_once` (exit mid-call the first
time only), plus `echo` and `pid`.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import threading
import time
from typing import Any

PROTOCOL_VERSION = "2025-11-25"
MODERN_VERSION = "2026-07-28"
UNSUPPORTED_PROTOCOL_VERSION = -32022


def _tool(name: str, description: str, properties: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "inputSchema": {"type": "object", "properties": properties or {}},
    }


TOOLS = [
    _tool("echo", "Answer with the text, naming this server.", {"text": {"type": "string"}}),
    _tool("pid", "Answer with this process's id."),
    _tool("crash", "Exit the process in the middle of the call.", {"code": {"type": "integer"}}),
    _tool(
        "crash_once",
        "Exit mid-call unless the file `marker` exists (creating it first): the next process answers.",
        {"marker": {"type": "string"}},
    ),
    _tool("hang", "Never answer."),
    _tool("slow", "Answer after `seconds`.", {"seconds": {"type": "number"}}),
    _tool(
        "garbage",
        "Write non-JSON lines on stdout, then answer (then='answer') or never answer (then='hang').",
        {"lines": {"type": "integer"}, "then": {"type": "string"}},
    ),
    _tool("noise", "Write `lines` lines on stderr, then answer.", {"lines": {"type": "integer"}}),
    _tool("fail", "Answer with a tool-level error (isError), naming this server."),
]


def _text(text: str, *, error: bool = False) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": error}


def _stderr(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


class FaultyTools:
    """The tools, shared by both transports; `write_raw` puts bytes on stdout (stdio only)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def call(self, tool: str, args: dict[str, Any], write_raw: Any = None) -> dict[str, Any]:
        name = self.name
        if tool == "echo":
            return _text(f"{name}: {args.get('text', '')}")
        if tool == "pid":
            return _text(str(os.getpid()))
        if tool == "crash":
            _stderr(f"{name}: crashing on purpose")
            os._exit(int(args.get("code", 3)))
        if tool == "crash_once":
            marker = str(args["marker"])
            if not os.path.exists(marker):
                with open(marker, "w") as handle:
                    handle.write(str(os.getpid()))
                _stderr(f"{name}: crashing once on purpose")
                os._exit(3)
            return _text(f"{name}: survived")
        if tool == "hang":
            threading.Event().wait()
        if tool == "slow":
            seconds = float(args.get("seconds", 1.0))
            time.sleep(seconds)
            return _text(f"{name}: slept {seconds:g}")
        if tool == "garbage":
            lines = int(args.get("lines", 3))
            if write_raw is not None:
                write_raw(b"".join(b"this is not JSON {{{ %d\n" % i for i in range(lines)))
            if args.get("then", "answer") == "hang":
                threading.Event().wait()
            return _text(f"{name}: wrote {lines} garbage lines")
        if tool == "noise":
            for i in range(int(args.get("lines", 100))):
                sys.stderr.write(f"{name}: noise line {i} " + "x" * 100 + "\n")
            sys.stderr.flush()
            return _text(f"{name}: noisy")
        if tool == "fail":
            return _text(f"{name}: failed on purpose", error=True)
        return _text(f"no such tool: {tool}", error=True)


class RawStdioServer:
    """Line-delimited JSON-RPC on stdin/stdout; each tools/call runs in its own thread."""

    def __init__(self, tools: FaultyTools, options: argparse.Namespace) -> None:
        self.tools = tools
        self.options = options
        self._out = threading.Lock()
        self.lists = 0  # tools/list requests answered so far (--slow-relist)

    def write_raw(self, data: bytes) -> None:
        with self._out:
            os.write(1, data)

    def send(self, message: dict[str, Any]) -> None:
        self.write_raw(json.dumps(message, separators=(",", ":")).encode() + b"\n")

    def answer(self, request_id: Any, result: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    def fail(self, request_id: Any, code: int, message: str) -> None:
        self.send({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})

    def serve(self) -> None:
        for raw in sys.stdin.buffer:
            if not raw.strip():
                continue
            try:
                message = json.loads(raw)
            except ValueError:
                _stderr(f"bad JSON from the client: {raw[:200]!r}")
                continue
            if isinstance(message, dict) and "method" in message:
                self.handle(message)

    def handle(self, message: dict[str, Any]) -> None:
        method, request_id = message["method"], message.get("id")
        params = message.get("params") or {}
        if request_id is None:
            return  # notifications (initialized, cancelled, ...) need no answer
        if method == "server/discover" and self.options.modern_only:
            self.answer(
                request_id,
                {
                    "supportedVersions": [MODERN_VERSION],
                    "capabilities": {"tools": {}},
                    "resultType": "complete",
                    "_meta": {
                        "io.modelcontextprotocol/serverInfo": {"name": self.tools.name, "version": "1.0"}
                    },
                },
            )
        elif method == "initialize" and self.options.modern_only:
            self.send(
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "error": {
                        "code": UNSUPPORTED_PROTOCOL_VERSION,
                        "message": "this server speaks 2026-07-28 only",
                        "data": {"supported": [MODERN_VERSION], "requested": params.get("protocolVersion")},
                    },
                }
            )
        elif method == "initialize":
            if self.options.exit_during_initialize is not None:
                _stderr("dying during initialize, as told")
                os._exit(self.options.exit_during_initialize)
            self.answer(
                request_id,
                {
                    "protocolVersion": PROTOCOL_VERSION,
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": self.tools.name, "version": "1.0"},
                },
            )
            if self.options.crash_after is not None:
                threading.Thread(target=self._crash_later, daemon=True).start()
        elif method == "ping":
            if self.options.no_ping:
                self.fail(request_id, -32601, "Method not found: ping")
            else:
                self.answer(request_id, {})
        elif method == "tools/list":
            modern = (
                {"ttlMs": 0, "cacheScope": "private", "resultType": "complete"}
                if self.options.modern_only
                else {}
            )
            self.lists += 1
            if self.options.slow_relist and self.lists > 1:
                threading.Timer(
                    self.options.slow_relist, self.answer, (request_id, {"tools": TOOLS, **modern})
                ).start()
            else:
                self.answer(request_id, {"tools": TOOLS, **modern})
        elif method == "tools/call":
            threading.Thread(
                target=self._call,
                args=(request_id, params.get("name", ""), params.get("arguments") or {}),
                daemon=True,
            ).start()
        else:
            self.fail(request_id, -32601, f"Method not found: {method}")

    def _call(self, request_id: Any, tool: str, args: dict[str, Any]) -> None:
        self.answer(request_id, self.tools.call(tool, args, self.write_raw))

    def _crash_later(self) -> None:
        time.sleep(self.options.crash_after)
        _stderr("crashing after a while, as told")
        os._exit(7)


def serve_http(tools: FaultyTools, port: int) -> None:
    """The same tools over streamable HTTP, through the SDK (imported only here: it is slow to load)."""
    import anyio
    import mcp_types as types
    import uvicorn
    from mcp.server import Server

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool.model_validate(tool) for tool in TOOLS])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        result = await anyio.to_thread.run_sync(tools.call, params.name, params.arguments or {})
        return types.CallToolResult.model_validate(result)

    server: Server[Any] = Server(tools.name, on_list_tools=list_tools, on_call_tool=call_tool)
    app = server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")


def _parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="faulty_server")
    parser.add_argument("--exit-during-initialize", type=int, default=None)
    parser.add_argument("--crash-after", type=float, default=None)
    parser.add_argument("--garbage-on-start", action="store_true")
    parser.add_argument("--stderr-noise", type=int, default=0)
    parser.add_argument("--slow-start", type=float, default=0.0)
    parser.add_argument("--slow-relist", type=float, default=0.0)
    parser.add_argument("--no-ping", action="store_true")
    parser.add_argument("--modern-only", action="store_true")
    parser.add_argument("--name", default="faulty")
    parser.add_argument("--count-file", default=None)
    parser.add_argument("--http", type=int, default=None, metavar="PORT")
    return parser.parse_args([*shlex.split(os.environ.get("FAULTY_ARGS", "")), *argv])


def main(argv: list[str] | None = None) -> None:
    options = _parse(sys.argv[1:] if argv is None else argv)
    if options.count_file:
        with open(options.count_file, "a") as counter:
            counter.write(f"{os.getpid()}\n")
    for i in range(options.stderr_noise):
        sys.stderr.write(f"startup noise {i}\n")
    sys.stderr.flush()
    if options.slow_start:
        time.sleep(options.slow_start)
    tools = FaultyTools(options.name)
    if options.http is not None:
        serve_http(tools, options.http)
        return
    server = RawStdioServer(tools, options)
    if options.garbage_on_start:
        server.write_raw(b"Welcome to faulty server! (not JSON)\n<html>also not JSON</html>\n")
    server.serve()


if __name__ == "__main__":
    main()
