"""negotiate.py: the era chosen at connect, branch by branch against a scripted session.

What real servers answer is covered in test_sessions.py (the SDK's MCPServer in both
eras, a server without `server/discover`, a 2026-only server); here every answer the
policy distinguishes is played by a stub, so each branch is pinned down.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError
from mcp_types.version import LATEST_MODERN_VERSION

from mcp_nexus.upstream.negotiate import era_for, negotiate

DISCOVERED = {
    "supportedVersions": [LATEST_MODERN_VERSION],
    "capabilities": {"tools": {}},
    "resultType": "complete",
}


def unsupported(*supported: str) -> MCPError:
    data = {"supported": list(supported), "requested": LATEST_MODERN_VERSION}
    return MCPError(types.UNSUPPORTED_PROTOCOL_VERSION, "unsupported protocol version", data)


class ScriptedSession:
    """Answers `server/discover` from a script; records what negotiate asked for."""

    def __init__(self, *answers: Any, refuse_initialize: MCPError | None = None) -> None:
        self.answers = list(answers)
        self.refuse_initialize = refuse_initialize
        self.discovered: list[str] = []
        self.initialized = 0
        self.adopted: list[types.DiscoverResult] = []

    async def send_discover(self, version: str) -> Any:
        self.discovered.append(version)
        answer = self.answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    async def initialize(self) -> None:
        self.initialized += 1
        if self.refuse_initialize is not None:
            raise self.refuse_initialize

    def adopt(self, result: types.DiscoverResult) -> None:
        self.adopted.append(result)


async def test_legacy_always_shakes_hands_and_never_probes() -> None:
    session = ScriptedSession()
    await negotiate(session, "legacy")
    assert (session.discovered, session.initialized, session.adopted) == ([], 1, [])


async def test_latest_adopts_a_2026_server_without_a_handshake() -> None:
    session = ScriptedSession(DISCOVERED)
    await negotiate(session, "latest")
    assert session.discovered == [LATEST_MODERN_VERSION] and session.initialized == 0
    assert [r.supported_versions for r in session.adopted] == [[LATEST_MODERN_VERSION]]


@pytest.mark.parametrize(
    "answer",
    [
        MCPError(types.METHOD_NOT_FOUND, "Method not found: server/discover"),
        MCPError(types.INTERNAL_ERROR, "something else went wrong"),
        unsupported("2025-11-25", "2025-06-18"),  # a handshake-era server saying so
        {"supportedVersions": ["2025-11-25"], "capabilities": {}},  # no shared 2026 version
        {"not": "a discover result"},  # does not parse
    ],
    ids=["method-not-found", "other-error", "handshake-only", "no-2026-version", "unparsable"],
)
async def test_latest_falls_back_to_the_handshake_without_positive_evidence(answer: Any) -> None:
    session = ScriptedSession(answer)
    await negotiate(session, "latest")
    assert session.initialized == 1 and not session.adopted


async def test_latest_probes_once_more_at_a_shared_2026_version_named_by_32022() -> None:
    session = ScriptedSession(unsupported(LATEST_MODERN_VERSION, "2025-11-25"), DISCOVERED)
    await negotiate(session, "latest")
    assert session.discovered == [LATEST_MODERN_VERSION, LATEST_MODERN_VERSION]
    assert len(session.adopted) == 1 and session.initialized == 0


async def test_latest_shakes_hands_when_the_second_probe_is_refused_too() -> None:
    session = ScriptedSession(
        unsupported(LATEST_MODERN_VERSION), unsupported(LATEST_MODERN_VERSION, "2025-11-25")
    )
    await negotiate(session, "latest")
    assert len(session.discovered) == 2 and session.initialized == 1


async def test_a_2026_only_server_sharing_no_version_is_a_real_incompatibility() -> None:
    session = ScriptedSession(unsupported("2099-01-01"))
    with pytest.raises(MCPError) as caught:
        await negotiate(session, "latest")
    assert caught.value.error.code == types.UNSUPPORTED_PROTOCOL_VERSION
    assert session.initialized == 0


async def test_handshake_shakes_hands_first_and_never_probes_a_server_that_accepts() -> None:
    session = ScriptedSession()
    await negotiate(session, "handshake")
    assert (session.discovered, session.initialized, session.adopted) == ([], 1, [])


async def test_handshake_takes_2026_from_a_server_that_refuses_the_handshake() -> None:
    session = ScriptedSession(DISCOVERED, refuse_initialize=unsupported(LATEST_MODERN_VERSION))
    await negotiate(session, "handshake")
    assert session.initialized == 1 and session.discovered == [LATEST_MODERN_VERSION]
    assert len(session.adopted) == 1


async def test_handshake_passes_on_any_other_refusal() -> None:
    session = ScriptedSession(refuse_initialize=MCPError(types.INTERNAL_ERROR, "broken"))
    with pytest.raises(MCPError):
        await negotiate(session, "handshake")
    assert session.discovered == []


@pytest.mark.parametrize(
    ("protocol", "transport", "client", "era"),
    [
        ("auto", "stdio", None, "latest"),  # no one stdio client to follow
        ("auto", "stdio", "handshake", "handshake"),
        ("auto", "stdio", "latest", "latest"),
        ("auto", "http", "handshake", "latest"),  # only stdio servers follow the client
        ("auto", "embedded", "handshake", "latest"),
        ("latest", "stdio", "handshake", "latest"),
        ("legacy", "stdio", "latest", "legacy"),
        ("legacy", "http", None, "legacy"),
    ],
)
def test_the_era_a_server_gets_from_its_protocol_setting_and_the_client(
    protocol: str, transport: str, client: Any, era: str
) -> None:
    assert era_for(protocol, transport, client) == era
