"""Errors a call can end with, each carrying its JSON-RPC code (docs/GOVERNANCE.md)."""

from __future__ import annotations

from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
TIMEOUT = -32001
PERMISSION_DENIED = -32002
NOT_FOUND = -32003


class GatewayError(Exception):
    """A failure the gateway reports to the caller as a JSON-RPC error."""

    code = INTERNAL_ERROR

    def __init__(self, message: str, *, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data or {}


class UnknownToolError(GatewayError):
    # The MCP spec answers an unknown tool name with Invalid params.
    code = INVALID_PARAMS


class InvalidArgumentsError(GatewayError):
    code = INVALID_PARAMS


class ToolTimeoutError(GatewayError):
    code = TIMEOUT


class UnavailableError(GatewayError):
    code = NOT_FOUND


class NotFoundError(GatewayError):
    code = NOT_FOUND


class ParseError(GatewayError):
    code = PARSE_ERROR


class InvalidRequestError(GatewayError):
    code = INVALID_REQUEST


class MethodNotFoundError(GatewayError):
    code = METHOD_NOT_FOUND


class PermissionDeniedError(GatewayError):
    code = PERMISSION_DENIED


class InternalError(GatewayError):
    code = INTERNAL_ERROR
