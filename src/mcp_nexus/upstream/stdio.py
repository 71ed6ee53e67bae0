"""A stdio server: its own process group, our JSON-RPC core on its pipes, and a lean tools/call.

Why not the SDK's `stdio_client`: the gateway needs what it does not give.
1. Every request on our own JSON-RPC core (jsonrpc/), with a fast tools/call that skips
   the typed layer: params are built as dicts, the result is validated once (tool_result.py).
2. Immediate crash detection: EOF on stdout fails every pending call at once and ends
   the session with the exit code and the child's last stderr line.
3. No leaks (child_process.py): the child runs in its own process group with a parent-death
   signal and the orphan watchdog behind it; close ends stdin, waits, then SIGTERMs and
   finally SIGKILLs the whole group, and reaps it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from contextlib import AsyncExitStack
from typing import Any

import mcp_types as types
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp_types import CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY, PROTOCOL_VERSION_META_KEY

from mcp_nexus.config.secrets import SecretRedactor
from mcp_nexus.jsonrpc import JsonRpcPeer, PeerOptions
from mcp_nexus.jsonrpc.leading_id import answered_id
from mcp_nexus.jsonrpc.lines import LINE_LIMIT, LineSplitter
from mcp_nexus.upstream import child_process
from mcp_nexus.upstream.child_process import StopGrace
from mcp_nexus.upstream.notification_budget import NotificationBudget
from mcp_nexus.upstream.session import Session, ToolOutcome, _version
from mcp_nexus.upstream.stderr_log import StderrForwarder
from mcp_nexus.upstream.tool_result import read_tool_outcome

logger = logging.getLogger(__name__)

LOG_LEVEL_META_KEY = "io.modelcontextprotocol/logLevel"

_LIST_CHANGED = {
    "notifications/tools/list_changed": "tools",
    "notifications/resources/list_changed": "resources",
    "notifications/prompts/list_changed": "prompts",
}

# What a stdio child needs from our environment besides what the config gives it: enough to
# find interpreters (PATH), write caches (HOME) and decode text (LANG), never our secrets.
_INHERITED_ENV = (
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "TERM",
    "TMPDIR",
    "USER",
    "SHELL",
    "NODE_PATH",
    "VIRTUAL_ENV",
)

RELAYED_CAPABILITIES: dict[str, Any] = {"sampling": {}, "elicitation": {"form": {}, "url": {}}, "roots": {}}
"""What Nexus can answer for its callers when a call does not say which capabilities its caller has."""


def child_environment(config: Any) -> dict[str, str]:
    env = {key: os.environ[key] for key in _INHERITED_ENV if key in os.environ}
    env.update(config.env)
    return env


class StdioSession(Session):
    transport = "stdio"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.process: asyncio.subprocess.Process | None = None
        self.stderr: StderrForwarder | None = None
        self.peer: JsonRpcPeer | None = None
        self._client_info = {"name": "mcp-nexus", "version": _version()}

    @property
    def pid(self) -> int | None:
        process = self.process
        return process.pid if process is not None and process.returncode is None else None

    async def _dispatcher(self, stack: AsyncExitStack) -> Any:
        config = self.config
        assert config.command is not None
        self.stderr = StderrForwarder(config.name, SecretRedactor.for_server(config), config.limits)
        stack.callback(self.stderr.close_parent_end)

        def write(frame: bytes) -> None:
            process = self.process
            if process is None or process.stdin is None:
                raise ConnectionError(f"server {config.name!r} is not started")
            process.stdin.write(frame + b"\n")

        # The peer comes first: stdout is read into it from the first byte the child writes.
        self.peer = peer = JsonRpcPeer(write, PeerOptions(name=config.name, answer_invalid=False))
        limits = config.limits
        lines = LineSplitter(
            lambda line: self._stdout_line(peer, budget, line),
            lambda prefix: self._stdout_overrun(peer, prefix, limits.message_bytes),
            limit=limits.message_bytes,
        )
        self.notifications = budget = NotificationBudget(
            config.name, limits.notifications_per_second, limits.notification_burst, lines
        )
        stack.callback(budget.close)
        try:
            process = await child_process.spawn(
                [config.command, *config.args],
                env=child_environment(config),
                cwd=config.cwd,
                stderr=self.stderr.writer,
                grace=StopGrace.within(config.timeouts.stop),
                limit=LINE_LIMIT,
                stdout_lines=lines,
            )
        finally:
            self.stderr.close_parent_end()
        self.process = process
        stack.push_async_callback(self._terminate)
        reader = asyncio.create_task(self._watch_stdout(process, peer, lines), name=f"stdout-{config.name}")
        stack.push_async_callback(_end_reader, reader, process)
        return peer

    def chatter(self) -> dict[str, Any]:
        found = super().chatter()
        stderr = self.stderr
        if stderr is not None:
            found["stderr_lines"] = {
                "seen": stderr.lines_seen,
                "logged": stderr.lines_logged,
                "suppressed": stderr.lines_suppressed,
            }
        return found

    def _stdout_line(self, peer: JsonRpcPeer, budget: NotificationBudget, line: bytes) -> None:
        first = line[:1] if line[:1] not in b" \t\r" else line.lstrip()[:1]  # no copy of a large line
        if first not in (b"{", b"["):
            # A server printing noise on stdout: say so, keep reading.
            budget.spend(len(line))
            logger.warning("server %s wrote non-JSON to stdout: %r", self.config.name, line[:200])
            return
        if len(line) < 256 and b"list_changed" in line and self._redundant(line):
            budget.spend(len(line))
            return
        answered = peer.answered
        peer.receive(line)
        if peer.answered == answered:  # not the answer to one of our requests: unasked
            budget.spend(len(line))

    def _redundant(self, line: bytes) -> bool:
        """A list_changed whose refresh is already waiting to start: dropped before the typed layer
        (a server flooding them costs a json.loads each, not a trip through the SDK)."""
        try:
            message = json.loads(line)
        except ValueError:
            return False
        if not isinstance(message, dict) or "id" in message:
            return False
        lists = _LIST_CHANGED.get(message.get("method"))  # type: ignore[arg-type]
        return lists is not None and self.events.refresh_waiting(lists)

    def _stdout_overrun(self, peer: JsonRpcPeer, prefix: bytes, limit: int) -> None:
        logger.error("server %s: a message exceeded %d bytes; dropped", self.config.name, limit)
        answered = answered_id(prefix)
        if answered is not None:
            # The call it answers fails now, naming the cause, instead of at its timeout.
            reason = (
                f"server {self.config.name!r}: its answer exceeded {limit} bytes "
                "(limits.message_bytes) and was dropped unread"
            )
            peer.fail_request(answered, MCPError(types.INTERNAL_ERROR, reason))

    async def _watch_stdout(
        self, process: asyncio.subprocess.Process, peer: JsonRpcPeer, lines: LineSplitter
    ) -> None:
        await lines.ended
        code = await _returncode(process)
        # Pending calls fail now, naming the exit; the report waits briefly for its last words.
        peer.close(f"server {self.config.name!r} exited (code {code})")
        self.mark_lost(self._exit_description(code))  # with whatever last words are already read
        if self.stderr is not None:
            await self.stderr.wait_drained(1.0)  # its last stderr lines usually say why it died
            words = self._exit_description(code)
            if words != self.exit_reason:
                self.exit_reason = words
                self.events.lost(self, words)  # the same loss, now with what the child last said

    def _exit_description(self, code: int | None) -> str:
        words = self.stderr.last_words() if self.stderr is not None else ""
        return f"process exited with code {code}" + (f"; its last stderr line: {words}" if words else "")

    async def _terminate(self) -> None:
        process = self.process
        if process is None:
            return
        if self.notifications is not None:
            # Read freely again: held back by its budget, it could not write out and exit on stdin's end.
            self.notifications.release()
        # A server that never got through its handshake has nothing to save: no stdin grace.
        grace = None if self._ready.is_set() else StopGrace(stdin=0.05, term=1.0)
        try:
            await child_process.terminate(
                process, grace
            )  # the whole group, reaped; survives our cancellation
        finally:
            if self.peer is not None:
                self.peer.close(f"server {self.config.name!r} stopped")

    # -- the lean tools/call ---------------------------------------------------------------

    async def _send_call(
        self,
        params: dict[str, Any],
        capabilities: dict[str, Any] | None,
        timeout: float | None,
        progress: ProgressFnT | None,
    ) -> ToolOutcome:
        """One tools/call round as raw JSON-RPC on our own peer (no typed request built and
        re-validated per call), with the 2026-07-28 envelope stamped here when the era is."""
        peer = self.peer
        version = self.protocol_version
        if peer is None or version is None or not self.open:
            raise ConnectionError(f"the session to {self.config.name!r} is not open")
        if self.modern:  # the 2026-07-28 per-request envelope
            envelope = params["_meta"] = dict(params.get("_meta") or ())
            envelope[PROTOCOL_VERSION_META_KEY] = version
            envelope[CLIENT_INFO_META_KEY] = self._client_info
            envelope[CLIENT_CAPABILITIES_META_KEY] = (
                capabilities if capabilities is not None else RELAYED_CAPABILITIES
            )
            envelope.setdefault(LOG_LEVEL_META_KEY, "debug")
        options: dict[str, Any] = {}
        if timeout is not None:
            options["timeout"] = timeout
        if progress is not None:
            options["on_progress"] = progress
        raw = await peer.send_raw_request("tools/call", params, options)  # type: ignore[arg-type]
        return read_tool_outcome(raw)


LAST_WORDS_WAIT_S = 0.5
"""How long closing a session whose child already exited lets the reader finish reporting the
exit: it waits (at most 0.3 s) for the child's last stderr lines, which usually say why it died
(e.g. during initialize, when the session is closed at once)."""


async def _end_reader(reader: asyncio.Task[Any], process: asyncio.subprocess.Process) -> None:
    if process.returncode is not None and not reader.done():
        with contextlib.suppress(TimeoutError, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(reader), LAST_WORDS_WAIT_S)
    await _cancel(reader)


async def _cancel(task: asyncio.Task[Any]) -> None:
    task.cancel()
    with contextlib.suppress(BaseException):
        await task


async def _returncode(process: asyncio.subprocess.Process) -> int | None:
    with contextlib.suppress(TimeoutError):
        return await asyncio.wait_for(process.wait(), 1.0)
    return process.returncode
