"""The gateway's events, typed, on one small bus.

Why one bus: parts of Nexus learn of changes they do not cause (a frontend that a tool list
changed, the cache that a server restarted, the replica fan-out that a server announced a
change). Each event is a class; a subscriber names the class it wants and gets instances of
it, so nothing is encoded into strings and parsed back, and there is one place to subscribe.
Handlers run synchronously in publishing order; one handler's failure is logged and does not
stop the others (or the publisher).

This module sits below everything that publishes or subscribes (upstreams, the catalog, the
config), so it imports none of them: a server event carries its `Upstream` as `Any`, and the
events of higher layers live with them (config/config_applied.py, pipeline/call_finished.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

logger = logging.getLogger(__name__)

ListKind = Literal["tools", "resources", "prompts"]


@dataclass(frozen=True, slots=True)
class ServerStateChanged:
    """A server's state changed (started, ready, crashed, stopped, ...)."""

    upstream: Any  # the Upstream (upstream/upstream.py)


@dataclass(frozen=True, slots=True)
class ServerListRead:
    """The gateway read one of a server's lists again (after an announcement, a health check, a TTL)."""

    upstream: Any  # the Upstream (upstream/upstream.py)
    kind: ListKind


@dataclass(frozen=True, slots=True)
class ServerAnnouncedChange:
    """The server itself said its lists changed (`lists`: "tools", "resources", "prompts" or
    several, comma-separated as announced); not sent when the gateway re-read on its own."""

    upstream: Any  # the Upstream (upstream/upstream.py)
    lists: str


@dataclass(frozen=True, slots=True)
class ResourceUpdated:
    """A server reported that a subscribed resource changed."""

    uri: str
    upstream: Any = None  # the Upstream that reported it, when one did


@dataclass(frozen=True, slots=True)
class ListChanged:
    """The gateway's aggregated list of a kind changed (what clients are told with list_changed)."""

    kind: ListKind


EventT = TypeVar("EventT")
Handler = Callable[[EventT], None]


class EventBus:
    """Subscribers by event class; `publish` calls each one of the event's class in order."""

    def __init__(self) -> None:
        self._handlers: dict[type[Any], list[Callable[[Any], None]]] = {}

    def subscribe(self, event_type: type[EventT], handler: Handler[EventT]) -> Callable[[], None]:
        """Call `handler` with every `event_type` published; returns the way to stop."""
        handlers = self._handlers.setdefault(event_type, [])
        handlers.append(handler)

        def unsubscribe() -> None:
            if handler in handlers:
                handlers.remove(handler)

        return unsubscribe

    def wants(self, event_type: type[Any]) -> bool:
        """Someone subscribes to `event_type` (publishers of per-call events check first)."""
        return bool(self._handlers.get(event_type))

    def publish(self, event: object) -> None:
        for handler in list(self._handlers.get(type(event), ())):
            try:
                handler(event)
            except Exception:  # one subscriber's bug must not stop the others, or the publisher
                logger.exception("%s subscriber failed", type(event).__name__)
