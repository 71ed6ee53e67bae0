"""One backend that several gateway replicas share (like a Home Assistant), over streamable HTTP.

`python -m support.shared_backend PORT`. Its counters are in this one process, so a test sees
how many calls reached the backend whichever replica made them (`counts`).

Tools:
  stamp(key, delay_ms=0)  read-only; answers `backend:<key>:<n>` (n counts stamp calls)
  tick()                  a write (never cached); answers `tick <n>`
  grow(name)              adds tool `name`, and announces tools/list_changed on the session of
                          the call only (handshake era): other replicas must learn it from the one that heard
  big_list(items)         a JSON array of `items` records (offloaded above the threshold)
  journal(text)           a write: appends `text` to the journal; a text saying `wait N s` takes N
                          seconds (a slow step for the control plane's tasks); counts `journal:<text>`
  counts()                the counters as JSON

`python -m support.shared_backend stdio --delay-ms 20 [--instance bench]` serves, over stdio,
only `echo(text)`, answering `<instance>: <text>` after the delay: the upstream of bench/scale.py
(a fixed cost per call, so the gateways, not the upstream, set the pace).
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from collections import Counter

import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer

READ_ONLY = types.ToolAnnotations(read_only_hint=True)


def create_server() -> MCPServer:
    server = MCPServer("shared-backend")
    calls: Counter[str] = Counter()

    @server.tool(annotations=READ_ONLY, structured_output=False)
    async def stamp(key: str, delay_ms: int = 0) -> str:
        """Answer with the key and how many stamp calls the backend has had."""
        calls["stamp"] += 1
        calls[f"stamp:{key}"] += 1
        n = calls["stamp"]
        if delay_ms:
            await asyncio.sleep(delay_ms / 1000)
        return f"backend:{key}:{n}"

    @server.tool(structured_output=False)
    def tick() -> str:
        """Count one call (a write: never cached)."""
        calls["tick"] += 1
        return f"tick {calls['tick']}"

    @server.tool(structured_output=False)
    async def grow(name: str, ctx: Context) -> str:
        """Add a tool named `name` and announce it to the calling session only."""
        server.add_tool(lambda: f"I am {name}", name=name, description=f"grown tool {name}")
        await ctx.request_context.session.send_tool_list_changed()
        return f"grew {name}"

    @server.tool(annotations=READ_ONLY, structured_output=False)
    def big_list(items: int) -> str:
        """A JSON array of `items` device records."""
        calls["big_list"] += 1
        return json.dumps([{"id": f"light.room_{i}", "on": i % 2 == 0} for i in range(items)])

    @server.tool(structured_output=False)
    async def journal(text: str) -> str:
        """Write a note into the backend's journal (a text saying `wait N s` takes N seconds)."""
        calls["journal"] += 1
        calls[f"journal:{text}"] += 1
        wait = re.search(r"wait (\d+(?:\.\d+)?) s", text)
        if wait:
            await asyncio.sleep(float(wait.group(1)))
        return f"journal noted: {text}"

    @server.tool(structured_output=False)
    def counts() -> str:
        """The call counters."""
        return json.dumps(dict(calls))

    return server


def create_slow_echo(instance: str, delay_ms: int) -> MCPServer:
    server = MCPServer(f"slow-echo-{instance}")

    @server.tool(structured_output=False)
    async def echo(text: str) -> str:
        """Answer with the text after a fixed delay."""
        await asyncio.sleep(delay_ms / 1000)
        return f"{instance}: {text}"

    return server


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        delay = int(sys.argv[sys.argv.index("--delay-ms") + 1]) if "--delay-ms" in sys.argv else 20
        name = sys.argv[sys.argv.index("--instance") + 1] if "--instance" in sys.argv else "bench"
        create_slow_echo(name, delay).run("stdio")
    else:
        create_server().run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
