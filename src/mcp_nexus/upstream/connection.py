"""The session lifecycle of one server: connect within its timeouts, notice a loss, close.

The session (transport) is chosen once per connect by `open_session`; nothing here looks at
the transport again except to bound a network handshake. The order of things is the point of
this module: a session is adopted before its lists are read (they are read through it), the
work that served a session ends before the state says it is gone, a start in progress is
cancelled before the sessions close, and a loss reported twice (a fuller account with the
child's last words) rewrites the reason instead of counting a second crash. Separate from the
facade (upstream.py) so that these rules sit together; the state itself is status.py's.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

import mcp_types as types

from mcp_nexus.config.schema import ServerConfig
from mcp_nexus.upstream.background_tasks import BackgroundTasks
from mcp_nexus.upstream.client_era import ClientEra
from mcp_nexus.upstream.era_bridge import EraBridge
from mcp_nexus.upstream.negotiate import Era, era_for, follows_client
from mcp_nexus.upstream.offered_lists import OfferedLists
from mcp_nexus.upstream.server_changes import ServerChanges
from mcp_nexus.upstream.session import Session, describe_error
from mcp_nexus.upstream.session_types import transport_kind
from mcp_nexus.upstream.state import UpstreamState
from mcp_nexus.upstream.status import ServerStatus

# States a `stop(keep_error=True)` leaves as they are: each says why the server is not serving.
KEPT_ON_STOP = (UpstreamState.ERROR, UpstreamState.CRASHED, UpstreamState.NEEDS_AUTH)


class Connection:
    def __init__(
        self,
        *,
        config: Callable[[], ServerConfig],
        status: ServerStatus,
        lists: OfferedLists,
        changes: ServerChanges,
        background: BackgroundTasks,
        open_session: Callable[[Era], Session],
        client_era: ClientEra | None = None,
    ) -> None:
        self._config = config  # read at each use: a reload replaces it
        self._status = status
        self._lists = lists
        self._changes = changes
        self._background = background
        self._open_session = open_session
        self._client_era = client_era  # the gateway's one stdio client's, for `protocol: auto` to follow
        self.session: Session | None = None  # the primary session, while one is adopted
        self.bridge = EraBridge(config=config, open_session=open_session)
        self.sessions_opened = 0  # successful connects since creation
        self._lost: Session | None = None  # the last session that died on its own
        self._lost_reason: str | None = None
        self._starting: asyncio.Task[None] | None = None

    @property
    def has_session(self) -> bool:
        """A session is open (whatever health checks think of it)."""
        return self.session is not None and self.session.open

    @property
    def connecting(self) -> bool:
        return self._starting is not None and not self._starting.done()

    @property
    def pid(self) -> int | None:
        """The stdio child's process id while it runs (None for other transports)."""
        return self.session.pid if self.session is not None else None

    @property
    def protocol_version(self) -> str | None:
        return self.session.protocol_version if self.session is not None else None

    @property
    def capabilities(self) -> types.ServerCapabilities | None:
        return self.session.capabilities if self.session is not None else None

    @property
    def server_info(self) -> types.Implementation | None:
        return self.session.server_info if self.session is not None else None

    @property
    def stderr_tail(self) -> list[str]:
        forwarder = getattr(self.session, "stderr", None)
        return list(forwarder.tail) if forwarder is not None else []

    async def start(self, timeout: float | None = None, reason: str = "starting") -> None:
        """Connect and list what the server offers; on failure the state is ERROR with the reason.

        `stop()` cancels a start in progress at once (the half-started child is ended).
        """
        config = self._config()
        if not config.enabled:
            self._status.set(UpstreamState.DISABLED, "disabled in config")
            return
        if self.has_session or self.connecting:
            return
        self._status.set(UpstreamState.CONNECTING, reason)
        wait_for = timeout if timeout is not None else config.timeouts.connect + 20
        task = self._starting = asyncio.create_task(self._connect(wait_for), name=f"start-{config.name}")
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            if task.cancelled():
                return  # aborted by stop()
            task.cancel()  # our own caller gave up: so does the start
            raise

    async def _connect(self, wait_for: float) -> None:
        config = self._config()
        try:
            client = None
            if self._client_era is not None and follows_client(config.protocol, config.transport):
                client = await self._client_era.era()
            session = self._open_session(era_for(config.protocol, config.transport, client))
        except Exception as exc:  # a plugin's session class that cannot be imported or built
            self._status.fail(f"cannot open a {config.transport!r} session: {describe_error(exc)}")
            return
        # A network server that accepts the connection but never answers is bounded by the
        # connect timeout (the seed's 10 s); a process may take longer to start (npx, uvx).
        network = transport_kind(config.transport) == "network"
        limit = min(wait_for, config.timeouts.connect) if network else wait_for
        handshaking = True
        try:
            async with asyncio.timeout(limit):
                await session.start()
            handshaking = False
            async with asyncio.timeout(wait_for):
                self.session = session  # adopted first: the lists are read through it
                await self._lists.refresh_all()
        except TimeoutError:
            self.session = None
            await session.close(grace=1.0)
            self._status.fail(
                f"no answer to the handshake within the connect timeout ({limit:g} s)"
                if handshaking and limit < wait_for
                else f"did not become ready within {wait_for:g} s"
            )
            return
        except asyncio.CancelledError:
            self.session = None
            await asyncio.shield(session.close(grace=1.0))
            raise
        except Exception as exc:
            self.session = None
            await session.close(grace=1.0)
            if session.login_needed:  # waits for a person: NEEDS_AUTH, never ERROR (no retry loop)
                self._status.last_error = session.login_needed
                self._status.set(UpstreamState.NEEDS_AUTH, self._status.last_error or session.login_needed)
                return
            self._status.fail(session.exit_reason or describe_error(exc))
            return
        self._status.last_error = None
        self.sessions_opened += 1
        self._status.set(UpstreamState.READY, f"connected ({session.protocol_version})")
        if session.modern:
            self._changes.listen()

    def lost(self, session: Session, reason: str) -> None:
        """A session died on its own (session.SessionEvents.lost)."""
        status = self._status
        if session is self._lost:
            # A later, fuller account of the same loss (e.g. with the child's last words).
            first = self._lost_reason
            if first and status.last_error is not None and first in status.last_error:
                status.last_error = status.last_error.replace(first, reason)
                self._lost_reason = reason
            return
        if session is not self.session:
            self.bridge.forget(session)  # a lost bridge is reopened on next need
            return
        self.session = None
        self._lost = session
        self._lost_reason = reason
        status.last_error = reason
        self._wind_down()
        status.set(UpstreamState.CRASHED, reason)
        self._lists.session_lost()

    def abort_start(self) -> None:
        """Cancel a start in progress now (its half-started session is closed by the start itself)."""
        starting = self._starting
        if starting is not None and not starting.done():
            starting.cancel()

    async def stop(self, reason: str = "stopped", *, keep_error: bool = False) -> None:
        """End the session(s) (and the stdio child); the state becomes STOPPED (DISABLED when disabled).

        With `keep_error`, an ERROR, CRASHED or NEEDS_AUTH state stays as it is so the reason
        stays visible (the restart policy stops what is left of a failed server this way).
        """
        starting, self._starting = self._starting, None
        if starting is not None and not starting.done():
            starting.cancel()
            with contextlib.suppress(BaseException):
                await starting
        session, self.session = self.session, None
        bridges = self.bridge.take()
        self._wind_down()
        await asyncio.gather(*(s.close() for s in [session, *bridges] if s is not None))
        if keep_error and self._status.state in KEPT_ON_STOP:
            return
        enabled = self._config().enabled
        self._status.set(UpstreamState.STOPPED if enabled else UpstreamState.DISABLED, reason)

    def _wind_down(self) -> None:
        """End the work that served the session that is going: its ttl timer, refreshes, listen stream."""
        self._lists.session_ended()
        self._background.cancel_all()
        self._changes.session_ended()
