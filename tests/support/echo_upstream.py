"""A tiny stdio MCP upstream that gives back exactly what it was sent, for robustness and load tests.

JSON-RPC by hand, no SDK import (it starts in a few tens of ms). Output is written with
`json.dumps(..., ensure_ascii=True)`, so a lone surrogate such as "\\ud800" travels as the
escape `\\ud800`: valid JSON text, but a string that strict UTF-8 encoders refuse. That is
what the gateway must cope with when it relays the result onward.

Tools:
  echo            answer with the arguments, as one text item holding their canonical JSON
                  (sorted keys): a caller can check that its own unique payload came back
  lone_surrogate  answer with a text that holds a lone surrogate ("broken \\ud800 text")

Run: `python -m support.echo_upstream`.
"""

from __future__ import annotations

import json
import sys
from typing import Any

PROTOCOL_VERSION = "2025-11-25"
LONE_SURROGATE_TEXT = "broken \ud800 text"

TOOLS = [
    {
        "name": "echo",
        "description": "Answer with the arguments, as canonical JSON text.",
        "inputSchema": {"type": "object"},
    },
    {
        "name": "lone_surrogate",
        "description": "Answer with a text holding a lone UTF-16 surrogate.",
        "inputSchema": {"type": "object"},
    },
]


def canonical(arguments: Any) -> str:
    """The text `echo` answers with: tests compute the same to compare."""
    return json.dumps(arguments, sort_keys=True, separators=(",", ":"))


def _result(tool: str, arguments: Any) -> dict[str, Any]:
    if tool == "echo":
        return {"content": [{"type": "text", "text": canonical(arguments)}], "isError": False}
    if tool == "lone_surrogate":
        return {"content": [{"type": "text", "text": LONE_SURROGATE_TEXT}], "isError": False}
    return {"content": [{"type": "text", "text": f"no such tool: {tool}"}], "isError": True}


def _answer(message: dict[str, Any]) -> dict[str, Any] | None:
    method, request_id = message.get("method"), message.get("id")
    if request_id is None:
        return None  # notifications need no answer
    raw_params = message.get("params")
    params: dict[str, Any] = raw_params if isinstance(raw_params, dict) else {}
    if method == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "echo-upstream", "version": "1.0"},
        }
    elif method == "ping":
        result = {}
    elif method == "tools/list":
        result = {"tools": TOOLS}
    elif method == "tools/call":
        result = _result(str(params.get("name", "")), params.get("arguments") or {})
    else:
        return {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": f"no {method}"}}
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def main() -> None:
    out = sys.stdout.buffer
    for raw in sys.stdin.buffer:
        try:
            message = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(message, dict):
            continue
        answer = _answer(message)
        if answer is not None:
            out.write(json.dumps(answer, separators=(",", ":")).encode() + b"\n")
            out.flush()


if __name__ == "__main__":
    main()
