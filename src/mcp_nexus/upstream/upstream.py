"""One configured MCP server: its state, what it offers, its health, and its sessions.

The session (transport) is chosen once per connect by `open_session`; this class never
looks at the transport again. Normally one session serves every caller. When the server
speaks both protocol eras and the primary session is 2026-07-28, a handshake-era caller
that can answer server requests (sampling, elicitation, roots) gets a handshake-era
session of its own, opened on first need: in 2026-07-28 a server has no back-channel,
so only that era lets such requests reach the caller (docs/ARCHITECTURE.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from dataclasses import dataclass
from typing import Any, Protocol

import mcp_types as types
from mcp.client.subscriptions import listen
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError

from mcp_nexus.config.schema import ServerConfig
from mcp_nexus.config.secrets import SecretRedactor
from mcp_nexus.events import (
    EventBus,
    ResourceUpdated,
    ServerAnnouncedChange,
    ServerListRead,
    ServerStateChanged,
)
from mcp_nexus.upstream.input_required import InputAnswerer
from mcp_nexus.upstream.list_refresh import ListExpiry, ListRefresh, list_tools_with_ttl
from mcp_nexus.upstream.negotiate import Era
from mcp_nexus.upstream.session import CallRound, Session, ToolOutcome, describe_error
from mcp_nexus.upstream.session_types import session_type, transport_kind
from mcp_nexus.upstream.state import StateHistory, UpstreamState

logger = logging.getLogger(__name__)


class UpstreamUnavailable(Exception):
    """The upstream cannot take calls now (not connected, crashed, stopped)."""


class DownstreamRelay(Protocol):
    """Where an upstream's own requests and log messages go: the caller whose call is in flight there.

    Implemented by the gateway (it knows the callers); the upstream layer only asks.
    """

    async def sampling(
        self, upstream: Upstream, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData: ...

    async def elicitation(
        self, upstream: Upstream, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData: ...

    async def list_roots(self, upstream: Upstream) -> types.ListRootsResult | types.ErrorData: ...

    async def log(self, upstream: Upstream, params: types.LoggingMessageNotificationParams) -> None: ...


class NoRelay:
    """Used until a gateway installs its relay: decline what needs a client."""

    async def sampling(self, upstream: Upstream, params: Any) -> types.ErrorData:
        return types.ErrorData(
            code=types.INVALID_REQUEST, message="no client connected that supports sampling"
        )

    async def elicitation(self, upstream: Upstream, params: Any) -> types.ErrorData:
        return types.ErrorData(
            code=types.INVALID_REQUEST, message="no client connected that supports elicitation"
        )

    async def list_roots(self, upstream: Upstream) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[])

    async def log(self, upstream: Upstream, params: types.LoggingMessageNotificationParams) -> None:
        logger.info("[%s] log %s: %s", upstream.name, params.level, params.data)


@dataclass(frozen=True, slots=True)
class CallerEra:
    """What a call's caller needs from the session that carries it."""

    modern: bool = False  # speaks 2026-07-28: input requests travel back to it as results
    back_channel: bool = False  # a handshake-era caller that can answer sampling/elicitation/roots


class _Events:
    """One session's reports, forwarded to its upstream (see session.SessionEvents)."""

    def __init__(self, upstream: Upstream) -> None:
        self.upstream = upstream

    async def sampling(self, params: types.CreateMessageRequestParams) -> Any:
        return await self.upstream.relay.sampling(self.upstream, params)

    async def elicitation(self, params: types.ElicitRequestParams) -> Any:
        return await self.upstream.relay.elicitation(self.upstream, params)

    async def list_roots(self) -> Any:
        return await self.upstream.relay.list_roots(self.upstream)

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        await self.upstream.relay.log(self.upstream, params)

    def notification(self, message: types.ServerNotification) -> None:
        self.upstream._on_notification(message)

    def transport_error(self, error: Exception) -> None:
        logger.warning("server %s: transport error: %s", self.upstream.name, error)

    def refresh_waiting(self, lists: str) -> bool:
        refresh = self.upstream._refreshes.get(lists)
        return refresh is not None and refresh.waiting

    def lost(self, session: Session, reason: str) -> None:
        self.upstream._on_session_lost(session, reason)


class Upstream:
    """Holds the session(s) to one server, opened at start and reused by every call."""

    def __init__(
        self,
        config: ServerConfig,
        *,
        events: EventBus | None = None,
        relay: DownstreamRelay | None = None,
    ) -> None:
        self.config = config
        self.state = UpstreamState.STOPPED if config.enabled else UpstreamState.DISABLED
        self.history = StateHistory()
        self._last_error: str | None = None
        self._redactor: tuple[ServerConfig, SecretRedactor] | None = None
        self.ready_since: float | None = None
        self.tools: list[types.Tool] = []
        # Set by the catalog: tools it will not expose, printable name -> why (catalog/tool_admission.py).
        self.refused_tools: dict[str, str] = {}
        self.resources: list[types.Resource] = []
        self.resource_templates: list[types.ResourceTemplate] = []
        self.prompts: list[types.Prompt] = []
        self.relay: DownstreamRelay = relay or NoRelay()
        self.started_at: float | None = None  # when the current session became READY (monotonic)
        self.sessions_opened = 0  # successful connects since creation
        # Times the supervisor brought it back after a crash or failed health checks; an
        # operator's stop/start/restart and a config reload are not restarts.
        self.restarts = 0
        self.next_attempt_at: float | None = (
            None  # monotonic time of the next restart attempt, if one is planned
        )
        # Callers of the calls in flight here, newest last: where this server's
        # sampling/elicitation requests and log messages go (the protocol gives no link
        # from such a request back to the call that caused it).
        self.active_callers: list[Any] = []
        # Where this server's changes are told (events.py): the gateway's bus, or one of its own.
        self.events = events if events is not None else EventBus()
        self._session: Session | None = None
        self._lost: Session | None = None  # the last session that died on its own
        self._lost_reason: str | None = None
        self._bridges: dict[Era, Session | None] = {}  # other-era sessions, opened on first need
        self._bridge_lock = asyncio.Lock()
        self._starting: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[Any]] = set()
        self._watched_resources: set[str] = set()
        self._listen_task: asyncio.Task[None] | None = None
        self._ready_event = asyncio.Event()  # set while READY or DEGRADED: callers waiting for a start
        # After list_changed, a health check or an expired ttlMs: one refresh running and one
        # waiting per list, spaced (list_refresh.py).
        self._refreshes: dict[str, ListRefresh] = {
            kind: ListRefresh(
                self.name,
                kind,
                functools.partial(self._refresh_listed, kind),
                lambda: self.config.limits.list_refresh_interval,
                self._spawn,
                on_heard=functools.partial(self._heard, kind),
            )
            for kind in ("tools", "resources", "prompts")
        }
        self._tools_expiry = ListExpiry(self.relist_tools, lambda: self.config.limits.list_refresh_interval)

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def last_error(self) -> str | None:
        """Why the server last failed, with every configured secret redacted (it is shown everywhere)."""
        return self._last_error

    @last_error.setter
    def last_error(self, value: str | None) -> None:
        if value:
            known = self._redactor
            if known is None or known[0] is not self.config:  # the config changes on reload
                known = self._redactor = (self.config, SecretRedactor.for_server(self.config))
            value = known[1].redact(value)
        self._last_error = value

    def __repr__(self) -> str:
        return f"Upstream({self.name!r}, {self.config.transport}, {self.state})"

    # -- state -------------------------------------------------------------------------

    def _set_state(self, state: UpstreamState, reason: str) -> None:
        if state == self.state:
            return
        previous = self.state
        self.history.record(previous, state, reason)
        self.state = state
        if state == UpstreamState.READY:
            self.ready_since = time.time()
            if self.started_at is None:
                self.started_at = time.monotonic()
        elif state not in (UpstreamState.DEGRADED, UpstreamState.ERROR) or self._session is None:
            # DEGRADED and a health-check ERROR keep the session (and its uptime); anything else ends it.
            self.ready_since = None
            self.started_at = None
        if self.is_ready:
            self._ready_event.set()
        else:
            self._ready_event.clear()
        log = logger.warning if state in (UpstreamState.ERROR, UpstreamState.CRASHED) else logger.info
        log("server %s: %s -> %s (%s)", self.name, previous, state, reason)
        self.events.publish(ServerStateChanged(self))

    def mark(self, state: UpstreamState, reason: str) -> None:
        """Record a state decided outside the session (health checks, the restart policy)."""
        if state == UpstreamState.ERROR:
            self.last_error = reason
        self._set_state(state, reason)

    @property
    def uptime(self) -> float | None:
        """Seconds since the current session became READY, or None when there is none."""
        return None if self.started_at is None else time.monotonic() - self.started_at

    @property
    def has_session(self) -> bool:
        """A session is open (whatever health checks think of it)."""
        return self._session is not None and self._session.open

    @property
    def is_ready(self) -> bool:
        return self.state in (UpstreamState.READY, UpstreamState.DEGRADED) and self.has_session

    @property
    def pid(self) -> int | None:
        """The stdio child's process id while it runs (None for other transports)."""
        return self._session.pid if self._session is not None else None

    @property
    def protocol_version(self) -> str | None:
        return self._session.protocol_version if self._session is not None else None

    @property
    def capabilities(self) -> types.ServerCapabilities | None:
        return self._session.capabilities if self._session is not None else None

    @property
    def server_info(self) -> types.Implementation | None:
        return self._session.server_info if self._session is not None else None

    @property
    def stderr_tail(self) -> list[str]:
        session = self._session
        forwarder = getattr(session, "stderr", None)
        return list(forwarder.tail) if forwarder is not None else []

    async def wait_ready(self, timeout: float) -> bool:
        """Wait up to `timeout` seconds for READY (a caller of a server still connecting)."""
        if self.is_ready:
            return True
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._ready_event.wait()
        return self.is_ready

    @property
    def connecting(self) -> bool:
        return self._starting is not None and not self._starting.done()

    # -- lifecycle -----------------------------------------------------------------------

    def _open_session(self, era: Era) -> Session:
        # Every transport, built-in or a plugin's, is looked up by name (upstream/session_types.py).
        return session_type(self.config.transport)(self.config, _Events(self), era=era)

    async def start(self, timeout: float | None = None, reason: str = "starting") -> None:
        """Connect and list what the server offers; on failure the state is ERROR with the reason.

        `stop()` cancels a start in progress at once (the half-started child is ended).
        """
        if not self.config.enabled:
            self._set_state(UpstreamState.DISABLED, "disabled in config")
            return
        if self.has_session or self.connecting:
            return
        self._set_state(UpstreamState.CONNECTING, reason)
        wait_for = timeout if timeout is not None else self.config.timeouts.connect + 20
        task = self._starting = asyncio.create_task(self._connect(wait_for), name=f"start-{self.name}")
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            if task.cancelled():
                return  # aborted by stop()
            task.cancel()  # our own caller gave up: so does the start
            raise

    async def _connect(self, wait_for: float) -> None:
        try:
            session = self._open_session(self.config.protocol)
        except Exception as exc:  # a plugin's session class that cannot be imported or built
            self.last_error = f"cannot open a {self.config.transport!r} session: {describe_error(exc)}"
            self._set_state(UpstreamState.ERROR, self.last_error)
            return
        # A network server that accepts the connection but never answers is bounded by the
        # connect timeout (the seed's 10 s); a process may take longer to start (npx, uvx).
        network = transport_kind(self.config.transport) == "network"
        limit = min(wait_for, self.config.timeouts.connect) if network else wait_for
        handshaking = True
        try:
            async with asyncio.timeout(limit):
                await session.start()
            handshaking = False
            async with asyncio.timeout(wait_for):
                self._session = session
                await self._refresh_all()
        except TimeoutError:
            self._session = None
            await session.close(grace=1.0)
            self.last_error = (
                f"no answer to the handshake within the connect timeout ({limit:g} s)"
                if handshaking and limit < wait_for
                else f"did not become ready within {wait_for:g} s"
            )
            self._set_state(UpstreamState.ERROR, self.last_error)
            return
        except asyncio.CancelledError:
            self._session = None
            await asyncio.shield(session.close(grace=1.0))
            raise
        except Exception as exc:
            self._session = None
            await session.close(grace=1.0)
            self.last_error = session.exit_reason or describe_error(exc)
            self._set_state(UpstreamState.ERROR, self.last_error)
            return
        self.last_error = None
        self.sessions_opened += 1
        self._set_state(UpstreamState.READY, f"connected ({session.protocol_version})")
        if session.modern:
            self._restart_listen()

    def _on_session_lost(self, session: Session, reason: str) -> None:
        if session is self._lost:
            # A later, fuller account of the same loss (e.g. with the child's last words).
            first = self._lost_reason
            if first and self.last_error is not None and first in self.last_error:
                self.last_error = self.last_error.replace(first, reason)
                self._lost_reason = reason
            return
        if session is not self._session:
            if any(bridge is session for bridge in self._bridges.values()):
                self._bridges.pop("legacy", None)  # a lost bridge is reopened on next need
            return
        self._session = None
        self._lost = session
        self._lost_reason = reason
        self.last_error = reason
        self._cancel_background()
        self._set_state(UpstreamState.CRASHED, reason)
        self.events.publish(ServerListRead(self, "tools"))

    def abort_start(self) -> None:
        """Cancel a start in progress now (its half-started session is closed by the start itself)."""
        starting = self._starting
        if starting is not None and not starting.done():
            starting.cancel()

    async def stop(self, reason: str = "stopped", *, keep_error: bool = False) -> None:
        """End the session(s) (and the stdio child); the state becomes STOPPED (DISABLED when disabled).

        With `keep_error`, an ERROR or CRASHED state stays as it is so the reason stays visible
        (the restart policy stops what is left of a failed server this way).
        """
        starting, self._starting = self._starting, None
        if starting is not None and not starting.done():
            starting.cancel()
            with contextlib.suppress(BaseException):
                await starting
        session, self._session = self._session, None
        bridges = [s for s in self._bridges.values() if s is not None]
        self._bridges = {}
        self._cancel_background()
        await asyncio.gather(*(s.close() for s in [session, *bridges] if s is not None))
        if keep_error and self.state in (UpstreamState.ERROR, UpstreamState.CRASHED):
            return
        self._set_state(UpstreamState.STOPPED if self.config.enabled else UpstreamState.DISABLED, reason)

    def _cancel_background(self) -> None:
        self._tools_expiry.cancel()
        for task in list(self._background):
            task.cancel()
        self._listen_task = None

    def _spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background_done)
        return task

    def _background_done(self, task: asyncio.Task[Any]) -> None:
        self._background.discard(task)
        if not task.cancelled() and (exc := task.exception()) is not None:  # retrieved: never left to asyncio
            logger.info(
                "server %s: background task %s failed: %s", self.name, task.get_name(), describe_error(exc)
            )

    # -- what the server offers ------------------------------------------------------------

    async def _refresh_all(self) -> None:
        await asyncio.gather(self.refresh_tools(), self.refresh_resources(), self.refresh_prompts())

    async def refresh_tools(self, *, quiet_if_same: bool = False) -> None:
        session = self._session
        if session is None or session.capabilities.tools is None:
            self.tools = []
            return
        tools, ttl_ms = await list_tools_with_ttl(session)
        if session is self._session:
            self._tools_expiry.schedule(ttl_ms)
        if quiet_if_same and tools == self.tools:
            return  # a re-check found nothing new: no catalog rebuild
        self.tools = tools
        self.events.publish(ServerListRead(self, "tools"))

    def relist_tools(self) -> None:
        """Read the tool list again (the health check, an expired ttlMs): a server may change its
        tools without list_changed. Coalesced with list_changed refreshes (list_refresh.py)."""
        if self.has_session:
            self._refreshes["tools"].request(heard=False)

    async def refresh_resources(self) -> None:
        session = self._session
        if session is None or session.capabilities.resources is None:
            self.resources, self.resource_templates = [], []
            return
        self.resources = await session.list_resources()
        self.resource_templates = await session.list_resource_templates()
        self.events.publish(ServerListRead(self, "resources"))

    async def refresh_prompts(self) -> None:
        session = self._session
        if session is None or session.capabilities.prompts is None:
            self.prompts = []
            return
        self.prompts = await session.list_prompts()
        self.events.publish(ServerListRead(self, "prompts"))

    def _on_notification(self, message: types.ServerNotification) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._refreshes["tools"].request()
        elif isinstance(message, types.ResourceListChangedNotification):
            self._refreshes["resources"].request()
        elif isinstance(message, types.PromptListChangedNotification):
            self._refreshes["prompts"].request()
        elif isinstance(message, types.ResourceUpdatedNotification):
            self.events.publish(ResourceUpdated(str(message.params.uri), self))

    async def _refresh_listed(self, lists: str) -> None:
        """One coalesced refresh of a list (ListRefresh tells who listens first when the server said so)."""
        if lists == "tools":
            await self.refresh_tools(quiet_if_same=True)
        elif lists == "resources":
            await self.refresh_resources()
        else:
            await self.refresh_prompts()

    def _heard(self, lists: str) -> None:
        """The server itself said a list changed: other replicas may want to know."""
        self.events.publish(ServerAnnouncedChange(self, lists))

    async def watch_resource(self, uri: str, watch: bool) -> None:
        """Follow (or stop following) updates of one resource on a 2026-07-28 server."""
        if watch:
            self._watched_resources.add(uri)
        else:
            self._watched_resources.discard(uri)
        self._restart_listen()

    def _restart_listen(self) -> None:
        # One listen stream carries every kind of change; its filter is fixed when it opens,
        # so a new resource watch replaces the stream.
        if self._listen_task is not None:
            self._listen_task.cancel()
        session = self._session
        if session is None:
            return
        self._listen_task = self._spawn(self._listen_modern(session, sorted(self._watched_resources)))

    async def _listen_modern(self, session: Session, resources_watched: list[str]) -> None:
        caps = session.capabilities
        tools = bool(caps.tools and caps.tools.list_changed)
        prompts = bool(caps.prompts and caps.prompts.list_changed)
        resources = bool(caps.resources and caps.resources.list_changed)
        if not (tools or prompts or resources or resources_watched):
            return
        try:
            async with listen(
                session.sdk(),
                tools_list_changed=tools,
                prompts_list_changed=prompts,
                resources_list_changed=resources,
                resource_subscriptions=resources_watched,
            ) as subscription:
                async for event in subscription:
                    kind = type(event).__name__
                    if kind == "ToolsListChanged":
                        self._refreshes["tools"].request()
                    elif kind == "PromptsListChanged":
                        self._refreshes["prompts"].request()
                    elif kind == "ResourcesListChanged":
                        self._refreshes["resources"].request()
                    elif kind == "ResourceUpdated":
                        self.events.publish(ResourceUpdated(str(getattr(event, "uri", "")), self))
        except Exception as exc:  # a lost listen stream only costs freshness, never the session
            logger.info("server %s: subscriptions/listen ended: %s", self.name, exc)

    # -- calls ------------------------------------------------------------------------------

    def session(self) -> Session:
        session = self._session
        if session is None or not self.is_ready:
            reason = f": {self.last_error}" if self.last_error else ""
            raise UpstreamUnavailable(f"server {self.name!r} is {self.state}{reason}")
        return session

    def _primary_serves(self, era: CallerEra, primary: Session) -> bool:
        """Whether the primary session serves this caller (all but handshake-era callers that take
        server requests, when the primary speaks 2026-07-28)."""
        return era.modern or not era.back_channel or not primary.modern or self.config.protocol == "legacy"

    async def session_for(self, era: CallerEra) -> Session:
        """The session that serves this caller: the primary, or a handshake-era one on first need."""
        primary = self.session()
        if self._primary_serves(era, primary):
            return primary
        if "legacy" in self._bridges:
            known = self._bridges["legacy"]
            if known is None:
                return primary  # the server has no handshake era: nothing better to offer
            if known.open:
                return known
        async with self._bridge_lock:
            existing = self._bridges.get("legacy")
            if existing is not None and existing.open:
                return existing
            opened = self._open_session("legacy")
            try:
                async with asyncio.timeout(self.config.timeouts.connect + 5):
                    await opened.start()
            except Exception as exc:
                logger.warning(
                    "server %s: no handshake-era session (%s); using %s",
                    self.name,
                    exc,
                    primary.protocol_version,
                )
                await opened.close(grace=1.0)
                self._bridges["legacy"] = None
                return primary
            logger.info(
                "server %s: opened a handshake-era session for callers that take server requests", self.name
            )
            self._bridges["legacy"] = opened
            return opened

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        *,
        era: CallerEra = CallerEra(),
        progress: ProgressFnT | None = None,
        timeout: float | None = None,
        meta: dict[str, Any] | None = None,
        capabilities: dict[str, Any] | None = None,
        round_: CallRound | None = None,
        answer_input: InputAnswerer | None = None,
    ) -> ToolOutcome:
        primary = self.session()
        # The primary without a coroutine of its own (the hot path); a bridge only on first need.
        session = primary if self._primary_serves(era, primary) else await self.session_for(era)
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
        session = self._session
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
