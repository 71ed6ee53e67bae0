"""Every failure of a call becomes a GatewayError with a category, a code and a short message.

The error data always carries `category`, `method`, `timestamp` and `original_error` (what
actually went wrong, for operators), so a client sees one consistent shape whichever step
or server failed. The code mapping is documented in docs/GOVERNANCE.md.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from typing import Any

from mcp.shared.exceptions import MCPError

from mcp_nexus import errors as codes
from mcp_nexus.errors import (
    GatewayError,
    InternalError,
    InvalidArgumentsError,
    InvalidRequestError,
    MethodNotFoundError,
    NotFoundError,
    ParseError,
    PermissionDeniedError,
    ToolTimeoutError,
    UnavailableError,
)
from mcp_nexus.pipeline.call import CallNext, ToolCall, ToolOutcome
from mcp_nexus.upstream.upstream import UpstreamUnavailable

CATEGORIES: dict[int, str] = {
    codes.PARSE_ERROR: "invalid request",
    codes.INVALID_REQUEST: "invalid request",
    codes.METHOD_NOT_FOUND: "not found",
    codes.INVALID_PARAMS: "invalid arguments",
    codes.INTERNAL_ERROR: "server error",
    codes.TIMEOUT: "network/timeout",
    codes.PERMISSION_DENIED: "permission denied",
    codes.NOT_FOUND: "not found/unavailable",
}

_BY_CODE: dict[int, type[GatewayError]] = {
    codes.PARSE_ERROR: ParseError,
    codes.INVALID_REQUEST: InvalidRequestError,
    codes.METHOD_NOT_FOUND: MethodNotFoundError,
    codes.INVALID_PARAMS: InvalidArgumentsError,
    codes.INTERNAL_ERROR: InternalError,
    codes.TIMEOUT: ToolTimeoutError,
    codes.PERMISSION_DENIED: PermissionDeniedError,
    codes.NOT_FOUND: NotFoundError,
}


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _from_exception(exc: BaseException, tool: str) -> GatewayError:
    if isinstance(exc, MCPError):
        cls = _BY_CODE.get(exc.error.code, InternalError)
        # The server's own data stays as it sent it (clients read fields such as requiredCapabilities);
        # the classification keys are added beside them.
        data = dict(exc.error.data) if isinstance(exc.error.data, dict) else {}
        data.setdefault("original_error", exc.error.model_dump(mode="json", exclude_none=True))
        error = cls(exc.error.message, data=data)
        error.code = exc.error.code  # a server's own code (even a custom one) is kept as it sent it
        return error
    original = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, PermissionError):
        return PermissionDeniedError(
            f"permission denied while calling {tool}", data={"original_error": original}
        )
    if isinstance(exc, FileNotFoundError):
        return NotFoundError(f"something {tool} needs was not found", data={"original_error": original})
    if isinstance(exc, TimeoutError):
        return ToolTimeoutError(f"tool {tool} timed out", data={"original_error": original})
    if isinstance(exc, UpstreamUnavailable | ConnectionError | OSError):
        return UnavailableError(f"the server of {tool} cannot be reached", data={"original_error": original})
    if isinstance(exc, json.JSONDecodeError):
        return ParseError(f"a message about {tool} was not valid JSON", data={"original_error": original})
    return InternalError(f"internal error while calling {tool}", data={"original_error": original})


def classify(exc: BaseException, call: ToolCall, method: str = "tools/call") -> GatewayError:
    """`exc` as a GatewayError whose data has category, method, timestamp and original_error."""
    error = exc if isinstance(exc, GatewayError) else _from_exception(exc, call.name)
    data: dict[str, Any] = error.data
    data.setdefault("category", CATEGORIES.get(error.code, "server error"))
    data.setdefault("method", method)
    data.setdefault("timestamp", _now())
    data.setdefault("tool", call.name)
    if "original_error" not in data:
        cause = error.__cause__
        data["original_error"] = f"{type(cause).__name__}: {cause}" if cause is not None else error.message
    return error


class ErrorStep:
    """Outermost governance step: whatever fails below leaves as a classified GatewayError."""

    async def __call__(self, call: ToolCall, call_next: CallNext) -> ToolOutcome:
        try:
            return await call_next(call)
        except GatewayError as exc:
            classify(exc, call)  # fills in the data in place; the error keeps its traceback
            raise
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            raise classify(exc, call) from exc
