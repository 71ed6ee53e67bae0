"""JSON-RPC error codes and the one boundary where any exception becomes a wire error."""

from __future__ import annotations

import logging
from typing import Any

from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

logger = logging.getLogger(__name__)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603


class JsonRpcError(Exception):
    """An error that travels to the peer as `{"code", "message", "data"}`.

    Subclasses set `code`; the gateway's own errors (errors.py) derive from this,
    so every endpoint turns them into the same wire shape.
    """

    code: int = INTERNAL_ERROR

    def __init__(self, message: str, *, data: dict[str, Any] | None = None, code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.data: dict[str, Any] = data if data is not None else {}
        if code is not None:
            self.code = code

    def to_wire(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data:
            error["data"] = self.data
        return error


def error_body(exc: BaseException) -> dict[str, Any]:
    """The wire `error` object for `exc`: the single exception -> JSON-RPC error mapping.

    Our own errors keep code, message and data; the SDK's MCPError keeps what the peer or
    handler said; a pydantic validation failure is invalid params (the first problem, not
    a dump of the model); anything else is an internal error that names only the
    exception type (its text may carry paths or secrets), logged in full here.
    """
    if isinstance(exc, JsonRpcError):
        return exc.to_wire()
    if isinstance(exc, MCPError):
        return exc.error.model_dump(mode="json", exclude_none=True)
    if isinstance(exc, ValidationError):
        first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": str(exc)}
        where = ".".join(str(part) for part in first.get("loc", ()))
        return {
            "code": INVALID_PARAMS,
            "message": f"Invalid params: {where + ': ' if where else ''}{first.get('msg', 'invalid')}",
        }
    logger.error("internal error answered to a peer", exc_info=exc)
    return {"code": INTERNAL_ERROR, "message": f"Internal error ({type(exc).__name__})"}


def as_mcp_error(error: dict[str, Any]) -> MCPError:
    """A peer's wire error as the SDK's exception type (what SDK sessions expect to see raised)."""
    code = error.get("code")
    message = error.get("message")
    return MCPError(
        code if isinstance(code, int) and not isinstance(code, bool) else INTERNAL_ERROR,
        message if isinstance(message, str) else "error",
        error.get("data"),
    )
