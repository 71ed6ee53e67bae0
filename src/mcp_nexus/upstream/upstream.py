"""One configured MCP server, as the rest of Nexus sees it: a facade over the parts that serve it.

`Upstream` keeps one public surface (its state, what the server offers, start/stop, calls)
while each concern lives in a part of its own, built and wired here:

- status.py `ServerStatus`: the state and its history, the redacted last error, the uptime;
- connection.py `Connection`: the session lifecycle (connect, loss, stop), with
  era_bridge.py `EraBridge`: a handshake-era session for callers that take server requests;
- offered_lists.py `OfferedLists`: the tools, resources and prompts last read, and re-reading them;
- server_changes.py `ServerChanges`: hearing of changes (list_changed, resource updates, listen);
- session_reports.py `SessionReports`: where a session's reports go, each to its part;
- downstream_relay.py: the contract for the server's own requests relayed to a caller;
- background_tasks.py `BackgroundTasks`: the tasks that serve the current session.

The parts never import this module; what they tell it arrives through callables it hands them.
"""

from __future__ import annotations

import asyncio
from typing import Any

import mcp_types as types
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError

from mcp_nexus.config.schema import ServerConfig
from mcp_nexus.events import (
    EventBus,
    ResourceUpdated,
    ServerAnnouncedChange,
    ServerListRead,
    ServerStateChanged,
)
from mcp_nexus.upstream.background_tasks import BackgroundTasks
from mcp_nexus.upstream.callers_of import CallersOf
from mcp_nexus.upstream.client_era import ClientEra
from mcp_nexus.upstream.connection import Connection
from mcp_nexus.upstream.downstream_relay import DownstreamRelay, NoRelay
from mcp_nexus.upstream.era_bridge import CallerEra
from mcp_nexus.upstream.forwarded import Forwarded, ForwardedReadOnly
from mcp_nexus.upstream.input_required import InputAnswerer
from mcp_nexus.upstream.log_records import ServerLogRecords
from mcp_nexus.upstream.negotiate import Era
from mcp_nexus.upstream.oauth.per_user import is_per_user, is_user
from mcp_nexus.upstream.offered_lists import OfferedLists
from mcp_nexus.upstream.server_changes import ServerChanges
from mcp_nexus.upstream.session import CallRound, Session, ToolOutcome, describe_error
from mcp_nexus.upstream.session_reports import SessionReports
from mcp_nexus.upstream.session_types import session_type
from mcp_nexus.upstream.state import StateHistory, UpstreamState
from mcp_nexus.upstream.status import ServerStatus

# Callers import these from here, as before the parts had modules of their own.
__all__ = ["CallerEra", "DownstreamRelay", "NoRelay", "Upstream", "UpstreamUnavailable", "describe_error"]


# The default caller of `call_tool`: a handshake-era caller that takes no server requests.
PLAIN_CALLER = CallerEra.of(False, False)


class UpstreamUnavailable(Exception):
    """The upstream cannot take calls now (not connected, crashed, stopped)."""


class Upstream:
    """Holds the session(s) to one server, opened at start and reused by every call."""

    # Values that live on a part, read (and some written) here as before (forwarded.py).
    state = Forwarded[UpstreamState]("status")
    last_error = Forwarded[str | None]("status")  # redacted on the way in (status.py)
    history = ForwardedReadOnly[StateHistory]("status")
    ready_since = ForwardedReadOnly[float | None]("status")
    started_at = ForwardedReadOnly[float | None]("status")  # when the session became READY (monotonic)
    uptime = ForwardedReadOnly[float | None]("status")
    is_ready = ForwardedReadOnly[bool]("status")
    tools = Forwarded[list[types.Tool]]("lists")
    resources = Forwarded[list[types.Resource]]("lists")
    resource_templates = Forwarded[list[types.ResourceTemplate]]("lists")
    prompts = Forwarded[list[types.Prompt]]("lists")
    has_session = ForwardedReadOnly[bool]("connection")
    connecting = ForwardedReadOnly[bool]("connection")
    sessions_opened = ForwardedReadOnly[int]("connection")
    pid = ForwardedReadOnly[int | None]("connection")
    protocol_version = ForwardedReadOnly[str | None]("connection")
    capabilities = ForwardedReadOnly[types.ServerCapabilities | None]("connection")
    server_info = ForwardedReadOnly[types.Implementation | None]("connection")
    stderr_tail = ForwardedReadOnly[list[str]]("connection")

    def __init__(
        self,
        config: ServerConfig,
        *,
        events: EventBus | None = None,
        relay: DownstreamRelay | None = None,
        client_era: ClientEra | None = None,
    ) -> None:
        self.config = config
        # Where this server's changes are told (events.py): the gateway's bus, or one of its own.
        self.events = events if events is not None else EventBus()
        self.relay: DownstreamRelay = relay or NoRelay()
        # Set by the catalog: tools it will not expose, printable name -> why (catalog/tool_admission.py).
        self.refused_tools: dict[str, str] = {}
        # Times the supervisor brought it back after a crash or failed health checks; an
        # operator's stop/start/restart and a config reload are not restarts.
        self.restarts = 0
        self.next_attempt_at: float | None = None  # monotonic time of the next restart attempt, if planned
        # Callers of the calls in flight here, newest last: where this server's
        # sampling/elicitation requests and log messages go (the protocol gives no link
        # from such a request back to the call that caused it).
        self.active_callers: list[Any] = []

        # The parts read the config and the session through these: both are replaced over time.
        def current_config() -> ServerConfig:
            return self.config

        def current_session() -> Session | None:
            return self.connection.session

        publish = self.events.publish
        background = BackgroundTasks(config.name)
        self.status = ServerStatus(
            config=current_config,
            session=current_session,
            on_change=lambda: publish(ServerStateChanged(self)),
        )
        self.lists = OfferedLists(
            config.name,
            session=current_session,
            config=current_config,
            spawn=background.spawn,
            on_read=lambda kind: publish(ServerListRead(self, kind)),
            on_heard=lambda kind: publish(ServerAnnouncedChange(self, kind)),
        )
        self.changes = ServerChanges(
            config.name,
            session=current_session,
            lists=self.lists,
            spawn=background.spawn,
            on_updated=lambda uri: publish(ResourceUpdated(uri, self)),
        )
        self.connection = Connection(
            config=current_config,
            status=self.status,
            lists=self.lists,
            changes=self.changes,
            background=background,
            open_session=self._open_session,
            client_era=client_era,
        )
        # The server's log records in the gateway's log: one bucket per server, whichever session sent them.
        self.log_records = ServerLogRecords(config.name, current_config)
        self._reports = SessionReports(
            # On a per-user server this session is the operator's: its questions are never a user's.
            CallersOf(self, lambda caller: not (is_per_user(self.config) and is_user(caller.identity))),
            relay=lambda: self.relay,
            changes=self.changes,
            lists=self.lists,
            lost=self.connection.lost,
            log_records=self.log_records,
        )

    @property
    def name(self) -> str:
        return self.config.name

    def chatter(self) -> dict[str, Any]:
        """What the server sent unasked and what the bounds kept of it (docs/SECURITY.md, "Hostile
        upstream servers"): its log records in the gateway's log, since start, and the counts of
        the session open now (stdio: stderr lines, the notification budget)."""
        records = self.log_records
        session = self.connection.session
        return {
            "log_records": {"seen": records.seen, "logged": records.logged, "suppressed": records.suppressed},
            **(session.chatter() if session is not None else {}),
        }

    def __repr__(self) -> str:
        return f"Upstream({self.name!r}, {self.config.transport}, {self.state})"

    def _open_session(self, era: Era) -> Session:
        # Every transport, built-in or a plugin's, is looked up by name (upstream/session_types.py).
        return session_type(self.config.transport)(self.config, self._reports, era=era)

    # -- state and lifecycle ---------------------------------------------------------------

    def mark(self, state: UpstreamState, reason: str) -> None:
        """Record a state decided outside the session (health checks, the restart policy)."""
        self.status.mark(state, reason)

    async def wait_ready(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for READY (a caller of a server still connecting)."""
        return await self.status.wait_ready(timeout)

    async def start(self, timeout: float | None = None, reason: str = "starting") -> None:
        """Connect and list what the server offers; on failure the state is ERROR with the reason."""
        await self.connection.start(timeout, reason)

    def abort_start(self) -> None:
        """Cancel a start in progress now (its half-started session is closed by the start itself)."""
        self.connection.abort_start()

    async def stop(self, reason: str = "stopped", *, keep_error: bool = False) -> None:
        """End the session(s); the state becomes STOPPED (DISABLED when disabled), or with
        `keep_error` an ERROR, CRASHED or NEEDS_AUTH state stays so that its reason stays visible."""
        await self.connection.stop(reason, keep_error=keep_error)

    # -- what the server offers ------------------------------------------------------------

    async def refresh_tools(self, *, quiet_if_same: bool = False) -> None:
        await self.lists.refresh_tools(quiet_if_same=quiet_if_same)

    def relist_tools(self) -> None:
        """Read the tool list again (the health check, an expired ttlMs), coalesced with list_changed."""
        self.lists.relist_tools()

    async def refresh_resources(self) -> None:
        await self.lists.refresh_resources()

    async def refresh_prompts(self) -> None:
        await self.lists.refresh_prompts()

    async def watch_resource(self, uri: str, watch: bool) -> None:
        """Follow (or stop following) updates of one resource on a 2026-07-28 server."""
        self.changes.watch_resource(uri, watch)

    # -- calls ------------------------------------------------------------------------------

    def session(self) -> Session:
        session = self.connection.session
        if session is None or not self.is_ready:
            reason = f": {self.last_error}" if self.last_error else ""
            raise UpstreamUnavailable(f"server {self.name!r} is {self.state}{reason}")
        return session

    async def session_for(self, era: CallerEra) -> Session:
        """The session that serves this caller: the primary, or a handshake-era one on first need."""
        return await self.connection.bridge.session_for(era, self.session())

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        *,
        era: CallerEra = PLAIN_CALLER,
        progress: ProgressFnT | None = None,
        timeout: float | None = None,
        meta: dict[str, Any] | None = None,
        capabilities: dict[str, Any] | None = None,
        round_: CallRound | None = None,
        answer_input: InputAnswerer | None = None,
    ) -> ToolOutcome:
        primary = self.session()
        bridge = self.connection.bridge
        # The primary without a coroutine of its own (the hot path); a bridge only on first need.
        session = primary if bridge.primary_serves(era, primary) else await bridge.session_for(era, primary)
        try:
            return await session.call_tool(
                name,
                arguments,
                meta=meta,
                timeout=timeout or self.config.timeouts.call,
                progress=progress,
                capabilities=capabilities,
                round_=round_,
                answer_input=None if era.modern else answer_input,
            )
        except ConnectionError as exc:
            raise UpstreamUnavailable(str(exc)) from exc

    async def probe(self, timeout: float, *, use_ping: bool = True) -> bool:
        """One health probe on the open session, whatever the state: ping, or tools/list.

        Returns whether ping is supported (False once a server answered "Method not found",
        which 2026-07-28 servers do: ping left the protocol there). Raises on failure.
        """
        session = self.connection.session
        if session is None or not session.open:
            raise UpstreamUnavailable(f"server {self.name!r} has no open session ({self.state})")
        async with asyncio.timeout(timeout):
            if use_ping:
                try:
                    await session.ping()
                    return True
                except MCPError as exc:
                    if exc.error.code != types.METHOD_NOT_FOUND:
                        raise
            await session.sdk().list_tools()
        return False
