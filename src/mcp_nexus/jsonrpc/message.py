"""What one decoded JSON value is, in JSON-RPC 2.0 terms: a request, a notification, a response, or invalid.

Checked once, here, for every endpoint, so a malformed message is answered the same way
everywhere: an invalid id (or a message that is not JSON-RPC 2.0) answers with `id: null`, params that are not an object answer
-32602 with the request's id, a message that cannot be a request answers -32600, and a
broken notification or response is dropped (nothing may answer it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp_nexus.jsonrpc.errors import INVALID_PARAMS, INVALID_REQUEST

RequestId = str | int


def valid_id(value: Any) -> bool:
    """MCP ids are strings or integers (never null, booleans, floats, arrays or objects)."""
    return isinstance(value, str | int) and not isinstance(value, bool)


@dataclass(frozen=True, slots=True)
class Request:
    id: RequestId
    method: str
    params: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class Notification:
    method: str
    params: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class Response:
    id: RequestId
    result: dict[str, Any] | None
    error: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class Invalid:
    """Not a usable message. `answer` is False when nothing may be sent back (notifications, responses)."""

    id: RequestId | None
    code: int
    reason: str
    answer: bool = True

    def error(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.reason}


Message = Request | Notification | Response | Invalid


def classify(value: Any) -> Message:
    if not isinstance(value, dict):
        reason = "batches are not supported" if isinstance(value, list) else "expected a JSON object"
        return Invalid(None, INVALID_REQUEST, f"Invalid request: {reason}")
    raw_id = value.get("id")
    has_id = "id" in value
    message_id = raw_id if valid_id(raw_id) else None
    method = value.get("method")
    if value.get("jsonrpc") != "2.0":
        # Not a JSON-RPC 2.0 message at all: its id cannot be trusted either (the spec's Null).
        return Invalid(None, INVALID_REQUEST, 'Invalid request: "jsonrpc" must be "2.0"')
    if "method" not in value:
        if "result" not in value and "error" not in value:
            return Invalid(None, INVALID_REQUEST, 'Invalid request: no "method"')
        if ("result" in value) == ("error" in value) or message_id is None:
            # A malformed response: answering it could start an error ping-pong between peers.
            return Invalid(None, INVALID_REQUEST, "Invalid response", answer=False)
        result, error = value.get("result"), value.get("error")
        if "error" in value and not isinstance(error, dict):
            error = {"code": INVALID_REQUEST, "message": "malformed error"}
        if "result" in value and not isinstance(result, dict):
            result = {}
        return Response(message_id, result if "result" in value else None, error)
    if not isinstance(method, str) or not method:
        return Invalid(
            message_id, INVALID_REQUEST, 'Invalid request: "method" must be a non-empty string', has_id
        )
    params = value.get("params")
    if not has_id:
        if params is not None and not isinstance(params, dict):
            return Invalid(None, INVALID_PARAMS, "Invalid params", answer=False)
        return Notification(method, params)
    if message_id is None:
        return Invalid(None, INVALID_REQUEST, 'Invalid request: "id" must be a string or an integer')
    if params is not None and not isinstance(params, dict):
        return Invalid(message_id, INVALID_PARAMS, f"Invalid params for {method}: expected an object")
    return Request(message_id, method, params)
