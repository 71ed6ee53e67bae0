"""Tools as chat-completions function definitions, with names the APIs accept and the way back.

Function names must match `[A-Za-z0-9_-]{1,64}` (OpenAI, DashScope); gateway names hold dots
(`cortex.add_entity`) and may be longer or non-ASCII. Each name is mapped to a legal one
(`.` -> `__`, anything else illegal -> `_`, too long -> cut plus a short hash) unique within
one request, and mapped back through the same table: a name the model invents is not in
it, which is how an unknown tool is told apart from a real one.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from typing import Any

from mcp_nexus.control.tool_source import ToolInfo

MAX_FUNCTION_NAME = 64
_ILLEGAL = re.compile(r"[^A-Za-z0-9_-]")
_LEGAL = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
MAX_DESCRIPTION_CHARS = 1024


def _digest(name: str) -> str:
    return hashlib.sha1(name.encode()).hexdigest()[:8]


def function_name(tool_name: str) -> str:
    """A legal function name for `tool_name` (made unique per request by `FunctionNames`)."""
    candidate = _ILLEGAL.sub("_", tool_name.replace(".", "__")) or "tool"
    if len(candidate) > MAX_FUNCTION_NAME:
        # Keep it recognisable; the hash of the original keeps two long names apart.
        candidate = f"{candidate[: MAX_FUNCTION_NAME - 9]}_{_digest(tool_name)}"
    return candidate


class FunctionNames:
    """The two-way table of one request: gateway tool name <-> function name."""

    def __init__(self, tool_names: Iterable[str]) -> None:
        self.to_function: dict[str, str] = {}
        self.to_tool: dict[str, str] = {}
        for name in tool_names:
            fn = function_name(name)
            if fn in self.to_tool:
                fn = f"{fn[: MAX_FUNCTION_NAME - 9]}_{_digest(name)}"
            assert _LEGAL.match(fn), fn
            self.to_function[name] = fn
            self.to_tool[fn] = name

    def tool_for(self, function: str) -> str | None:
        """The gateway name behind a function name the model called; None when it was never offered."""
        return self.to_tool.get(function)


def parameters_schema(input_schema: dict[str, Any]) -> dict[str, Any]:
    """An object schema the APIs accept: a tool without a usable schema takes an empty object."""
    if not isinstance(input_schema, dict) or input_schema.get("type") not in (None, "object"):
        return {"type": "object", "properties": {}}
    schema = dict(input_schema)
    schema["type"] = "object"
    schema.setdefault("properties", {})
    return schema


def function_tools(tools: list[ToolInfo]) -> tuple[list[dict[str, Any]], FunctionNames]:
    """`tools=[...]` for a chat-completions request, and the table to map the answer back."""
    names = FunctionNames(tool.tool_name for tool in tools)
    functions = [
        {
            "type": "function",
            "function": {
                "name": names.to_function[tool.tool_name],
                "description": (tool.description or tool.tool_name)[:MAX_DESCRIPTION_CHARS],
                "parameters": parameters_schema(tool.input_schema),
            },
        }
        for tool in tools
    ]
    return functions, names
