"""A bounded ring of the last calls, for the dashboard's live log; listeners hear each new one.

A record holds what an operator needs to see (tool, server, caller, duration, outcome) and
never the arguments or the result: those may carry secrets.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)

DEFAULT_RECENT_CALLS = 500


# A record is a plain tuple in this order (a tuple costs ~20 ns to build, a 13-field dataclass
# ~300 ns: this is on every call); `record_dict` names the fields when someone reads them.
CALL_FIELDS = (
    "seq",
    "timestamp",  # wall clock, seconds
    "method",
    "tool",
    "server",
    "frontend",
    "client",
    "seconds",
    "outcome",  # "ok", or the error class ("tool_error", "rate_limited", "timeout", ...)
    "cache",
    "offloaded",
    "retries",
    "servers_tried",
    "offload_file",  # the offloaded file the answer names (also on a cache hit), else None
    "via",  # "sandbox" for a call made by code in python_sandbox (Caller.via), else None
)
CallRecord = tuple[Any, ...]


def record_dict(record: CallRecord) -> dict[str, Any]:
    out = dict(zip(CALL_FIELDS, record, strict=True))
    out["duration_ms"] = round(out.pop("seconds") * 1000, 3)
    return out


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
        return [record_dict(r) for r in records]
