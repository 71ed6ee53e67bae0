"""The Xiaozhi frontend as one object: every configured endpoint, plus the envelope roles.

bridge = XiaozhiBridge(gateway, with_env_endpoints(config.xiaozhi))
await bridge.start()        # after gateway.start()
bridge.status()             # one dict per link, URLs masked
await bridge.stop()         # before gateway.stop()
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from mcp_nexus.config.xiaozhi import XiaozhiSettings
from mcp_nexus.events import ListChanged
from mcp_nexus.frontends.xiaozhi.connection import EndpointConnection
from mcp_nexus.frontends.xiaozhi.envelope_client import EnvelopeClient
from mcp_nexus.frontends.xiaozhi.envelope_server import EnvelopeServer
from mcp_nexus.frontends.xiaozhi.tool_view import ToolView
from mcp_nexus.gateway import Gateway

logger = logging.getLogger(__name__)

XIAOZHI_FRONTEND = "xiaozhi"  # the Caller.frontend of every call made through this bridge


class XiaozhiBridge:
    def __init__(self, gateway: Gateway, settings: XiaozhiSettings | None = None) -> None:
        self.gateway = gateway
        self.settings = settings if settings is not None else gateway.config.xiaozhi
        # One tool view per profile the endpoints are in (`xiaozhi.profile`, or an endpoint's own):
        # endpoints of one profile share its names and pages.
        self.views: dict[str | None, ToolView] = {}
        self.view = self._view_for(self.settings.profile)
        self.endpoints = [
            EndpointConnection(
                gateway, url, self.settings, self._view_for(self.settings.profile_of(index)), index
            )
            for index, url in enumerate(self.settings.endpoints)
        ]
        call_timeout = self.settings.call_timeout
        self.envelope_server = (
            EnvelopeServer(gateway, self.settings.envelope_server, call_timeout=call_timeout)
            if self.settings.envelope_server.enabled
            else None
        )
        self.envelope_client = (
            EnvelopeClient(gateway, self.settings.envelope_client, call_timeout=call_timeout)
            if self.settings.envelope_client.url
            else None
        )
        self._remove_listener: Any = None
        self._tasks: set[asyncio.Task[None]] = set()

    def _view_for(self, profile: str | None) -> ToolView:
        view = self.views.get(profile)
        if view is None:
            view = self.views[profile] = ToolView(
                self.gateway.catalog,
                self.settings.tools,
                map_names=True,
                search=lambda: self.gateway.config.gateway.tool_search,
                profiles=self.gateway.profiles,
                profile=profile,
            )
        return view

    @property
    def configured(self) -> bool:
        """True when there is anything to run (`nexus serve` starts the bridge only then)."""
        return bool(self.endpoints or self.envelope_server or self.envelope_client)

    async def start(self) -> None:
        self._remove_listener = self.gateway.events.subscribe(ListChanged, self._on_list_change)
        if self.envelope_server is not None:
            await self.envelope_server.start()
        for connection in self.endpoints:
            connection.start()
        if self.envelope_client is not None:
            self.envelope_client.start()

    async def stop(self) -> None:
        if self._remove_listener is not None:
            self._remove_listener()
            self._remove_listener = None
        await asyncio.gather(*(c.stop() for c in self.endpoints))
        if self.envelope_client is not None:
            await self.envelope_client.stop()
        if self.envelope_server is not None:
            await self.envelope_server.stop()
        for task in list(self._tasks):
            task.cancel()
            with contextlib.suppress(BaseException):
                await task

    async def __aenter__(self) -> XiaozhiBridge:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    def status(self) -> list[dict[str, Any]]:
        """One dict per link: role, masked url, connected, since, calls_served, last_error, last_close_code, ..."""
        links = [c.status for c in self.endpoints]
        if self.envelope_client is not None:
            links.append(self.envelope_client.status)
        if self.envelope_server is not None:
            links.append(self.envelope_server.status)
        return [link.as_dict() for link in links]

    def _on_list_change(self, event: ListChanged) -> None:
        if event.kind != "tools":
            return
        for connection in self.endpoints:
            task = asyncio.get_running_loop().create_task(connection.notify_tools_changed())
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
