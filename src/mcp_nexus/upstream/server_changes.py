"""Hearing of one server's changes: list_changed and resource updates, by either protocol era's route.

A handshake-era server sends notifications on its session; a 2026-07-28 server has no
back-channel and is followed through one `subscriptions/listen` stream, whose filter is fixed
when it opens (so a new resource watch replaces the stream). Both routes end the same way: the
list's coalesced refresh (offered_lists.py) or `on_updated(uri)` (a `ResourceUpdated` event).
Separate from the lists because this is about hearing of changes and which resources are
watched, not about reading lists.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

import mcp_types as types
from mcp.client.subscriptions import listen

from mcp_nexus.upstream.offered_lists import OfferedLists
from mcp_nexus.upstream.session import Session

logger = logging.getLogger(__name__)


class ServerChanges:
    def __init__(
        self,
        server: str,
        *,
        session: Callable[[], Session | None],
        lists: OfferedLists,
        spawn: Callable[[Coroutine[Any, Any, None]], asyncio.Task[Any]],
        on_updated: Callable[[str], None],
    ) -> None:
        self._server = server
        self._session = session  # the current session (None between sessions)
        self._lists = lists
        self._spawn = spawn
        self._on_updated = on_updated
        self._watched_resources: set[str] = set()
        self._listen_task: asyncio.Task[None] | None = None

    def notification(self, message: types.ServerNotification) -> None:
        """A handshake-era server's notification."""
        if isinstance(message, types.ToolListChangedNotification):
            self._lists.announced("tools")
        elif isinstance(message, types.ResourceListChangedNotification):
            self._lists.announced("resources")
        elif isinstance(message, types.PromptListChangedNotification):
            self._lists.announced("prompts")
        elif isinstance(message, types.ResourceUpdatedNotification):
            self._on_updated(str(message.params.uri))

    def watch_resource(self, uri: str, watch: bool) -> None:
        """Follow (or stop following) updates of one resource on a 2026-07-28 server."""
        if watch:
            self._watched_resources.add(uri)
        else:
            self._watched_resources.discard(uri)
        self.listen()

    def listen(self) -> None:
        """(Re)open the listen stream of a 2026-07-28 session with the current watches."""
        # One listen stream carries every kind of change; its filter is fixed when it opens,
        # so a new resource watch replaces the stream.
        if self._listen_task is not None:
            self._listen_task.cancel()
        session = self._session()
        if session is None:
            return
        self._listen_task = self._spawn(self._listen_modern(session, sorted(self._watched_resources)))

    def session_ended(self) -> None:
        """The session went: its stream was cancelled with the background tasks."""
        self._listen_task = None

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
                        self._lists.announced("tools")
                    elif kind == "PromptsListChanged":
                        self._lists.announced("prompts")
                    elif kind == "ResourcesListChanged":
                        self._lists.announced("resources")
                    elif kind == "ResourceUpdated":
                        self._on_updated(str(getattr(event, "uri", "")))
        except Exception as exc:  # a lost listen stream only costs freshness, never the session
            logger.info("server %s: subscriptions/listen ended: %s", self._server, exc)
