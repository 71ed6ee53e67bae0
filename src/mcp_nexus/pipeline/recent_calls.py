"""A bounded ring of the last calls, for the dashboard's live log; listeners hear each new one.

A record holds what an operator needs to see (tool, server, caller, duration, outcome) and
never the arguments or the result: those may carry secrets.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)

DEFAULT_RECENT_CALLS = 500


@dataclass(slots=True)  # not frozen: a frozen dataclass's __init__ costs ~2x on the hot path
class CallRecord:
    seq: int
    timestamp: float  # wall clock, seconds
    method: str
    tool: str
    server: str | None
    frontend: str
    client: str | None
    duration_ms: float
    outcome: str  # "ok", or the error class ("tool_error", "rate_limited", "timeout", ...)
    cache: str | None
    offloaded: bool
    retries: int
    servers_tried: int

    def as_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}  # type: ignore[attr-defined]


CallListener = Callable[[CallRecord], None]


class RecentCalls:
    def __init__(self, size: int = DEFAULT_RECENT_CALLS) -> None:
        self.ring: deque[CallRecord] = deque(maxlen=size)
        self.listeners: list[CallListener] = []
        self.seq = 0

    def add(self, record: CallRecord) -> None:
        self.ring.append(record)
        for listener in self.listeners:
            try:
                listener(record)
            except Exception:  # a slow or broken viewer must never fail a call
                logger.exception("call listener failed")

    def next_seq(self) -> int:
        self.seq += 1
        return self.seq

    def subscribe(self, listener: CallListener) -> Callable[[], None]:
        self.listeners.append(listener)
        return lambda: self.listeners.remove(listener) if listener in self.listeners else None

    def snapshot(self, limit: int | None = None) -> list[dict[str, Any]]:
        records = list(self.ring)
        if limit is not None:
            records = records[-limit:]
        return [r.as_dict() for r in records]
