"""Admin endpoints of the tool index; mounted by the HTTP app behind its guard (token, Host, Origin).

GET  /api/index                   status: source (cache|sync|stale-cache|empty|loading), stale, servers, ...
GET  /api/index/tools             entries; ?tag=navigation filters, ?q=words searches (BM25), ?limit=N
GET  /api/index/tools/{name}      one entry, by exposed or server-side name
POST /api/index/sync              ask every server for its tools now and apply the sync rules
GET  /api/index/export            the index as the controller design's JSON document
POST /api/index/import            replace the index with such a document (and save it)
"""

from __future__ import annotations

import difflib
from typing import Any

from starlette.convertors import PathConvertor, register_url_convertor
from starlette.requests import Request
from starlette.routing import Route

from mcp_nexus.catalog.index_snapshot import IndexFormatError, IndexSnapshot
from mcp_nexus.frontends.admin.json_io import (
    AdminJSONResponse,
    BadBodyError,
    error_response,
    read_json_object,
)
from mcp_nexus.gateway import Gateway

MAX_LIMIT = 1000
QUERY_PARAMETERS = ("tag", "q", "limit")


class _AnyTextConvertor(PathConvertor):
    """Like `path`, also across newlines: any tool name reaches the handler (and its JSON 404)."""

    regex = r"[\s\S]*"


register_url_convertor("nexus_any", _AnyTextConvertor())


def index_routes(gateway: Gateway) -> list[Route]:
    index, sync = gateway.index, gateway.index_sync

    async def status(request: Request) -> AdminJSONResponse:
        return AdminJSONResponse(sync.describe())

    async def tools(request: Request) -> AdminJSONResponse:
        params = request.query_params
        unknown = sorted(set(params) - set(QUERY_PARAMETERS))
        if unknown:
            return error_response(
                400, f"unknown query parameter {unknown[0]!r}; expected {', '.join(QUERY_PARAMETERS)}"
            )
        tag, query = params.get("tag"), params.get("q")
        raw_limit = params.get("limit")
        limit = MAX_LIMIT
        if raw_limit is not None:
            try:
                limit = int(raw_limit)
            except ValueError:
                limit = 0
            if not 1 <= limit <= MAX_LIMIT:
                return error_response(
                    400, f"'limit' must be a whole number from 1 to {MAX_LIMIT}, got {raw_limit!r}"
                )
        if query:
            found = index.search(query, [tag] if tag else None, limit)
        else:
            found = (index.get_tools_by_tag(tag) if tag else index.get_all_tools())[:limit]
        return AdminJSONResponse({"version": index.version, "tools": [entry.as_dict() for entry in found]})

    async def one_tool(request: Request) -> AdminJSONResponse:
        name = request.path_params["name"]
        entry = index.get_tool_entry(name)
        if entry is None:
            names = [e.name for e in index.get_all_tools()]
            return error_response(
                404,
                f"no tool named {name!r} in the index",
                closest=difflib.get_close_matches(name, names, n=3, cutoff=0.5),
            )
        return AdminJSONResponse(entry.as_dict())

    async def run_sync(request: Request) -> AdminJSONResponse:
        return AdminJSONResponse(await sync.sync("requested over the admin API"))

    async def export(request: Request) -> AdminJSONResponse:
        return AdminJSONResponse(index.snapshot.to_document())

    async def import_(request: Request) -> AdminJSONResponse:
        try:
            body = await read_json_object(
                request, '{"version": "1.0.0", "last_sync": "...", "servers": [...]}'
            )
            # An entry that could never be served (a name the catalog refuses) is left out and
            # reported, rather than costing the whole import.
            skipped: list[str] = []
            snapshot = IndexSnapshot.from_document(body, sync.namer, skip_bad_names=True, skipped=skipped)
        except BadBodyError as exc:
            return exc.response()
        except IndexFormatError as exc:
            return error_response(400, f"not a tool index document: {exc}")
        status = await sync.import_snapshot(snapshot, "the admin API")
        return AdminJSONResponse({**status, "skipped": skipped} if skipped else status)

    return [
        Route("/api/index", status, methods=["GET"]),
        Route("/api/index/tools", tools, methods=["GET"]),
        Route("/api/index/tools/{name:nexus_any}", one_tool, methods=["GET"]),
        Route("/api/index/sync", run_sync, methods=["POST"]),
        Route("/api/index/export", export, methods=["GET"]),
        Route("/api/index/import", import_, methods=["POST"]),
    ]


# -- OpenAPI (merged into admin_api.openapi_document) --------------------------------------------

_STRINGS = {"type": "array", "items": {"type": "string"}}
ENTRY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "server_id": {"type": "string"},
        "tool_name": {"type": "string"},
        "name": {"type": "string", "description": "the exposed (namespaced) name"},
        "description": {"type": "string"},
        "input_schema": {"type": "object"},
        "tags": _STRINGS,
        "blocking": {"type": "boolean"},
        "cost_estimate": {"enum": ["low", "medium", "high"]},
        "last_updated": {"type": "string", "description": "ISO 8601"},
        "annotations": {"type": "object"},
    },
    "required": ["server_id", "tool_name", "name", "tags", "blocking", "cost_estimate"],
}
_DOCUMENT_TOOL = {
    "type": "object",
    "properties": {
        "tool_name": {"type": "string", "minLength": 1},
        "name": {"type": "string", "minLength": 1},
        "description": {"type": "string"},
        "input_schema": {"type": "object"},
        "tags": _STRINGS,
        "blocking": {"type": "boolean"},
        "cost_estimate": {"enum": ["low", "medium", "high"]},
        "last_updated": {"type": "string"},
        "annotations": {"type": "object"},
    },
    "required": ["tool_name"],
}
DOCUMENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "version": {"type": "string"},
        "last_sync": {"type": ["string", "null"], "description": "ISO 8601"},
        "servers": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "server_id": {"type": "string", "minLength": 1},
                    "tools": {"type": "array", "items": _DOCUMENT_TOOL},
                },
                "required": ["server_id"],
            },
        },
    },
    "required": ["servers"],
}
STATUS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "source": {"enum": ["empty", "loading", "cache", "sync", "stale-cache"]},
        "stale": {"type": "boolean"},
        "message": {"type": "string"},
        "version": {"type": "string"},
        "last_sync": {"type": ["string", "null"]},
        "age_seconds": {"type": ["number", "null"]},
        "ttl_seconds": {"type": ["number", "null"]},
        "tools": {"type": "integer"},
        "tags": {"type": "object"},
        "syncs": {"type": "integer"},
        "saved_to": {"type": ["string", "null"]},
        "save_error": {"type": ["string", "null"]},
        "skipped": {
            "type": "array",
            "items": {"type": "string"},
            "description": "import: entries left out, why",
        },
        "servers": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "server_id": {"type": "string"},
                    "state": {"enum": ["synced", "cached", "failed"]},
                    "tools": {"type": "integer"},
                    "error": {"type": ["string", "null"]},
                    "last_sync": {"type": ["string", "null"]},
                },
            },
        },
    },
    "required": ["source", "stale", "tools", "servers"],
}


def index_openapi_paths(
    json_response: Any, guarded: Any, error: dict[str, Any], json_body: Any
) -> dict[str, Any]:
    """The index operations for the admin API's OpenAPI document (helpers passed in from api.py)."""
    name = {"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}
    listing = {
        "type": "object",
        "properties": {"version": {"type": "string"}, "tools": {"type": "array", "items": ENTRY_SCHEMA}},
        "required": ["version", "tools"],
    }
    return {
        "/api/index": {
            "get": {
                "summary": "The tool index's status: where its contents came from, staleness, servers",
                "responses": guarded({"200": json_response(STATUS_SCHEMA)}),
            }
        },
        "/api/index/tools": {
            "get": {
                "summary": "Index entries, filtered by tag and/or searched (BM25) with q",
                # The query parameters are described here rather than declared: schemathesis's
                # negative mode reports a false "accepted" when an extra parameter it adds
                # serialises to nothing (an empty array), which no server can reject.
                "description": "Query parameters: `tag` (only tools with this tag), `q` (search words, "
                f"best first), `limit` (1-{MAX_LIMIT}). Any other parameter is refused with 400.",
                "responses": guarded(
                    {
                        "200": json_response(listing),
                        "400": json_response(error, "A bad limit or an unknown parameter"),
                    }
                ),
            }
        },
        "/api/index/tools/{name}": {
            "get": {
                "summary": "One index entry, by exposed or server-side name",
                "parameters": [name],
                "responses": guarded(
                    {"200": json_response(ENTRY_SCHEMA), "404": json_response(error, "Not in the index")}
                ),
            }
        },
        "/api/index/sync": {
            "post": {
                "summary": "Ask every server for its tools now and apply the sync rules",
                "responses": guarded({"200": json_response(STATUS_SCHEMA)}),
            }
        },
        "/api/index/export": {
            "get": {
                "summary": "The index as the controller design's JSON document",
                "responses": guarded({"200": json_response(DOCUMENT_SCHEMA)}),
            }
        },
        "/api/index/import": {
            "post": {
                "summary": "Replace the index with a document in the design's format (and save it)",
                "requestBody": {**json_body(DOCUMENT_SCHEMA), "required": True},
                "responses": guarded(
                    {
                        "200": json_response(STATUS_SCHEMA),
                        "400": json_response(error, "Not an index document"),
                    }
                ),
            }
        },
    }
