"""A server as the relay sees it from one of its sessions: only the callers whose calls that session carries.

The relay (relay.py) asks the newest caller in flight on the server that asks. A server with
one session carries every caller's calls on it. A per-user server (`auth.per_user`) has a
session of each user's beside the operator's: a question from Alice's session is Alice's to
answer, never Bob's though his call is newer, and a question from the operator's session is
never a user's. (Before, the newest caller on the server was asked, whoever's session asked.)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp_nexus.upstream.downstream_relay import RelayedServer


class CallersOf:
    """`server` with its callers in flight narrowed to those `carries` says this session carries."""

    def __init__(self, server: RelayedServer, carries: Callable[[Any], bool]) -> None:
        self._server = server
        self._carries = carries

    @property
    def name(self) -> str:
        return self._server.name

    @property
    def active_callers(self) -> list[Any]:
        return [caller for caller in self._server.active_callers if self._carries(caller)]
