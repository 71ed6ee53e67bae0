"""What one audit line says, built from an event: who, how, what, with which outcome, how fast."""

from __future__ import annotations

import hashlib
import math
import time
from datetime import UTC, datetime
from typing import Any, Literal

import orjson

from mcp_nexus.audit.admin_action import AdminAction
from mcp_nexus.pipeline.call import Caller
from mcp_nexus.pipeline.call_finished import CallFinished

Arguments = Literal["digest", "values"]


class _Clock:
    """ISO 8601 UTC times to the millisecond, the date and time of day formatted once per second.

    Why: `datetime` formatting was a third of a record's cost, and the writer makes a record for
    every tools/call; records of one batch mostly share their second.
    """

    __slots__ = ("_last",)

    def __init__(self) -> None:
        # (second, its formatted prefix): one tuple, replaced whole, so writer threads of several
        # audit logs never pair one second with another's prefix.
        self._last: tuple[int, str] = (-1, "")

    def iso(self, epoch: float) -> str:
        # The instant `datetime.fromtimestamp` makes: the fraction's microseconds rounded half-even
        # (computed on the fraction alone, as it does), then cut to milliseconds.
        fraction, whole = math.modf(epoch)
        micro = round(fraction * 1_000_000)
        second = int(whole)
        if micro < 0:  # before 1970: the fraction borrows from the second
            second, micro = second - 1, micro + 1_000_000
        if micro >= 1_000_000:
            second, micro = second + 1, micro - 1_000_000
        last = self._last
        if last[0] != second:
            last = self._last = (second, datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S"))
        return f"{last[1]}.{micro // 1000:03d}Z"


_when = _Clock().iso


def arguments_digest(arguments: dict[str, Any]) -> str:
    """SHA-256 of the arguments as canonical JSON (sorted keys): equal arguments, equal digests."""
    return hashlib.sha256(orjson.dumps(arguments, option=orjson.OPT_SORT_KEYS, default=str)).hexdigest()


def _who(caller: Caller) -> dict[str, Any]:
    principal = caller.principal
    who: dict[str, Any] = {"who": caller.identity, "frontend": caller.frontend, "client": caller.client}
    if principal is not None:
        who.update(subject=principal.subject, client_id=principal.client_id)
    return who


def _trace_id(meta: dict[str, Any] | None) -> str | None:
    """The trace id of the W3C traceparent the caller sent (`00-<trace id>-<span id>-<flags>`)."""
    parent = (meta or {}).get("traceparent")
    if isinstance(parent, str):
        parts = parent.split("-")
        if len(parts) == 4 and len(parts[1]) == 32:
            return parts[1]
    return None


def call_record(event: CallFinished, at: float, arguments: Arguments) -> dict[str, Any]:
    """The line of a finished tools/call (built by the writer, off the call's path)."""
    call = event.call
    record: dict[str, Any] = {
        "time": _when(at),
        "kind": "tool_call",
        **_who(event.caller),
        "tool": event.name,
    }
    if call is not None:
        record["server"] = call.server
        if arguments == "values":
            record["arguments"] = call.arguments
        else:
            record["arguments_sha256"] = arguments_digest(call.arguments)
    if event.error is not None or event.error_type is not None:
        record.update(outcome="error", error_class=event.error_type, error=event.error)
    elif event.outcome is None:
        record["outcome"] = "cancelled"
    elif getattr(event.outcome, "is_error", False):
        record.update(outcome="tool_error", error_class="isError")
    else:
        record["outcome"] = "ok"
    record["latency_ms"] = round(event.seconds * 1000, 3)
    record["trace_id"] = _trace_id(call.meta if call is not None else None)
    return record


def admin_record(event: AdminAction, at: float) -> dict[str, Any]:
    outcome = "ok" if event.status < 400 else "denied" if event.status in (401, 403) else "error"
    return {
        "time": _when(at),
        "kind": "admin",
        "who": event.who,
        "client_id": event.client_id,
        "frontend": "http",
        "address": event.address,
        "action": f"{event.method} {event.path}",
        "status": event.status,
        "outcome": outcome,
        "latency_ms": round(event.seconds * 1000, 3),
    }


def dropped_record(count: int) -> dict[str, Any]:
    """Said in the log itself: records the full queue could not take (never silently missing)."""
    return {"time": _when(time.time()), "kind": "dropped", "count": count}
