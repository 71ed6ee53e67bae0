"""The gateway's side of the tool channel: what code in python_sandbox may ask, and the answers.

One channel serves one run. The code's side (sandbox/channel_client.py) sends JSON lines;
nothing it sends is trusted: every line is parsed, bounded and checked here, and whatever goes
wrong is answered with an error naming the problem (and the setting that bounds it), never an
exception that could end the gateway's side early. Requests are served one at a time, in order.

Bounds per run: `sandbox_tool_calls` (calls and searches), `sandbox_request_bytes` (a line the
code sends), `sandbox_answer_bytes` (an answer sent back), and a few fixed ones against floods of
bookkeeping requests or garbage: past them the channel closes and the code's next call raises.

Every tool call runs through the gateway's whole pipeline as the run's caller, marked
`via="sandbox"` (metrics, the recent-calls log, traces). A result the pipeline offloaded for the
model is read back from its file: the code gets the data, never the alert.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import socket
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

from mcp_nexus.catalog.code_form import code_call_form, code_path
from mcp_nexus.catalog.index_entry import IndexEntry
from mcp_nexus.catalog.tool_listing import CALL_TOOL, FIND_TOOLS
from mcp_nexus.errors import GatewayError
from mcp_nexus.pipeline.call import Caller, ToolOutcome
from mcp_nexus.pipeline.result_value import ReadOffloaded, UnreadableResult, result_text, step_value
from mcp_nexus.pipeline.sandbox_tool import SANDBOX_TOOL_NAME
from mcp_nexus.pipeline.search_tools import MAX_FIND_LIMIT, unwrap_call_tool
from mcp_nexus.pipeline.steps.metrics import error_class
from mcp_nexus.pipeline.steps.offload import offloaded_success
from mcp_nexus.pipeline.steps.ratelimit import RATE_LIMIT_META_KEY

logger = logging.getLogger(__name__)

SANDBOX_VIA = "sandbox"
"""`Caller.via` of a call made by code in python_sandbox."""

MAX_BOOKKEEPING_REQUESTS = 64
"""start, list and result requests one run may send: a legitimate run sends a handful."""
MAX_BAD_LINES = 32
"""Malformed lines answered before the channel closes: a client that sends them is broken or hostile."""
_READ_CHUNK = 64 * 1024
_NOT_FOR_CODE = frozenset({SANDBOX_TOOL_NAME, FIND_TOOLS, CALL_TOOL})
"""Tools code does not get stubs for: python_sandbox (refused inside a run), and search mode's
find_tools/call_tool (the code has its own)."""

CallThrough = Callable[[str, dict[str, Any], Caller], Awaitable[ToolOutcome]]
NO_RESULT: Any = object()
"""The run's result before (or without) a top-level `return`."""


@dataclass(frozen=True, slots=True)
class ToolReach:
    """What the channel uses of the gateway, given as functions (the pipeline never imports the gateway)."""

    call: CallThrough  # one call through the whole pipeline (Gateway.call_tool)
    tools: Callable[[], Sequence[types.Tool]]  # the catalog's tool list (exposed names)
    search: Callable[[str, int], Sequence[IndexEntry]]  # the gateway's tool search (ToolIndex.search)
    read_offloaded: ReadOffloaded | None  # an offloaded result's payload by file name
    separator: Callable[[], str]  # the namespace separator of exposed names


@dataclass(frozen=True, slots=True)
class ChannelLimits:
    tool_calls: int  # sandbox_tool_calls
    answer_bytes: int  # sandbox_answer_bytes
    request_bytes: int  # sandbox_request_bytes


class _Refused(Exception):
    """A request answered with an error: `kind` (a short class) and the message."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class _Close(Exception):
    """The channel closes after this answer (a bound past which no request is served)."""


def _visible(caller: Caller, name: str) -> bool:
    # The frontend's filter, and the caller's profile (profiles/resolve.py; the gateway enforces it too).
    if caller.reaches is not None and not caller.reaches(name):
        return False
    return caller.sees is None or caller.sees(name) is not None


class ToolChannel:
    """Serves one run's requests for `caller` (the run's own caller, inner calls marked via sandbox)."""

    def __init__(
        self,
        reach: ToolReach,
        caller: Caller,
        limits: ChannelLimits,
        inputs: Mapping[str, Any] | None = None,
    ) -> None:
        self.reach = reach
        self.caller = caller
        self.inner_caller = dataclasses.replace(caller, via=SANDBOX_VIA)
        self.limits = limits
        self.inputs = dict(inputs or {})
        self.tool_calls = 0  # calls and searches served (or refused by their tool)
        self.bookkeeping = 0
        self.bad_lines = 0
        self.result: Any = NO_RESULT
        self._listing: list[dict[str, Any]] | None = None

    # -- the connection ------------------------------------------------------------------------

    async def serve(self, sock: socket.socket) -> None:
        """Answer requests on `sock` (the gateway's end) until the code's end closes or a bound is hit."""
        reader, writer = await asyncio.open_connection(sock=sock, limit=_READ_CHUNK)
        try:
            await self._serve_lines(reader, writer)
        except (ConnectionError, OSError):
            pass  # the run ended while an answer was on its way
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()

    async def _serve_lines(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        buffer = bytearray()
        discarding = False  # inside a line longer than the request bound: dropped up to its end
        while chunk := await reader.read(_READ_CHUNK):
            buffer += chunk
            while True:
                end = buffer.find(b"\n")
                if end < 0:
                    if not discarding and len(buffer) > self.limits.request_bytes:
                        discarding = True
                        if not await self._answer_oversized(writer):
                            return
                    if discarding:
                        buffer.clear()
                    break
                line = bytes(buffer[:end])
                del buffer[: end + 1]
                if discarding:
                    discarding = False
                    continue
                if len(line) > self.limits.request_bytes:
                    if not await self._answer_oversized(writer):
                        return
                    continue
                answer, keep_open = await self._handle_line(line)
                await self._send(writer, answer)
                if not keep_open:
                    return

    async def _answer_oversized(self, writer: asyncio.StreamWriter) -> bool:
        """Answer a line over the request bound; False when the channel must close."""
        answer, keep_open = self._bad_line(
            "limit",
            f"a request is larger than {self.limits.request_bytes} bytes, the most the tool channel "
            "takes (setting sandbox_request_bytes): pass less data in one call",
        )
        await self._send(writer, answer)
        return keep_open

    async def _send(self, writer: asyncio.StreamWriter, answer: dict[str, Any]) -> None:
        writer.write(self._encoded(answer))
        await writer.drain()  # a client that does not read holds this run, not the gateway's memory

    def _encoded(self, answer: dict[str, Any]) -> bytes:
        data = (json.dumps(answer, ensure_ascii=False, default=str, allow_nan=False) + "\n").encode(
            "utf-8", "surrogatepass"
        )
        if len(data) <= self.limits.answer_bytes:
            return data
        what = answer.get("about") or "the answer"
        too_large = {
            "id": answer.get("id"),
            "ok": False,
            "kind": "limit",
            "error": (
                f"{what} is {len(data)} bytes, more than the tool channel's {self.limits.answer_bytes} "
                "(setting sandbox_answer_bytes): ask for less (fewer items, a narrower query)"
            ),
        }
        return (json.dumps(too_large, ensure_ascii=False) + "\n").encode("utf-8", "surrogatepass")

    def _bad_line(self, kind: str, message: str, request_id: Any = None) -> tuple[dict[str, Any], bool]:
        self.bad_lines += 1
        if self.bad_lines > MAX_BAD_LINES:
            closing = f"{message}; {MAX_BAD_LINES} bad requests in one run: the tool channel is closed"
            return {"id": request_id, "ok": False, "kind": "closed", "error": closing}, False
        return {"id": request_id, "ok": False, "kind": kind, "error": message}, True

    # -- one request ---------------------------------------------------------------------------

    async def _handle_line(self, line: bytes) -> tuple[dict[str, Any], bool]:
        try:
            request = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            return self._bad_line("malformed", f"a request is not a JSON line: {type(exc).__name__}: {exc}")
        if not isinstance(request, dict):
            return self._bad_line("malformed", 'a request must be a JSON object {"id", "op", ...}')
        request_id = request.get("id")
        if not isinstance(request_id, int | str | None) or isinstance(request_id, bool):
            request_id = None
        op = request.get("op")
        try:
            value = await self._dispatch(op, request)
        except _Refused as exc:
            if exc.kind == "malformed":
                return self._bad_line(exc.kind, str(exc), request_id)
            return {"id": request_id, "ok": False, "kind": exc.kind, "error": str(exc)}, True
        except _Close as exc:
            return {"id": request_id, "ok": False, "kind": "closed", "error": str(exc)}, False
        except Exception as exc:  # a bug behind one request must not end the others' channel
            logger.exception("tool channel: %s request failed", op)
            return {
                "id": request_id,
                "ok": False,
                "kind": "internal",
                "error": f"{type(exc).__name__}: {exc}",
            }, True
        answer: dict[str, Any] = {"id": request_id, "ok": True, "value": value}
        if op == "call":
            answer["about"] = f"the result of {request.get('name')}"
        return answer, True

    async def _dispatch(self, op: Any, request: dict[str, Any]) -> Any:
        if op in ("call", "find"):
            if self.tool_calls >= self.limits.tool_calls:
                raise _Refused(
                    "limit",
                    f"this run already made {self.limits.tool_calls} tool calls, the most one run may "
                    "make (setting sandbox_tool_calls)",
                )
            self.tool_calls += 1
            if op == "call":
                return await self._call(request.get("name"), request.get("arguments"))
            return self._find(request.get("query"), request.get("limit", 10))
        if op in ("start", "list", "result"):
            self.bookkeeping += 1
            if self.bookkeeping > MAX_BOOKKEEPING_REQUESTS:
                raise _Close(
                    f"more than {MAX_BOOKKEEPING_REQUESTS} start/list/result requests in one run: "
                    "the tool channel is closed"
                )
            if op == "start":
                return self.inputs
            if op == "list":
                return self._list()
            self.result = request.get("value")
            return None
        raise _Refused("malformed", f"unknown op {op!r}: one of call, find, list, start, result")

    def _list(self) -> list[dict[str, Any]]:
        if self._listing is None:
            separator = self.reach.separator()
            rows: list[dict[str, Any]] = []
            for tool in self.reach.tools():
                if tool.name in _NOT_FOR_CODE or not _visible(self.caller, tool.name):
                    continue
                rows.append(
                    {
                        "name": tool.name,
                        "path": list(code_path(tool.name, separator)),
                        "description": tool.description or "",
                        "input_schema": tool.input_schema,
                    }
                )
            self._listing = rows
        return self._listing

    def _find(self, query: Any, limit: Any) -> list[dict[str, Any]]:
        if not isinstance(query, str) or not query.strip():
            raise _Refused(
                "invalid_arguments", "find_tools needs a query: what the tool should do, in a few words"
            )
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_FIND_LIMIT:
            raise _Refused(
                "invalid_arguments", f"find_tools' limit must be a whole number from 1 to {MAX_FIND_LIMIT}"
            )
        separator = self.reach.separator()
        listed = {tool.name for tool in self.reach.tools()}
        hits: list[dict[str, Any]] = []
        for entry in self.reach.search(query, limit + len(_NOT_FOR_CODE)):
            if entry.name in _NOT_FOR_CODE or not _visible(self.caller, entry.name):
                continue
            hits.append(
                {
                    "name": entry.name,
                    "call": code_call_form(entry.name, entry.input_schema, separator),
                    "description": entry.description,
                    "input_schema": entry.input_schema,
                    "available": entry.name in listed,
                }
            )
            if len(hits) == limit:
                break
        return hits

    async def _call(self, name: Any, arguments: Any) -> Any:
        if not isinstance(name, str) or not name:
            raise _Refused("invalid_arguments", "call_tool needs the tool's name (a string)")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise _Refused(
                "invalid_arguments",
                f"call_tool's arguments must be an object, got {type(arguments).__name__}",
            )
        target = name
        if name == CALL_TOOL:
            try:
                target, _inner = unwrap_call_tool(arguments)
            except GatewayError as exc:
                raise _Refused(error_class(exc), exc.message) from None
        if target == SANDBOX_TOOL_NAME:
            raise _Refused(
                "refused",
                f"{SANDBOX_TOOL_NAME} cannot be called from code running in {SANDBOX_TOOL_NAME}: do the "
                "work in this code instead",
            )
        if not _visible(self.caller, target):
            raise _Refused("unknown_tool", f"unknown tool {target!r}: no tool of that name for this client")
        try:
            outcome = await self.reach.call(name, arguments, self.inner_caller)
        except GatewayError as exc:
            raise _Refused(error_class(exc), exc.message) from None
        except MCPError as exc:
            raise _Refused("tool_error", exc.error.message) from None
        if not isinstance(outcome, types.CallToolResult):
            raise _Refused("refused", f"{target} asks the caller for input, which code cannot give")
        if outcome.is_error and not offloaded_success(outcome):
            limited = outcome.meta is not None and RATE_LIMIT_META_KEY in outcome.meta
            raise _Refused(
                "rate_limited" if limited else "tool_error", result_text(outcome) or f"{target} failed"
            )
        try:
            return step_value(outcome, self.reach.read_offloaded)
        except UnreadableResult as exc:
            raise _Refused("tool_error", f"the result of {target} cannot be read whole: {exc}") from None
        except OSError as exc:
            raise _Refused("tool_error", f"the offloaded result of {target} cannot be read: {exc}") from None
