"""What one server offers, as last read: its tools, resources (and templates) and prompts.

Owns the cached lists and every way they are read again: all at connect, one list through its
coalesced `ListRefresh` (the server's list_changed, the health check, an expired `ttlMs`;
list_refresh.py), and the tools list's `ListExpiry`. Separate from the session lifecycle
(connection.py) because a list is read many times within one session, for reasons that have
nothing to do with connecting; each read is told through `on_read` (the catalog rebuilds).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Coroutine
from typing import Any

import mcp_types as types

from mcp_nexus.config.schema import ServerConfig
from mcp_nexus.events import ListKind
from mcp_nexus.upstream.list_refresh import ListExpiry, ListRefresh, list_tools_with_ttl
from mcp_nexus.upstream.session import Session

LIST_KINDS: tuple[ListKind, ...] = ("tools", "resources", "prompts")


class OfferedLists:
    def __init__(
        self,
        server: str,
        *,
        session: Callable[[], Session | None],
        config: Callable[[], ServerConfig],
        spawn: Callable[[Coroutine[Any, Any, None]], asyncio.Task[Any]],
        on_read: Callable[[ListKind], None],
        on_heard: Callable[[ListKind], None],
    ) -> None:
        self.tools: list[types.Tool] = []
        self.resources: list[types.Resource] = []
        self.resource_templates: list[types.ResourceTemplate] = []
        self.prompts: list[types.Prompt] = []
        self._session = session  # the current session (None between sessions)
        self._on_read = on_read

        def interval() -> float:  # read at each use: a reload applies live
            return config().limits.list_refresh_interval

        # One refresh running and one waiting per list, spaced (list_refresh.py).
        self.refreshes: dict[str, ListRefresh] = {
            kind: ListRefresh(
                server,
                kind,
                functools.partial(self._refresh_one, kind),
                interval,
                spawn,
                on_heard=functools.partial(on_heard, kind),
            )
            for kind in LIST_KINDS
        }
        self.tools_expiry = ListExpiry(self.relist_tools, interval)

    async def refresh_all(self) -> None:
        await asyncio.gather(self.refresh_tools(), self.refresh_resources(), self.refresh_prompts())

    async def refresh_tools(self, *, quiet_if_same: bool = False) -> None:
        session = self._session()
        if session is None or session.capabilities.tools is None:
            self.tools = []
            return
        tools, ttl_ms = await list_tools_with_ttl(session)
        if session is self._session():
            self.tools_expiry.schedule(ttl_ms)
        if quiet_if_same and tools == self.tools:
            return  # a re-check found nothing new: no catalog rebuild
        self.tools = tools
        self._on_read("tools")

    def relist_tools(self) -> None:
        """Read the tool list again (the health check, an expired ttlMs): a server may change its
        tools without list_changed. Coalesced with list_changed refreshes (list_refresh.py)."""
        session = self._session()
        if session is not None and session.open:
            self.refreshes["tools"].request(heard=False)

    async def refresh_resources(self) -> None:
        session = self._session()
        if session is None or session.capabilities.resources is None:
            self.resources, self.resource_templates = [], []
            return
        self.resources = await session.list_resources()
        self.resource_templates = await session.list_resource_templates()
        self._on_read("resources")

    async def refresh_prompts(self) -> None:
        session = self._session()
        if session is None or session.capabilities.prompts is None:
            self.prompts = []
            return
        self.prompts = await session.list_prompts()
        self._on_read("prompts")

    def announced(self, kind: ListKind) -> None:
        """The server said this list changed: refresh it (coalesced with any refresh waiting)."""
        self.refreshes[kind].request()

    def refresh_waiting(self, kind: str) -> bool:
        refresh = self.refreshes.get(kind)
        return refresh is not None and refresh.waiting

    def session_ended(self) -> None:
        """The session went: its ttl timer goes with it (its refresh tasks end with the background)."""
        self.tools_expiry.cancel()

    def session_lost(self) -> None:
        """The session died on its own: readers look again (a crashed server's tools leave the catalog)."""
        self._on_read("tools")

    async def _refresh_one(self, kind: ListKind) -> None:
        """One coalesced refresh of a list (ListRefresh tells who listens first when the server said so)."""
        if kind == "tools":
            await self.refresh_tools(quiet_if_same=True)
        elif kind == "resources":
            await self.refresh_resources()
        else:
            await self.refresh_prompts()
