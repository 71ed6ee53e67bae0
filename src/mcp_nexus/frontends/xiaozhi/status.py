"""What `nexus servers`, the admin API and `nexus bridge` show about each Xiaozhi link."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any


def _iso(stamp: float | None) -> str | None:
    return None if stamp is None else datetime.fromtimestamp(stamp, UTC).isoformat(timespec="seconds")


@dataclass
class LinkStatus:
    """One endpoint, envelope client or envelope server. `url` is always masked."""

    role: str  # "endpoint" | "envelope_client" | "envelope_server"
    url: str
    connected: bool = False
    since: float | None = None  # wall-clock time of the last change of `connected`
    calls_served: int = 0
    sessions: int = 0  # sessions established (handshake answered) since start
    attempts: int = 0  # connection attempts (dialling roles) or connections accepted (server role)
    last_error: str | None = None
    last_close_code: int | None = None
    last_close_reason: str | None = None
    next_retry_at: float | None = None
    peers: list[str] = field(default_factory=list)  # server role: the Device-Id of each live session

    def mark_connected(self) -> None:
        self.connected = True
        self.since = time.time()
        self.next_retry_at = None

    def mark_disconnected(self, code: int | None, reason: str | None) -> None:
        self.connected = False
        self.since = time.time()
        self.last_close_code = code
        self.last_close_reason = reason or None

    def as_dict(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "url": self.url,
            "connected": self.connected,
            "since": _iso(self.since),
            "calls_served": self.calls_served,
            "sessions": self.sessions,
            "attempts": self.attempts,
            "last_error": self.last_error,
            "last_close_code": self.last_close_code,
            "last_close_reason": self.last_close_reason,
            "next_retry_at": _iso(self.next_retry_at),
            "peers": list(self.peers),
        }


def render_status(rows: list[dict[str, Any]]) -> str:
    """A plain-text table of `XiaozhiBridge.status()` for terminals and logs."""
    if not rows:
        return "no Xiaozhi links configured"
    lines = []
    indent = " " * 17
    for row in rows:
        state = "connected" if row["connected"] else "disconnected"
        lines.append(f"{row['role']:<16} {row['url']}")
        lines.append(f"{indent}{state} since {row['since'] or '-'}, {row['calls_served']} calls served")
        if row["peers"]:
            lines.append(f"{indent}peers: {', '.join(row['peers'])}")
        if row["last_close_code"] is not None:
            lines.append(
                f"{indent}last close: {row['last_close_code']} {row['last_close_reason'] or ''}".rstrip()
            )
        if row["last_error"]:
            lines.append(f"{indent}last error: {row['last_error']}")
        if row["next_retry_at"]:
            lines.append(f"{indent}next retry: {row['next_retry_at']}")
    return "\n".join(lines)
