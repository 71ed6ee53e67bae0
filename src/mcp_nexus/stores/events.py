"""Events between replicas: the interface, and the single-process bus that has nobody to tell."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

EventHandler = Callable[[dict[str, Any]], None]
"""Told each event another replica published (never this replica's own)."""


class EventBus(Protocol):
    replica: str  # this process's id; events carry it so nobody hears itself

    async def publish(self, event: dict[str, Any]) -> None: ...

    def subscribe(self, handler: EventHandler) -> None: ...

    async def start(self) -> None: ...

    async def close(self) -> None: ...


class LocalEventBus:
    """One process: there are no other replicas, so publishing reaches nobody."""

    def __init__(self, replica: str) -> None:
        self.replica = replica

    async def publish(self, event: dict[str, Any]) -> None:
        return None

    def subscribe(self, handler: EventHandler) -> None:
        return None

    async def start(self) -> None:
        return None

    async def close(self) -> None:
        return None
