"""One stdio server process: its pipes, its process group, and a fast lane for tools/call.

Why not the SDK's `stdio_client`: the gateway needs three things it does not give.
1. A fast lane. The SDK session costs about a millisecond per call in model building,
   validation and task hand-offs; a relay only needs to move bytes. `request()` writes
   a JSON-RPC request with an id of our own (`nx-<n>`) and resolves it straight from the
   reader, while everything else (initialize, lists, notifications, server-initiated
   requests) still flows through the SDK session via the streams this class yields.
2. Immediate crash detection: EOF on stdout fails every pending call at once and
   reports the exit through `on_exit`, instead of waiting for a timeout.
3. No leaks: `child_process` spawns the child in its own process group (with the parent-death
   signal on Linux, and the orphan watchdog told about it); stop closes stdin, waits, then
   SIGTERMs and finally SIGKILLs the whole group, and reaps it.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TextIO

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

from mcp_nexus.upstream import child_process
from mcp_nexus.upstream.child_process import StopGrace

logger = logging.getLogger(__name__)

ProgressCallback = Callable[[float, float | None, str | None], Awaitable[None]]

_FAST_ID_PREFIX = "nx-"
_LINE_LIMIT = 512 * 1024 * 1024  # one JSON-RPC message per line; results can be large


class ProcessExited(Exception):
    """The server process is gone; calls to it cannot complete."""


class JsonRpcError(Exception):
    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(error.get("message", "error"))
        self.error = error


class StdioProcess:
    """An async context manager yielding SDK transport streams; see the module docstring."""

    def __init__(
        self,
        name: str,
        command: str,
        args: list[str],
        env: dict[str, str],
        cwd: str | None,
        stderr: TextIO,
        on_exit: Callable[[int | None], None] | None = None,
        after_exit: Callable[[int | None], Awaitable[None]] | None = None,
        stop_grace: StopGrace | None = None,
    ) -> None:
        self.name = name
        self._argv = [command, *args]
        self._env = env
        self._cwd = cwd
        self._stderr = stderr
        self._on_exit = on_exit
        self._after_exit = after_exit  # e.g. add the child's last stderr words to the report
        self._stop_grace = stop_grace or StopGrace()
        self.process: asyncio.subprocess.Process | None = None
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._progress: dict[str, ProgressCallback] = {}
        self._ids = itertools.count(1)
        self._tasks: list[asyncio.Task[None]] = []
        self._to_sdk: MemoryObjectSendStream[SessionMessage | Exception] | None = None
        self._from_sdk: MemoryObjectReceiveStream[SessionMessage] | None = None
        self._closing = False
        self.exited = asyncio.Event()

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    @property
    def returncode(self) -> int | None:
        return self.process.returncode if self.process else None

    # -- lifecycle -------------------------------------------------------------------------

    async def __aenter__(
        self,
    ) -> tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]:
        self.process = await child_process.spawn(
            self._argv,
            env=self._env,
            cwd=self._cwd,
            stderr=self._stderr,
            grace=self._stop_grace,
            limit=_LINE_LIMIT,
        )
        to_sdk, sdk_reads = anyio.create_memory_object_stream[SessionMessage | Exception](64)
        sdk_writes, from_sdk = anyio.create_memory_object_stream[SessionMessage](64)
        self._to_sdk, self._from_sdk = to_sdk, from_sdk
        self._tasks = [
            asyncio.create_task(self._read_stdout(), name=f"stdout-{self.name}"),
            asyncio.create_task(self._write_from_sdk(), name=f"stdin-{self.name}"),
        ]
        return sdk_reads, sdk_writes

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    async def stop(self) -> None:
        self._closing = True
        process = self.process
        try:
            if process is not None:
                # Stdin close, grace, SIGTERM, grace, SIGKILL of the whole group, reap. If this
                # task is cancelled meanwhile, the ending goes on without it (child_process).
                await child_process.terminate(process, self._stop_grace)
        finally:
            for task in self._tasks:
                task.cancel()
            self._fail_pending(ProcessExited(f"server {self.name!r} stopped"))
            for stream in (self._to_sdk, self._from_sdk):
                if stream is not None:
                    stream.close()
        for task in self._tasks:
            with contextlib.suppress(BaseException):
                await task

    # -- the fast lane ---------------------------------------------------------------------

    async def request(
        self, data: dict[str, Any], *, timeout: float | None, progress: ProgressCallback | None = None
    ) -> dict[str, Any]:
        """Send one request (`{"method", "params"}`) and return its raw `result` dict."""
        process = self.process
        if process is None or process.returncode is not None or self.exited.is_set():
            raise ProcessExited(f"server {self.name!r} is not running")
        request_id = f"{_FAST_ID_PREFIX}{next(self._ids)}"
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        params = data.setdefault("params", {})
        if progress is not None:
            params.setdefault("_meta", {})["progressToken"] = request_id
            self._progress[request_id] = progress
        message = {"jsonrpc": "2.0", "id": request_id, "method": data["method"], "params": params}
        try:
            assert process.stdin is not None
            process.stdin.write(json.dumps(message, separators=(",", ":")).encode() + b"\n")
            if timeout is None:
                return await future
            # A timer that fails the future, rather than asyncio.wait_for: wait_for wraps the
            # future and costs an extra event-loop turn on every answer (the hot path).
            timer = asyncio.get_running_loop().call_later(timeout, _expire, future, timeout)
            try:
                return await future
            finally:
                timer.cancel()
        except TimeoutError:
            self._cancel_upstream(request_id, "timed out")
            raise
        except asyncio.CancelledError:
            self._cancel_upstream(request_id, "cancelled by the caller")
            raise
        finally:
            self._pending.pop(request_id, None)
            self._progress.pop(request_id, None)

    def _cancel_upstream(self, request_id: str, reason: str) -> None:
        process = self.process
        if process is None or process.stdin is None or process.returncode is not None:
            return
        note = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": request_id, "reason": reason},
        }
        with contextlib.suppress(Exception):
            process.stdin.write(json.dumps(note).encode() + b"\n")

    # -- pumps -----------------------------------------------------------------------------

    async def _read_stdout(self) -> None:
        process = self.process
        assert process is not None and process.stdout is not None and self._to_sdk is not None
        stdout, to_sdk = process.stdout, self._to_sdk
        try:
            while True:
                try:
                    line = await stdout.readuntil(b"\n")
                except asyncio.IncompleteReadError as partial:
                    if partial.partial.strip():
                        await self._dispatch(partial.partial, to_sdk)
                    break
                except asyncio.LimitOverrunError:
                    logger.error("server %s: a message exceeded %d bytes; dropped", self.name, _LINE_LIMIT)
                    await stdout.read(_LINE_LIMIT)
                    continue
                if line.strip():
                    await self._dispatch(line, to_sdk)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return
        finally:
            if not self._closing:
                code = await _returncode(process)
                self.exited.set()
                self._fail_pending(ProcessExited(f"server {self.name!r} exited (code {code})"))
                to_sdk.close()
                if self._on_exit is not None:
                    self._on_exit(code)
                if self._after_exit is not None:
                    with contextlib.suppress(Exception):
                        await self._after_exit(code)

    async def _dispatch(
        self, line: bytes, to_sdk: MemoryObjectSendStream[SessionMessage | Exception]
    ) -> None:
        try:
            message = json.loads(line)
        except ValueError as exc:
            # Not JSON: a server printing noise on stdout. Tell the session, keep reading.
            logger.warning("server %s wrote non-JSON to stdout: %r", self.name, line[:200])
            await to_sdk.send(exc)
            return
        if isinstance(message, dict):
            message_id = message.get("id")
            if (
                isinstance(message_id, str)
                and message_id.startswith(_FAST_ID_PREFIX)
                and "method" not in message
            ):
                future = self._pending.get(message_id)
                if future is not None and not future.done():
                    if "error" in message:
                        future.set_exception(JsonRpcError(message["error"]))
                    else:
                        future.set_result(message.get("result") or {})
                return
            if message.get("method") == "notifications/progress":
                token = (message.get("params") or {}).get("progressToken")
                callback = self._progress.get(token) if isinstance(token, str) else None
                if callback is not None:
                    params = message["params"]
                    await callback(params.get("progress", 0), params.get("total"), params.get("message"))
                    return
        try:
            parsed = types.jsonrpc_message_adapter.validate_python(message, by_name=False)
        except ValueError as exc:
            logger.warning("server %s sent an invalid JSON-RPC message: %s", self.name, exc)
            await to_sdk.send(exc)
            return
        await to_sdk.send(SessionMessage(parsed))

    async def _write_from_sdk(self) -> None:
        process = self.process
        assert process is not None and process.stdin is not None and self._from_sdk is not None
        stdin = process.stdin
        try:
            async for session_message in self._from_sdk:
                text = session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
                stdin.write(text.encode() + b"\n")
                await stdin.drain()
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError, OSError):
            if self._to_sdk is not None:
                self._to_sdk.close()

    def _fail_pending(self, error: Exception) -> None:
        for future in self._pending.values():
            if not future.done():
                future.set_exception(error)
        self._pending.clear()


def _expire(future: asyncio.Future[dict[str, Any]], timeout: float) -> None:
    if not future.done():
        future.set_exception(TimeoutError(f"no answer within {timeout:g} s"))


async def _returncode(process: asyncio.subprocess.Process) -> int | None:
    with contextlib.suppress(TimeoutError):
        return await asyncio.wait_for(process.wait(), 1.0)
    return process.returncode
