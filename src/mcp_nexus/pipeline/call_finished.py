"""The event of a finished tools/call (published on the gateway's bus, events.py, while subscribed)."""

from __future__ import annotations

from dataclasses import dataclass

from mcp_nexus.pipeline.call import Caller


@dataclass(frozen=True, slots=True)
class CallFinished:
    """A tools/call left the pipeline. Published only while someone subscribes: it is per call."""

    name: str
    caller: Caller
    seconds: float
    error: str | None  # the error's message when the call raised; None for a result
