"""One JSON-RPC peer on a stream of frames: the core every Nexus endpoint speaks through.

It owns what each endpoint used to hand-write: id correlation and pending futures for
our own requests (with timeouts, progress and `notifications/cancelled` when we give
up), a task per inbound request (cancelled by the peer's `notifications/cancelled`),
and one boundary where a malformed message or a handler's exception becomes the right
wire error (`errors.error_body`). A bad frame costs one answer, never the connection.

It has the shape of the MCP SDK's `Dispatcher` (`send_raw_request`, `notify`, `run`),
so the SDK's typed layers (`ClientSession`, `ServerRunner`) run on it unchanged while
the bytes, ids and errors stay ours. Frames come in through `feed()` from whoever
reads the transport (pipe, WebSocket); frames go out through the `write` callable.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import itertools
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.abc
import mcp_types as types
from mcp.shared.dispatcher import (
    CallOptions,
    OnNotify,
    OnNotifyIntercept,
    OnRequest,
    ProgressFnT,
    run_notify_intercept,
)
from mcp.shared.exceptions import MCPError, NoBackChannelError
from mcp.shared.transport_context import TransportContext

from mcp_nexus.jsonrpc.codec import ParseError, decode_checked, encode, lone_surrogate
from mcp_nexus.jsonrpc.errors import as_mcp_error, error_body
from mcp_nexus.jsonrpc.message import (
    Invalid,
    Notification,
    Request,
    RequestId,
    Response,
    classify,
    valid_id,
)

logger = logging.getLogger(__name__)

PROGRESS_DRAIN_S = 2.0
"""At most this long an answer waits for the progress its request received before it: long
enough for a relay to pass them on, short enough that a stuck downstream cannot hold the answer."""

Write = Callable[[bytes], Awaitable[None] | None]


@dataclass(frozen=True, slots=True)
class RawResult:
    """A result already serialised to JSON bytes (the hot path skips a dict round trip)."""

    json: bytes


@dataclass(frozen=True, slots=True)
class PeerOptions:
    """What differs between endpoints that speak through a peer."""

    name: str = "peer"
    kind: str = "stdio"  # TransportContext.kind
    can_send_request: bool = True  # a duplex channel: the other side can answer our requests
    answer_invalid: bool = (
        True  # answer id-less errors (parse errors, unusable messages); some dialects ignore them
    )
    numeric_ids_only: bool = False  # the device dialect drops requests whose id is not a number


def coerce_id(request_id: Any) -> Any:
    """ "7" and 7 correlate as one id (peers echo ids loosely)."""
    if isinstance(request_id, str):
        with contextlib.suppress(ValueError):
            return int(request_id)
    return request_id


class JsonRpcPeer:
    def __init__(self, write: Write, options: PeerOptions | None = None) -> None:
        self._write = write
        self.options = options or PeerOptions()
        self._ids = itertools.count(1)
        self._pending: dict[Any, asyncio.Future[dict[str, Any]]] = {}
        self._progress: dict[Any, ProgressFnT] = {}
        # The last progress delivery of each request: deliveries run one after another, and the
        # request's answer waits for them (a relay must not overtake its own progress).
        self._progress_tail: dict[Any, asyncio.Future[None]] = {}
        self._inbound: dict[Any, tuple[asyncio.Task[None], _InboundContext]] = {}
        self._on_request: OnRequest | None = None
        self._on_notify: OnNotify | None = None
        self._intercept: OnNotifyIntercept | None = None
        self._closed = asyncio.Event()
        self._close_reason = "Connection closed"
        # Answers to our own requests so far: whatever else a peer sends was unasked (a stdio
        # server's notification budget counts those, upstream/notification_budget.py).
        self.answered = 0
        self._input_ended = ""  # why no answer can arrive any more, once the input has ended
        self._transport = TransportContext(
            kind=self.options.kind, can_send_request=self.options.can_send_request
        )

    # -- wiring -------------------------------------------------------------------------

    def serve(
        self, on_request: OnRequest, on_notify: OnNotify, on_notify_intercept: OnNotifyIntercept | None = None
    ) -> None:
        """Set the handlers for inbound requests and notifications."""
        self._on_request, self._on_notify, self._intercept = on_request, on_notify, on_notify_intercept

    async def run(
        self,
        on_request: OnRequest,
        on_notify: OnNotify,
        on_notify_intercept: OnNotifyIntercept | None = None,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """The SDK `Dispatcher` entry: install handlers and wait until the channel closes."""
        self.serve(on_request, on_notify, on_notify_intercept)
        task_status.started()
        await self._closed.wait()

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    @property
    def in_flight(self) -> int:
        """Inbound requests still being handled."""
        return len(self._inbound)

    def close(self, reason: str = "Connection closed") -> None:
        """The channel is gone: fail our pending requests and cancel the handlers still running."""
        if self._closed.is_set():
            return
        self._close_reason = reason
        self._closed.set()
        self._fail_pending(reason)
        for task, _ctx in list(self._inbound.values()):
            task.cancel()

    def fail_request(self, request_id: RequestId, error: MCPError) -> bool:
        """Fail our request `request_id` with `error` if it is still waiting (its answer was lost)."""
        future = self._pending.get(coerce_id(request_id))
        if future is None or future.done():
            return False
        future.set_exception(error)
        return True

    def _fail_pending(self, reason: str) -> None:
        error = MCPError(types.CONNECTION_CLOSED, reason)
        for future in self._pending.values():
            if not future.done():
                future.set_exception(error)
                future.exception()  # retrieved: nobody may be waiting any more
        self._pending.clear()
        self._progress.clear()
        self._progress_tail.clear()

    async def aclose(self, reason: str = "Connection closed") -> None:
        tasks = [task for task, _ctx in self._inbound.values()]
        self.close(reason)
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    async def finish(self, grace: float, reason: str = "input ended") -> None:
        """The input ended but the output may still be read (`echo request | serve > file`): the
        requests already read get up to `grace` seconds to send their answers, then the peer closes.
        Our own requests fail at once (their answers can no longer arrive), and so do new ones."""
        self._input_ended = reason
        self._fail_pending(reason)
        tasks = [task for task, _ctx in self._inbound.values()]
        if tasks:
            await asyncio.wait(tasks, timeout=grace)
        await self.aclose(reason)

    # -- output ---------------------------------------------------------------------------

    async def _send(self, message: dict[str, Any]) -> None:
        await self._emit(encode(message))

    async def _emit(self, frame: bytes) -> None:
        if self._closed.is_set():
            return
        try:
            pending = self._write(frame)
            if pending is not None and inspect.isawaitable(pending):
                await pending
        except (ConnectionError, OSError, RuntimeError) as exc:
            logger.debug("%s: write failed (%s): closing", self.options.name, exc)
            self.close(f"write failed: {exc}")

    async def send_error(self, request_id: RequestId | None, error: dict[str, Any]) -> None:
        await self._send({"jsonrpc": "2.0", "id": request_id, "error": error})

    def send_error_soon(self, request_id: RequestId | None, error: dict[str, Any]) -> None:
        """`send_error` from a transport callback, which cannot wait."""
        self._spawn(self.send_error(request_id, error))

    async def send_result(self, request_id: RequestId, result: dict[str, Any] | RawResult) -> None:
        if isinstance(result, RawResult):
            await self._emit(
                b'{"jsonrpc":"2.0","id":' + encode(request_id) + b',"result":' + result.json + b"}"
            )
        else:
            await self._send({"jsonrpc": "2.0", "id": request_id, "result": result})

    async def notify(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = dict(params)
        await self._send(message)

    async def send_raw_request(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> dict[str, Any]:
        """Send a request and wait for its result dict; a peer's error raises MCPError."""
        if self._closed.is_set() or self._input_ended:
            raise MCPError(types.CONNECTION_CLOSED, self._input_ended or self._close_reason)
        opts = opts or {}
        request_id: RequestId = opts.get("request_id", next(self._ids))
        key = coerce_id(request_id)
        if key in self._pending:
            raise ValueError(f"request id {request_id!r} is already in flight")
        body: dict[str, Any] = dict(params) if params is not None else {}
        on_progress = opts.get("on_progress")
        if on_progress is not None:
            body["_meta"] = {**(body.get("_meta") or {}), "progressToken": request_id}
            self._progress[request_id] = on_progress
        loop = asyncio.get_running_loop()
        future: asyncio.Future[dict[str, Any]] = loop.create_future()
        self._pending[key] = future
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None or body:
            message["params"] = body
        timeout = opts.get("timeout")
        timer = None
        try:
            if timeout is not None:
                # A timer that fails the future, not asyncio.wait_for: wait_for wraps the future
                # and costs an extra event-loop turn on every answer (the hot path). Set before
                # the write: once the request is out, the peer may be answering on this core.
                timer = loop.call_later(timeout, _expire, future, method, timeout)
            await self._send(message)
            result = await future
            tail = self._progress_tail.get(request_id)
            if tail is not None and not tail.done():
                # Progress the peer sent before its answer reaches our caller before the answer.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(tail), PROGRESS_DRAIN_S)
            return result
        except MCPError as exc:
            if exc.error.code == types.REQUEST_TIMEOUT and opts.get("cancel_on_abandon", True):
                await self._cancel_remote(request_id, "timed out")
            raise
        except asyncio.CancelledError:
            if opts.get("cancel_on_abandon", True):
                await asyncio.shield(self._cancel_remote(request_id, "cancelled by the caller"))
            raise
        finally:
            if timer is not None:
                timer.cancel()
            self._pending.pop(key, None)
            self._progress.pop(request_id, None)
            self._progress_tail.pop(request_id, None)

    async def _cancel_remote(self, request_id: RequestId, reason: str) -> None:
        if not self._closed.is_set():
            await self.notify("notifications/cancelled", {"requestId": request_id, "reason": reason})

    # -- input ----------------------------------------------------------------------------

    async def feed(self, frame: bytes | str) -> None:
        """Handle one frame (one line, one WebSocket message). Never raises for bad input."""
        answer = self._take(frame)
        if answer is not None:
            await answer

    def receive(self, frame: bytes | str) -> None:
        """`feed` for readers that run in a transport callback and cannot wait: an error answer
        a bad frame earns is sent by a task of its own (such answers still leave in order)."""
        answer = self._take(frame)
        if answer is not None:
            self._spawn(answer)

    async def feed_value(self, value: Any, *, may_hold_surrogates: bool = True) -> None:
        """Handle one decoded JSON value. `may_hold_surrogates=False` (from `decode_checked`) skips
        looking for lone surrogates in a request's params."""
        answer = self._take_value(value, may_hold_surrogates)
        if answer is not None:
            await answer

    def _take(self, frame: bytes | str) -> Awaitable[None] | None:
        """Act on one frame at once; what is left to await is an error answer, if any."""
        try:
            value, may_hold_surrogates = decode_checked(frame)
        except ParseError as exc:
            logger.debug("%s: %s", self.options.name, exc.message)
            return self.send_error(None, exc.to_wire()) if self.options.answer_invalid else None
        return self._take_value(value, may_hold_surrogates)

    def _take_value(self, value: Any, may_hold_surrogates: bool) -> Awaitable[None] | None:
        message = classify(value)
        if isinstance(message, Response):
            self._resolve(message)
        elif isinstance(message, Request):
            if self.options.numeric_ids_only and not isinstance(message.id, int):
                logger.warning("%s: dropped %s with a non-numeric id", self.options.name, message.method)
            elif may_hold_surrogates and (refused := lone_surrogate(message.params)) is not None:
                # Answered here, at once: forwarded, a strict peer would drop it and the caller wait.
                logger.debug("%s: %s", self.options.name, refused.message)
                return self.send_error(message.id, refused.to_wire())
            else:
                self._start(message)
        elif isinstance(message, Notification):
            self._notification(message)
        else:
            return self._invalid(message)
        return None

    async def _invalid(self, message: Invalid) -> None:
        logger.debug("%s: %s", self.options.name, message.reason)
        # A request whose id we know is always answered; `answer_invalid` only governs the
        # id-less errors (parse errors, unusable messages) that some dialects ignore.
        if not message.answer:
            return
        if self.options.numeric_ids_only and not isinstance(message.id, int):
            if not self.options.answer_invalid or message.id is not None:
                return  # the device rule: what has no numeric id is not for us
        elif not self.options.answer_invalid and message.id is None:
            return
        await self.send_error(message.id, message.error())

    def _resolve(self, response: Response) -> None:
        future = self._pending.get(coerce_id(response.id))
        if future is None or future.done():
            logger.debug("%s: a response to no pending request (id %r)", self.options.name, response.id)
            return
        self.answered += 1
        if response.error is not None:
            future.set_exception(as_mcp_error(response.error))
        else:
            future.set_result(response.result or {})

    def _start(self, request: Request) -> None:
        key = coerce_id(request.id)
        if key in self._inbound:
            self._spawn(
                self.send_error(request.id, {"code": -32600, "message": "Invalid request: id already in use"})
            )
            return
        ctx = _InboundContext(self, request)
        task = asyncio.get_running_loop().create_task(self._handle(request, ctx))
        self._inbound[key] = (task, ctx)
        task.add_done_callback(lambda _t: self._inbound.pop(key, None))

    async def _handle(self, request: Request, ctx: _InboundContext) -> None:
        handler = self._on_request
        try:
            if handler is None:
                raise MCPError(types.METHOD_NOT_FOUND, f"Method not found: {request.method}")
            result: Any = await handler(ctx, request.method, request.params)
        except asyncio.CancelledError:
            return  # cancelled by the peer (no answer, as the protocol says) or by close()
        except Exception as exc:
            await self.send_error(request.id, error_body(exc))
            return
        finally:
            ctx.finished = True
        await self.send_result(request.id, result)

    def _notification(self, note: Notification) -> None:
        params = note.params or {}
        if note.method == "notifications/cancelled":
            target = params.get("requestId")
            entry = self._inbound.get(coerce_id(target)) if valid_id(target) else None
            if entry is not None and entry[1].request is not None and entry[1].request.method != "initialize":
                entry[1].cancel_requested.set()
                entry[0].cancel()
            return
        if note.method == "notifications/progress":
            token = params.get("progressToken")
            callback = self._progress.get(token) if valid_id(token) else None
            if callback is not None:
                progress = params.get("progress")
                total = params.get("total")
                message = params.get("message")
                delivery = callback(
                    progress if isinstance(progress, int | float) else 0,
                    total if isinstance(total, int | float) else None,
                    message if isinstance(message, str) else None,
                )
                tail = asyncio.ensure_future(
                    _after(self._progress_tail.get(token), _logged(delivery, self.options.name))
                )
                self._progress_tail[token] = tail
                _BACKGROUND.add(tail)
                tail.add_done_callback(_BACKGROUND.discard)
                return
        if run_notify_intercept(self._intercept, note.method, note.params):
            return
        if self._on_notify is not None:
            self._spawn(self._on_notify(_InboundContext(self, None), note.method, note.params))

    def _spawn(self, work: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(_logged(work, self.options.name))
        _BACKGROUND.add(task)
        task.add_done_callback(_BACKGROUND.discard)


_BACKGROUND: set[asyncio.Future[Any]] = set()


async def _after(previous: asyncio.Future[None] | None, work: Awaitable[None]) -> None:
    """Run `work` once `previous` (the same request's earlier progress delivery) has finished."""
    if previous is not None and not previous.done():
        with contextlib.suppress(BaseException):
            await asyncio.shield(previous)
    await work


async def _logged(work: Awaitable[Any], name: str) -> None:
    try:
        await work
    except asyncio.CancelledError:
        pass
    except Exception:  # a notification handler's bug costs that notification only
        logger.exception("%s: notification handler failed", name)


def _expire(future: asyncio.Future[dict[str, Any]], method: str, timeout: float) -> None:
    if not future.done():
        future.set_exception(
            MCPError(types.REQUEST_TIMEOUT, f"Timed out after {timeout:g} s waiting for {method}")
        )


class _InboundContext:
    """The SDK's `DispatchContext` for one inbound request (or notification) on a peer."""

    __slots__ = ("_cancel_requested", "finished", "peer", "request")

    def __init__(self, peer: JsonRpcPeer, request: Request | None) -> None:
        self.peer = peer
        self.request = request
        self.finished = False
        self._cancel_requested: anyio.Event | None = None

    @property
    def cancel_requested(self) -> anyio.Event:
        # Made on first use: most requests are never cancelled, and an Event costs a backend lookup.
        if self._cancel_requested is None:
            self._cancel_requested = anyio.Event()
        return self._cancel_requested

    @property
    def transport(self) -> TransportContext:
        return self.peer._transport

    @property
    def can_send_request(self) -> bool:
        return self.peer.options.can_send_request and not self.finished and not self.peer.closed

    @property
    def request_id(self) -> RequestId | None:
        return self.request.id if self.request is not None else None

    @property
    def message_metadata(self) -> None:
        return None

    @property
    def progress_token(self) -> Any:
        meta = (self.request.params or {}).get("_meta") if self.request is not None else None
        return meta.get("progressToken") if isinstance(meta, dict) else None

    async def send_raw_request(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> dict[str, Any]:
        if not self.can_send_request:
            raise NoBackChannelError(method)
        return await self.peer.send_raw_request(method, params, opts)

    async def notify(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> None:
        await self.peer.notify(method, params, opts)

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        token = self.progress_token
        if token is None:
            return
        params: dict[str, Any] = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self.peer.notify("notifications/progress", params)
