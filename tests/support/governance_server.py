"""An MCP server for the governance tests: big results, call counters, slow and cancellable tools.

Embedded (`support.governance_server:create_server`) or over stdio
(`python -m support.governance_server NAME`). Counters live in the server process and are
read back with the `counts` tool, so tests see exactly how many calls reached the server.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections import Counter

import mcp_types as types
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

# The stamp tools count calls only to show the tests whether a call was made: to a client they
# are reads, and only reads take a server- or gateway-wide cache_ttl.
READ_ONLY = types.ToolAnnotations(read_only_hint=True)
IDEMPOTENT = types.ToolAnnotations(idempotent_hint=True)

# What the `sleep` tool saw, per server instance: "started", then "finished" or "cancelled".
SLEEP_EVENTS: dict[str, list[str]] = {}


def create_server(instance: str = "gov") -> MCPServer:
    server = MCPServer(f"governance-{instance}")
    calls: Counter[str] = Counter()
    events = SLEEP_EVENTS.setdefault(instance, [])

    def tool(annotations: types.ToolAnnotations | None = None):  # type: ignore[no-untyped-def]
        # Plain text results, no output schema: the gateway may replace the text (offload, cut).
        return server.tool(annotations=annotations, structured_output=False)

    @tool(READ_ONLY)
    def stamp(key: str) -> str:
        """Answer with the key and how many calls this tool has had: repeats show whether a call was made."""
        calls["stamp"] += 1
        return f"{instance}:{key}:{calls['stamp']}"

    @tool(READ_ONLY)
    def stamp_args(a: str = "", b: str = "") -> str:
        """Like stamp, with two arguments."""
        calls["stamp_args"] += 1
        return f"{instance}:a={a}:b={b}:{calls['stamp_args']}"

    @tool(READ_ONLY)
    def fail(reason: str = "asked to fail") -> str:
        """A tool-level error result."""
        calls["fail"] += 1
        raise ToolError(reason)

    @tool(READ_ONLY)
    def big_list(items: int, pad: int = 20) -> str:
        """A JSON array of `items` device records."""
        calls["big_list"] += 1
        return json.dumps(
            [{"id": f"light.room_{i}" if i % 2 else f"switch.{i}", "pad": "x" * pad} for i in range(items)]
        )

    @tool(READ_ONLY)
    def big_object(keys: int) -> str:
        """A JSON object with `keys` keys of different types."""
        calls["big_object"] += 1
        value: dict[str, object] = {}
        for i in range(keys):
            value[f"k{i}"] = [i] * 50 if i % 3 == 0 else ({"n": i} if i % 3 == 1 else "v" * 40)
        return json.dumps(value)

    @tool(READ_ONLY)
    def big_text(lines: int) -> str:
        """Plain text (not JSON) of `lines` lines."""
        calls["big_text"] += 1
        return "\n".join(f"log line {i}: something happened" for i in range(lines))

    @tool(READ_ONLY)
    def wide_text(chars: int) -> str:
        """Multi-byte text: `chars` characters of 2, 3 and 4 bytes each."""
        calls["wide_text"] += 1
        return ("é€😀" * chars)[:chars]

    @tool()
    async def sleep(seconds: float) -> str:
        """Sleep, recording whether the sleep finished or was cancelled."""
        calls["sleep"] += 1
        events.append("started")
        try:
            await asyncio.sleep(seconds)
        except asyncio.CancelledError:
            events.append("cancelled")
            raise
        events.append("finished")
        return f"slept {seconds}"

    @tool(IDEMPOTENT)
    async def slow_first(key: str, delay: float) -> str:
        """The first call per key sleeps `delay` seconds; later ones answer at once. Idempotent."""
        calls[f"slow_first:{key}"] += 1
        if calls[f"slow_first:{key}"] == 1:
            await asyncio.sleep(delay)
        return f"attempt {calls[f'slow_first:{key}']}"

    @tool()
    async def slow_first_unsafe(key: str, delay: float) -> str:
        """Like slow_first, with no idempotency hint: the gateway must not retry it."""
        calls[f"slow_first_unsafe:{key}"] += 1
        if calls[f"slow_first_unsafe:{key}"] == 1:
            await asyncio.sleep(delay)
        return f"attempt {calls[f'slow_first_unsafe:{key}']}"

    @tool(READ_ONLY)
    async def slow_stamp(key: str, delay: float) -> str:
        """Sleep, then answer like stamp (for merging identical calls in flight)."""
        calls["slow_stamp"] += 1
        await asyncio.sleep(delay)
        return f"{instance}:{key}:{calls['slow_stamp']}"

    @server.tool()  # structured output: the SDK derives an outputSchema from the return type
    def big_structured(items: int) -> list[dict[str, int]]:
        """`items` records as structured content, checked by clients against the output schema."""
        calls["big_structured"] += 1
        return [{"id": i, "value": i * i} for i in range(items)]

    @tool()
    def counts() -> str:
        """How many calls each tool had, as JSON."""
        return json.dumps(dict(calls))

    return server


if __name__ == "__main__":
    create_server(sys.argv[1] if len(sys.argv) > 1 else "stdio").run("stdio")
