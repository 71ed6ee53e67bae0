"""list_changed between replicas: what one replica's upstream announces, every replica's clients hear.

Each replica keeps its own session to each upstream, and a server may announce a change only
on the session whose call caused it. The replica that heard it publishes
`{"type": "list_changed", "server": ..., "lists": "tools"}` on the events bus; the others ask
their own session to that server for the list again, and the ordinary rebuild tells their
clients (tools/list_changed, subscriptions/listen). A refresh made this way is not "heard",
so it is never published again: no echo between replicas. After the bus was cut off (Redis
down), every list of every ready upstream is fetched again: changes announced meanwhile were missed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine, Mapping
from typing import Any

from mcp_nexus.events import ServerAnnouncedChange
from mcp_nexus.stores.events import EventBus
from mcp_nexus.upstream.upstream import Upstream

logger = logging.getLogger(__name__)

EVENT_TYPE = "list_changed"


class ListChangeFanout:
    def __init__(self, bus: EventBus, upstreams: Mapping[str, Upstream]) -> None:
        self.bus = bus
        self.upstreams = upstreams  # the gateway's live mapping: servers added by a reload count
        self.published = 0
        self.applied = 0
        self._tasks: set[asyncio.Task[Any]] = set()
        bus.subscribe(self.on_event)

    def heard(self, event: ServerAnnouncedChange) -> None:
        """This replica's session to a server heard it announce a change: tell the other replicas."""
        upstream, lists = event.upstream, event.lists
        self.published += 1
        self._spawn(self.bus.publish({"type": EVENT_TYPE, "server": upstream.name, "lists": lists}))

    def on_event(self, event: dict[str, Any]) -> None:
        if event.get("type") == "resubscribed":
            self._catch_up()
            return
        if event.get("type") != EVENT_TYPE:
            return
        upstream = self.upstreams.get(str(event.get("server")))
        if upstream is None or not upstream.is_ready:
            return  # not served here (or not yet: it lists everything when it becomes ready)
        refresh = {
            "tools": upstream.refresh_tools,
            "resources": upstream.refresh_resources,
            "prompts": upstream.refresh_prompts,
        }.get(str(event.get("lists")))
        if refresh is None:
            return
        self.applied += 1
        self._spawn(self._refresh(upstream, refresh()))

    def _catch_up(self) -> None:
        for ready in [u for u in self.upstreams.values() if u.is_ready]:
            for work in (ready.refresh_tools(), ready.refresh_resources(), ready.refresh_prompts()):
                self._spawn(self._refresh(ready, work))

    async def _refresh(self, upstream: Upstream, work: Coroutine[Any, Any, None]) -> None:
        try:
            await work
        except Exception as exc:  # the session may just have gone: its restart lists everything anyway
            logger.info("server %s: list refresh asked by another replica failed: %s", upstream.name, exc)

    def _spawn(self, work: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
