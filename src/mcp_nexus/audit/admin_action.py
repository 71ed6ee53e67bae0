"""The event of an admin action over HTTP (published on the gateway's bus for the audit log)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class AdminAction:
    """A request that changes something through the admin API or the dashboard (not a read)."""

    method: str
    path: str
    status: int
    who: str  # the token's principal (`user:<sub>`), else "operator" (the static token or a login)
    client_id: str | None
    address: str | None  # the client's address as the HTTP server saw it
    seconds: float
