"""`Upstream.session_for`: the era of an upstream call is chosen per caller.

A handshake-era caller that can answer server requests gets a handshake-era session of
its own when the primary speaks 2026-07-28 (where a server has no back-channel), so the
server's elicitation reaches it; when the server cannot speak that era the primary serves
anyway. Everyone else is served by the primary.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import mcp_types as types

from lifecycle.faults import faulty
from mcp_nexus.upstream.state import UpstreamState
from mcp_nexus.upstream.upstream import CallerEra, Upstream
from support.gateway import server_config
from support.polling import eventually
from support.processes import TESTS

BACK_CHANNEL = CallerEra(back_channel=True)
MODERN = CallerEra(modern=True)


class AnsweringRelay:
    """The caller in flight, as the gateway would reach it: accepts every elicitation, records it."""

    def __init__(self) -> None:
        self.elicited: list[str] = []

    async def sampling(self, upstream: Upstream, params: Any) -> types.ErrorData:
        return types.ErrorData(code=types.INVALID_REQUEST, message="no sampling in this test")

    async def elicitation(self, upstream: Upstream, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.elicited.append(params.message)
        return types.ElicitResult(action="accept", content={"response": "from the relay"})

    async def list_roots(self, upstream: Upstream) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[])

    async def log(self, upstream: Upstream, params: Any) -> None:
        return None


@contextlib.asynccontextmanager
async def started(
    name: str, entry: dict[str, Any], relay: AnsweringRelay | None = None
) -> AsyncIterator[Upstream]:
    upstream = Upstream(server_config(name, entry), relay=relay)
    await upstream.start()
    try:
        assert upstream.state == UpstreamState.READY, upstream.last_error
        yield upstream
    finally:
        await upstream.stop()


def fixture_server(**extra: Any) -> dict[str, Any]:
    """The conformance fixture (both eras, an elicitation tool), embedded."""
    return {"transport": "embedded", "module": "conformance.fixture_server:build_server", **extra}


def text(result: Any) -> str:
    assert isinstance(result, types.CallToolResult), result
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def test_a_back_channel_caller_gets_a_handshake_era_session_opened_once() -> None:
    async with started("both", fixture_server()) as upstream:
        primary = upstream.session()
        assert primary.protocol_version == "2026-07-28"
        assert await upstream.session_for(CallerEra()) is primary  # no back-channel to serve
        assert await upstream.session_for(MODERN) is primary
        assert await upstream.session_for(CallerEra(modern=True, back_channel=True)) is primary

        bridge = await upstream.session_for(BACK_CHANNEL)
        assert bridge is not primary and bridge.open
        assert bridge.protocol_version == "2025-11-25"
        assert await upstream.session_for(BACK_CHANNEL) is bridge  # reused, not reopened
    assert not bridge.open and not primary.open  # stop closes both


async def test_elicitation_reaches_a_back_channel_caller_and_a_modern_caller_gets_the_question() -> None:
    relay = AnsweringRelay()
    async with started("both", fixture_server(), relay) as upstream:
        answered = await upstream.call_tool("test_elicitation", {"message": "Your name?"}, era=BACK_CHANNEL)
        assert relay.elicited == ["Your name?"]
        assert "action=accept" in text(answered) and "from the relay" in text(answered)

        asked = await upstream.call_tool("test_elicitation", {"message": "Again?"}, era=MODERN)
        assert isinstance(asked, types.InputRequiredResult)  # returned as is: the caller answers itself
        assert relay.elicited == ["Your name?"]


async def test_a_server_configured_legacy_serves_everyone_from_its_one_session() -> None:
    async with started("old", fixture_server(protocol="legacy")) as upstream:
        primary = upstream.session()
        assert primary.protocol_version == "2025-11-25"
        assert await upstream.session_for(BACK_CHANNEL) is primary


async def test_without_a_handshake_era_the_primary_serves_and_no_second_try_is_made(tmp_path: Path) -> None:
    starts = tmp_path / "starts"
    entry = faulty("new", "--modern-only", "--count-file", str(starts))
    async with started("new", entry) as upstream:
        primary = upstream.session()
        assert primary.modern
        assert await upstream.session_for(BACK_CHANNEL) is primary
        assert len(starts.read_text().split()) == 2  # the primary and the one refused bridge
        assert await upstream.session_for(BACK_CHANNEL) is primary
        assert len(starts.read_text().split()) == 2  # remembered: not tried again per call
        answer = await upstream.call_tool("echo", {"text": "hi"}, era=BACK_CHANNEL)
        assert text(answer) == "new: hi"


async def test_a_lost_bridge_is_reopened_on_next_need_and_the_primary_is_untouched() -> None:
    demo = {
        "command": sys.executable,
        "args": ["-m", "support.demo_server", "two"],
        "env": {"PYTHONPATH": str(TESTS)},
    }
    async with started("two", demo) as upstream:
        primary = upstream.session()
        bridge = await upstream.session_for(BACK_CHANNEL)
        assert primary.modern and not bridge.modern and bridge.pid not in (None, primary.pid)
        os.kill(bridge.pid, signal.SIGKILL)  # type: ignore[arg-type]
        await eventually(lambda: not bridge.open, what="the bridge's loss noticed")
        assert upstream.state == UpstreamState.READY and upstream.session() is primary
        reopened = await upstream.session_for(BACK_CHANNEL)
        assert reopened is not bridge and reopened.open and reopened.pid not in (None, bridge.pid)
        answer = await upstream.call_tool("echo", {"text": "again"}, era=BACK_CHANNEL)
        assert text(answer) == "two: again"
