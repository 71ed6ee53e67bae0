"""Errors a call can end with, each carrying its JSON-RPC code (docs/GOVERNANCE.md)."""

from __future__ import annotations

from mcp_nexus.jsonrpc.errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    JsonRpcError,
)

__all__ = ["INTERNAL_ERROR", "INVALID_PARAMS", "INVALID_REQUEST", "METHOD_NOT_FOUND", "PARSE_ERROR"]

TIMEOUT = -32001
PERMISSION_DENIED = -32002
NOT_FOUND = -32003


class GatewayError(JsonRpcError):
    """A failure the gateway reports to the caller as a JSON-RPC error (code, message, data)."""

    code = INTERNAL_ERROR


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
