"""Connect-time choice of the protocol era, with the SDK's public session API only.

`latest`: probe `server/discover` at the newest 2026 version; anything short of positive
evidence of a 2026 server (an error, a result without a shared 2026 version, a result
that does not parse) falls back to the `initialize` handshake. A -32022 naming a shared
2026 version earns one more probe at that version. The same policy as the SDK's own
`Client(mode="auto")`, with one addition: a probe that timed out (a server slow to start, e.g.
on a busy host) may still be read by the server after we gave up on it; such a server then
serves 2026-07-28 on this connection and refuses the handshake with -32022, so we probe again
and take that era instead of failing the connection.
`handshake`: `initialize` first; a server that refuses it with -32022 (2026-07-28 only) is
probed at a version both speak. `legacy`: the handshake, always.

Which one a server gets (`era_for`): its `protocol:` setting; `auto`, the default, is
`latest`, except for a stdio server of a gateway that serves one client over stdio, which
follows that client's era (client_era.py says why).
"""

from __future__ import annotations

from typing import Literal

import mcp_types as types
from mcp import ClientSession
from mcp.shared.exceptions import MCPError
from mcp_types import UNSUPPORTED_PROTOCOL_VERSION
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_MODERN_VERSION, MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

Era = Literal["latest", "handshake", "legacy"]


def follows_client(protocol: str, transport: str) -> bool:
    """Whether a server's era follows the gateway's one stdio client, when there is one."""
    return protocol == "auto" and transport == "stdio"


def era_for(protocol: str, transport: str, client: Era | None = None) -> Era:
    """The era a server's primary session negotiates, from its `protocol:` setting and the era of
    the gateway's one stdio client (None: no such client, or not known in time)."""
    if protocol == "legacy":
        return "legacy"
    if client is not None and follows_client(protocol, transport):
        return client
    return "latest"


async def negotiate(session: ClientSession, era: Era) -> None:
    if era == "legacy":
        await session.initialize()
        return
    if era == "handshake":
        await _handshake(session)
        return
    version = LATEST_MODERN_VERSION
    for attempt in range(2):
        try:
            raw = await session.send_discover(version)
        except MCPError as exc:
            if exc.error.code == UNSUPPORTED_PROTOCOL_VERSION:
                supported = _supported(exc.error.data)
                mutual = [v for v in MODERN_PROTOCOL_VERSIONS if v in supported]
                if mutual and attempt == 0:
                    version = mutual[-1]
                    continue
                if supported and not any(v in HANDSHAKE_PROTOCOL_VERSIONS for v in supported):
                    raise  # a 2026-only server sharing no version with us: a real incompatibility
            await _handshake(session)
            return
        try:
            result = types.DiscoverResult.model_validate(raw)
        except ValidationError:
            await _handshake(session)
            return
        if not any(v in MODERN_PROTOCOL_VERSIONS for v in result.supported_versions):
            await _handshake(session)
            return
        session.adopt(result)
        return


async def _handshake(session: ClientSession) -> None:
    """`initialize`; refused because the connection already serves 2026-07-28 (our timed-out probe,
    read late): that era, probed again at a version both speak."""
    try:
        await session.initialize()
    except MCPError as exc:
        if exc.error.code != UNSUPPORTED_PROTOCOL_VERSION:
            raise
        mutual = [v for v in MODERN_PROTOCOL_VERSIONS if v in _supported(exc.error.data)]
        raw = await session.send_discover(mutual[-1] if mutual else LATEST_MODERN_VERSION)
        session.adopt(types.DiscoverResult.model_validate(raw))


def _supported(data: object) -> list[str]:
    try:
        return types.UnsupportedProtocolVersionErrorData.model_validate(data).supported
    except ValidationError:
        return []
