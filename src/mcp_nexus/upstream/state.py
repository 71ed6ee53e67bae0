"""Upstream states and the short history of transitions kept for operators."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from enum import StrEnum


class UpstreamState(StrEnum):
    DISABLED = "DISABLED"
    STOPPED = "STOPPED"
    CONNECTING = "CONNECTING"
    READY = "READY"
    DEGRADED = "DEGRADED"
    ERROR = "ERROR"
    CRASHED = "CRASHED"
    # An OAuth server waiting for an operator's login (`nexus auth login NAME`): not retried,
    # its tools not offered, its calls answered -32003 naming the login (upstream/oauth/).
    NEEDS_AUTH = "NEEDS_AUTH"


@dataclass(frozen=True)
class StateChange:
    timestamp: float
    from_state: UpstreamState
    to_state: UpstreamState
    reason: str


class StateHistory:
    """The last transitions of one upstream (bounded, oldest dropped)."""

    def __init__(self, limit: int = 50) -> None:
        self._changes: deque[StateChange] = deque(maxlen=limit)

    def record(self, from_state: UpstreamState, to_state: UpstreamState, reason: str) -> StateChange:
        change = StateChange(time.time(), from_state, to_state, reason)
        self._changes.append(change)
        return change

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._changes)

    def __len__(self) -> int:
        return len(self._changes)
