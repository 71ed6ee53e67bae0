"""Which session carries a caller's call: the primary, or a handshake-era one opened beside it.

In 2026-07-28 a server has no back-channel, so its sampling, elicitation and roots requests
can only reach a caller over a handshake-era session. When the server speaks both eras and the
primary session is 2026-07-28, a handshake-era caller that can answer such requests gets a
handshake-era session of its own, opened on first need and shared by every such caller; when
the server cannot speak that era the primary serves anyway. Everyone else is served by the
primary. Separate from the primary's lifecycle (connection.py) because this session is opened
per need, never at start, and its loss or failure costs nothing but that routing.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from mcp_nexus.config.schema import ServerConfig
from mcp_nexus.upstream.negotiate import Era
from mcp_nexus.upstream.session import Session

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CallerEra:
    """What a call's caller needs from the session that carries it."""

    modern: bool = False  # speaks 2026-07-28: input requests travel back to it as results
    back_channel: bool = False  # a handshake-era caller that can answer sampling/elicitation/roots

    @staticmethod
    def of(modern: bool, back_channel: bool) -> CallerEra:
        """The one instance of these values (made per call, a frozen dataclass costs ~1 us; there are four)."""
        return _ERAS[modern, back_channel]


_ERAS = {(modern, back): CallerEra(modern, back) for modern in (False, True) for back in (False, True)}


class EraBridge:
    def __init__(self, *, config: Callable[[], ServerConfig], open_session: Callable[[Era], Session]) -> None:
        self._config = config  # read at each use: a reload replaces it
        self._open_session = open_session
        self._session: Session | None = None  # the handshake-era session, once opened
        self._unavailable = False  # tried, and the server has no handshake era
        self._lock = asyncio.Lock()

    def primary_serves(self, era: CallerEra, primary: Session) -> bool:
        """Whether the primary session serves this caller (all but handshake-era callers that take
        server requests, when the primary speaks 2026-07-28)."""
        return era.modern or not era.back_channel or not primary.modern or self._config().protocol == "legacy"

    async def session_for(self, era: CallerEra, primary: Session) -> Session:
        """The session that serves this caller: the primary, or a handshake-era one on first need."""
        if self.primary_serves(era, primary):
            return primary
        if self._unavailable:
            return primary  # the server has no handshake era: nothing better to offer
        if self._session is not None and self._session.open:
            return self._session
        async with self._lock:
            existing = self._session
            if existing is not None and existing.open:
                return existing
            config = self._config()
            opened = self._open_session("legacy")
            try:
                async with asyncio.timeout(config.timeouts.connect + 5):
                    await opened.start()
            except Exception as exc:
                logger.warning(
                    "server %s: no handshake-era session (%s); using %s",
                    config.name,
                    exc,
                    primary.protocol_version,
                )
                await opened.close(grace=1.0)
                self._session, self._unavailable = None, True
                return primary
            logger.info(
                "server %s: opened a handshake-era session for callers that take server requests", config.name
            )
            self._session, self._unavailable = opened, False
            return opened

    def forget(self, session: Session) -> None:
        """A session was lost: if it was this one, the next caller that needs it opens another."""
        if session is self._session:
            self._session, self._unavailable = None, False

    def take(self) -> list[Session]:
        """Hand over the session to close (the upstream stops); the next need starts afresh."""
        session, self._session, self._unavailable = self._session, None, False
        return [session] if session is not None else []
