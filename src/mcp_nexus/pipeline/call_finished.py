"""The event of a finished tools/call (published on the gateway's bus, events.py, while subscribed)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp_nexus.pipeline.call import Caller, ToolCall


@dataclass(frozen=True, slots=True)
class CallFinished:
    """A tools/call left the pipeline. Published only while someone subscribes: it is per call."""

    name: str
    caller: Caller
    seconds: float
    error: str | None  # the error's message when the call raised; None for a result
    # What the audit log (audit/) records besides: the call as it left the pipeline (its
    # arguments, the server that answered, the caller's trace context), its result (None when
    # it raised or was cancelled) and the class of the error it raised.
    call: ToolCall | None = None
    outcome: Any = None
    error_type: str | None = None
