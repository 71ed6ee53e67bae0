"""`find_tools` and `call_tool`: the gateway's two tools for search mode (progressive disclosure).

`find_tools(query, tags?, limit?)` answers from the tool index (BM25 + sentence vectors,
catalog/index_search.py) with each tool's exposed name, the form that calls it from
`python_sandbox` code (`code`, catalog/code_form.py), description, input schema and tags, and
whether a server can answer it right now. `call_tool(name, arguments)` is unwrapped by the gateway before the
pipeline (`unwrap_call_tool`): the named tool then runs through the pipeline exactly as if the
client had called it by name, with its own cache, limits, offload, timeout and fallback.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types

from mcp_nexus.catalog.catalog import Catalog
from mcp_nexus.catalog.code_form import code_call_form
from mcp_nexus.catalog.index import ToolIndex
from mcp_nexus.catalog.local_tools import LocalTool
from mcp_nexus.catalog.tool_cards import fit_cards
from mcp_nexus.catalog.tool_listing import CALL_TOOL, FIND_TOOLS
from mcp_nexus.config.tool_search import ToolSearchSettings
from mcp_nexus.errors import GatewayError, InvalidArgumentsError
from mcp_nexus.pipeline.call import Caller, ToolOutcome

MAX_FIND_LIMIT = 50
# Bytes of the hits' JSON in the text (the structured copy holds the same): five hits of real
# servers fit whole; the answer is never offloaded in any case (sized_by_gateway).
ANSWER_BUDGET = 4000

FIND_DESCRIPTION = """Search the gateway's tools by what they do; returns the best matches with their names,
descriptions and input schemas. Then call one with call_tool(name, arguments), or from
python_sandbox code as each hit's `code` shows (e.g. tools.git.git_log(repo_path=...)).
Write the query in English or Chinese, e.g. "navigate robot to a position" or "打开客厅的灯".
`tags` keeps only tools with every tag given (e.g. ["navigation"]; also notification,
emergency, perception, read-only, destructive)."""

CALL_DESCRIPTION = """Call any gateway tool by its name (as find_tools returns it) with its arguments.
The call is governed like a direct call: the same validation, limits, cache and timeouts."""

FIND_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "What the tool should do, in a few words."},
        "tags": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Only tools with all these tags.",
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_FIND_LIMIT,
            "description": "At most this many.",
        },
    },
    "required": ["query"],
    "additionalProperties": False,
}

CALL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "The tool's name, e.g. time.get_current_time."},
        "arguments": {"type": "object", "description": "The tool's arguments, as its input schema says."},
    },
    "required": ["name"],
    "additionalProperties": False,
}

CallThrough = Callable[[str, dict[str, Any], Caller | None], Awaitable[ToolOutcome]]


def unwrap_call_tool(arguments: dict[str, Any] | None) -> tuple[str, dict[str, Any]]:
    """`call_tool`'s (name, arguments); a clear InvalidArgumentsError naming the field otherwise."""
    arguments = arguments or {}
    name = arguments.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidArgumentsError(
            "call_tool needs 'name': the tool's name as find_tools returned it (a string)",
            data={"name": CALL_TOOL, "path": "$.name"},
        )
    if name == CALL_TOOL:
        raise InvalidArgumentsError(
            "call_tool cannot call itself: give the name of the tool to run", data={"name": CALL_TOOL}
        )
    inner = arguments.get("arguments", {})
    if inner is None:
        inner = {}
    if not isinstance(inner, dict):
        raise InvalidArgumentsError(
            f"call_tool's 'arguments' must be an object, got {type(inner).__name__}",
            data={"name": CALL_TOOL, "path": "$.arguments"},
        )
    extra = sorted(set(arguments) - {"name", "arguments"})
    if extra:
        raise InvalidArgumentsError(
            f"call_tool takes only 'name' and 'arguments'; put {', '.join(map(repr, extra))} inside 'arguments'",
            data={"name": CALL_TOOL},
        )
    return name, inner


def _text(
    text: str, *, error: bool = False, structured: dict[str, Any] | None = None
) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], is_error=error, structured_content=structured
    )


def search_tools(
    index: ToolIndex,
    catalog: Catalog,
    settings: Callable[[], ToolSearchSettings],
    call: CallThrough,
) -> list[LocalTool]:
    """The two local tools; `call` runs a tool through the gateway's pipeline (for direct use of call_tool)."""

    async def find(arguments: dict[str, Any], caller: Caller | None = None) -> types.CallToolResult:
        query = arguments.get("query", "")
        tags = arguments.get("tags") or []
        limit = arguments.get("limit", settings().limit)
        if not isinstance(query, str):
            return _text(f"'query' must be a string, got {type(query).__name__}", error=True)
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            return _text("'tags' must be a list of strings, e.g. [\"navigation\"]", error=True)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_FIND_LIMIT:
            return _text(
                f"'limit' must be a whole number from 1 to {MAX_FIND_LIMIT}, got {limit!r}", error=True
            )
        if not query.strip() and not tags:
            return _text("give a 'query' (what the tool should do) or 'tags'", error=True)
        reaches = caller.reaches if caller is not None else None
        if reaches is None:
            found = index.search(query, tags, limit)
        else:  # the caller's profile (profiles/): the whole ranking, filtered, so its own tools are found
            every = index.search(query, tags, max(limit, len(catalog.tools)))
            found = [entry for entry in every if reaches(entry.name)][:limit]
        rows, left_out = fit_cards(
            [
                {
                    "name": entry.name,
                    "code": code_call_form(entry.name, entry.input_schema, catalog.separator),
                    "description": entry.description,
                    "input_schema": entry.input_schema,
                    "tags": entry.tags,
                    "server": entry.server_id,
                    "available": entry.name in catalog.tools,
                }
                for entry in found
            ],
            ANSWER_BUDGET,
        )
        structured: dict[str, Any] = {"query": query, "tags": tags, "tools": rows}
        if left_out:
            structured["more"] = left_out
        if not rows:
            known = ", ".join(index.tags()) or "none yet"
            return _text(
                f"No tool matched {query!r}{f' with tags {tags}' if tags else ''}. "
                f"Try other words (English or Chinese) or a tag; tags in use: {known}.",
                structured=structured,
            )
        answer = _text(json.dumps(rows, ensure_ascii=False, separators=(",", ":")), structured=structured)
        if left_out:  # a second item: the first stays one JSON array
            more = f"More matches, left out to keep this answer short (search for them by name): {', '.join(left_out)}"
            answer.content.append(types.TextContent(type="text", text=more))
        return answer

    async def call_tool(arguments: dict[str, Any], caller: Caller | None = None) -> types.CallToolResult:
        # Reached only when something calls this handler directly: the gateway unwraps call_tool first.
        try:
            name, inner = unwrap_call_tool(arguments)
            outcome = await call(name, inner, caller)
        except GatewayError as exc:
            return _text(exc.message, error=True)
        if isinstance(outcome, types.CallToolResult):
            return outcome
        return _text(f"{name} asks for input: call it directly rather than through call_tool", error=True)

    read_only = types.ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
    return [
        LocalTool(
            types.Tool(
                name=FIND_TOOLS, description=FIND_DESCRIPTION, input_schema=FIND_SCHEMA, annotations=read_only
            ),
            find,
            sized_by_gateway=True,
        ),
        LocalTool(
            types.Tool(name=CALL_TOOL, description=CALL_DESCRIPTION, input_schema=CALL_SCHEMA), call_tool
        ),
    ]
