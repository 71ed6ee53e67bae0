"""Stand-ins for the servers of the Lumi (unified manager) example config, run as real processes.

- `python lumi_peers.py weather --http PORT [--bearer KEY] [--name NAME]`: the HTTP weather
  service (`get_weather`, `get_forecast`) at `http://127.0.0.1:PORT/mcp`; with `--bearer`,
  any request without `Authorization: Bearer KEY` gets 401 (so a READY server proves the
  gateway sent the config's `apiKey`).
- `python lumi_peers.py [files]`: the stdio file server (`read_file`, `write_file`,
  `list_directory`), which also offers `get_weather`, so the same bare name is served by two
  servers of different priority.

Every answer starts with the instance name, so tests see which server answered. Run by
path (the config says `python /path/to/file_mcp_server.py`): it imports only the SDK.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from mcp.server.mcpserver import MCPServer


def weather_tools(server: MCPServer, name: str) -> None:
    @server.tool(description="Current weather of a city.", structured_output=False)
    def get_weather(city: str) -> str:
        return f"{name}: sunny in {city}"

    @server.tool(description="Forecast of a city for a few days.", structured_output=False)
    def get_forecast(city: str, days: int = 3) -> str:
        return f"{name}: {days} days of sun in {city}"


def file_tools(server: MCPServer, name: str) -> None:
    @server.tool(description="Read a text file.", structured_output=False)
    def read_file(path: str) -> str:
        with open(path, encoding="utf-8") as handle:
            return f"{name}: {handle.read()}"

    @server.tool(description="Write a text file.", structured_output=False)
    def write_file(path: str, content: str) -> str:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(content)
        return f"{name}: wrote {len(content)} characters"

    @server.tool(description="List a folder.", structured_output=False)
    def list_directory(path: str) -> str:
        return f"{name}: " + ", ".join(sorted(os.listdir(path)))

    @server.tool(description="Weather, as a slower fallback.", structured_output=False)
    def get_weather(city: str) -> str:
        return f"{name}: probably sunny in {city}"


def serve_http(server: MCPServer, port: int, bearer: str | None) -> None:
    import uvicorn

    app = server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and bearer is not None:
            headers = dict(scope.get("headers") or [])
            if headers.get(b"authorization", b"").decode("latin-1") != f"Bearer {bearer}":
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"missing or wrong bearer token"})
                return
        await app(scope, receive, send)

    uvicorn.run(guarded, host="127.0.0.1", port=port, log_level="warning")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="lumi_peers")
    parser.add_argument("role", nargs="?", default="files", choices=["files", "weather"])
    parser.add_argument("--http", type=int, default=None, metavar="PORT")
    parser.add_argument("--bearer", default=None)
    parser.add_argument("--name", default=None)
    options = parser.parse_args(argv)
    name = options.name or f"{options.role}-{'http' if options.http else 'stdio'}"
    server = MCPServer(name)
    (weather_tools if options.role == "weather" else file_tools)(server, name)
    if options.http is not None:
        serve_http(server, options.http, options.bearer)
    else:
        server.run("stdio")


if __name__ == "__main__":
    main(sys.argv[1:])
