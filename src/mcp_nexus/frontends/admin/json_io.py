"""JSON in and out of the admin API: one response class, one body reader, one error-to-status table.

Why a response class of our own: Starlette's JSONResponse writes UTF-8 with `ensure_ascii=False`,
so a lone surrogate (`"\\ud800"`, valid in a JSON escape but not encodable as UTF-8) in a tool's
result raised inside the response and became a 500. Escaping non-ASCII keeps every string
encodable; NaN and Infinity (not JSON) become null.

Why a body reader: `json.loads` accepts NaN/Infinity, recurses once per nesting level (100,000
nested arrays raised RecursionError: a 500), and lets lone surrogates through to the pipeline,
which cannot encode them. Each of those is now a 400 naming where in the body the problem is.
"""

from __future__ import annotations

import json
import math
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response

from mcp_nexus import errors as codes
from mcp_nexus.errors import GatewayError, UnknownToolError

MAX_JSON_DEPTH = 100  # nesting levels a request body may have; the pipeline handles ~200


class AdminJSONResponse(JSONResponse):
    """A JSON response that can always be encoded: ASCII-escaped, non-finite floats as null."""

    def render(self, content: Any) -> bytes:
        try:
            text = json.dumps(content, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
        except ValueError:  # NaN or Infinity somewhere in a result
            text = json.dumps(_finite(content), ensure_ascii=True, separators=(",", ":"))
        return text.encode("ascii")


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


def error_response(status: int, message: str, **extra: Any) -> AdminJSONResponse:
    """Every admin error has this shape: {"error": "<what went wrong>", ...details}."""
    return AdminJSONResponse({"error": message, **extra}, status_code=status)


API_PREFIX = "/api/"


async def http_error(request: Request, exc: Exception) -> Response:
    """Starlette's own errors (no route: 404, wrong method: 405) in the admin API's shape under /api/.

    Why: a request no route matched got Starlette's plain-text "Not Found", which no client of
    a JSON API expects and the API's document does not describe. Elsewhere (the dashboard's
    pages, /healthz) the answer is Starlette's, unchanged.
    """
    assert isinstance(exc, HTTPException)
    if exc.status_code in (204, 304):
        return Response(status_code=exc.status_code, headers=exc.headers)
    if not request.url.path.startswith(API_PREFIX):
        return PlainTextResponse(exc.detail, status_code=exc.status_code, headers=exc.headers)
    message = (
        f"no such endpoint: {request.method} {request.url.path}" if exc.status_code == 404 else exc.detail
    )
    response = error_response(exc.status_code, message)
    response.headers.update(exc.headers or {})
    return response


class BadBodyError(ValueError):
    """A request body the admin API refuses with 400; `path` says where (JSONPath), if known."""

    def __init__(self, message: str, path: str | None = None) -> None:
        super().__init__(message)
        self.path = path

    def response(self) -> AdminJSONResponse:
        extra = {} if self.path is None else {"path": self.path}
        return error_response(400, str(self), **extra)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _has_lone_surrogate(text: str) -> bool:
    return not text.isascii() and any("\ud800" <= char <= "\udfff" for char in text)


def check_json_value(value: Any, path: str = "$") -> None:
    """Depth and string checks, without recursion (a deep value must not exhaust the stack)."""
    pending: list[tuple[Any, str, int]] = [(value, path, 0)]
    while pending:
        item, where, depth = pending.pop()
        if depth > MAX_JSON_DEPTH:
            raise BadBodyError(f"the body is nested more than {MAX_JSON_DEPTH} levels deep", where)
        if isinstance(item, str) and _has_lone_surrogate(item):
            raise BadBodyError("a string contains a lone UTF-16 surrogate, which is not valid Unicode", where)
        if isinstance(item, dict):
            for key, child in item.items():
                child_path = f"{where}.{key}" if key.isidentifier() else f"{where}[{json.dumps(key)}]"
                if _has_lone_surrogate(key):
                    raise BadBodyError(
                        "a key contains a lone UTF-16 surrogate, which is not valid Unicode", where
                    )
                pending.append((child, child_path, depth + 1))
        elif isinstance(item, list):
            pending.extend((child, f"{where}[{index}]", depth + 1) for index, child in enumerate(item))


async def read_json_object(request: Request, example: str) -> dict[str, Any]:
    """The body as a JSON object (`{}` when there is none); BadBodyError says what is wrong and where.

    Only a truly empty body means "no body": whitespace alone is not JSON.
    """
    raw = await request.body()
    if not raw:
        return {}
    try:
        body = json.loads(raw, parse_constant=_reject_constant)
    except RecursionError:
        raise BadBodyError(f"the body is nested more than {MAX_JSON_DEPTH} levels deep") from None
    except ValueError as exc:  # includes invalid UTF-8 (UnicodeDecodeError)
        raise BadBodyError(f"the body is not valid JSON ({exc}); expected an object like {example}") from None
    if not isinstance(body, dict):
        raise BadBodyError(f"the body must be a JSON object like {example}, got {type(body).__name__}", "$")
    check_json_value(body)
    return body


# What a gateway error means for an HTTP client, by JSON-RPC code (docs/GOVERNANCE.md).
# -32603 and codes of an upstream's own are the upstream failing: 502.
STATUS_BY_CODE: dict[int, int] = {
    codes.PARSE_ERROR: 502,  # the upstream's answer was not JSON (the request body is checked above)
    codes.INVALID_REQUEST: 400,
    codes.METHOD_NOT_FOUND: 404,
    codes.INVALID_PARAMS: 422,  # the arguments do not match the tool's input schema
    codes.INTERNAL_ERROR: 502,
    codes.TIMEOUT: 504,
    codes.PERMISSION_DENIED: 403,
    codes.NOT_FOUND: 503,  # no ready server can answer the tool
}
UNKNOWN_TOOL_STATUS = 404  # UnknownToolError carries -32602 as MCP asks; over HTTP it is a 404


def status_of(error: GatewayError) -> int:
    if isinstance(error, UnknownToolError):
        return UNKNOWN_TOOL_STATUS
    return STATUS_BY_CODE.get(error.code, 502)


def gateway_error_response(error: GatewayError) -> AdminJSONResponse:
    """The error with its code and data; an argument problem also names the field (`path`)."""
    extra: dict[str, Any] = {"code": error.code, "data": error.data}
    where = error.data.get("path")
    if error.code == codes.INVALID_PARAMS and isinstance(where, str) and where.startswith("$"):
        extra["path"] = "$.arguments" + where[1:]  # the validator's path is relative to the arguments
    return error_response(status_of(error), error.message, **extra)
