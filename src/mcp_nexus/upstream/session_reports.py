"""Where a session's reports go (session.SessionEvents): each to the part of its upstream that handles it.

A session knows only this object, not the upstream: the server's own requests and log
messages go to the relay (downstream_relay.py) naming the server (log messages to the gateway's
log first, bounded: log_records.py), notifications to its change
feed (server_changes.py), the question "is a refresh already waiting" to its lists
(offered_lists.py), and its loss to its connection (connection.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import mcp_types as types

from mcp_nexus.upstream.downstream_relay import DownstreamRelay, RelayedServer
from mcp_nexus.upstream.log_records import ServerLogRecords
from mcp_nexus.upstream.offered_lists import OfferedLists
from mcp_nexus.upstream.server_changes import ServerChanges
from mcp_nexus.upstream.session import Session

logger = logging.getLogger(__name__)


class SessionReports:
    def __init__(
        self,
        server: RelayedServer,
        *,
        relay: Callable[[], DownstreamRelay],
        changes: ServerChanges,
        lists: OfferedLists,
        lost: Callable[[Session, str], None],
        log_records: ServerLogRecords,
    ) -> None:
        self._server = server
        self._relay = relay  # read at each request: the gateway may install its own
        self._changes = changes
        self._lists = lists
        self._lost = lost
        self._log_records = log_records

    async def sampling(self, params: types.CreateMessageRequestParams) -> Any:
        return await self._relay().sampling(self._server, params)

    async def elicitation(self, params: types.ElicitRequestParams) -> Any:
        return await self._relay().elicitation(self._server, params)

    async def list_roots(self) -> Any:
        return await self._relay().list_roots(self._server)

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        self._log_records.log(str(params.level), params.data)  # the gateway's log, bounded per server
        await self._relay().log(self._server, params)

    def notification(self, message: types.ServerNotification) -> None:
        self._changes.notification(message)

    def transport_error(self, error: Exception) -> None:
        logger.warning("server %s: transport error: %s", self._server.name, error)

    def refresh_waiting(self, lists: str) -> bool:
        return self._lists.refresh_waiting(lists)

    def lost(self, session: Session, reason: str) -> None:
        self._lost(session, reason)
