"""tools/call from a 2026-07-28 client, answered without building an SDK server per request.

Why: on the 2026-07-28 era every request carries its own envelope, and the SDK serves each
one by building a connection, a runner, a request context and a session, validating the
params and re-validating the result (`serve_one`). For a plain tools/call that costs more
than Nexus's whole pipeline (docs/PERFORMANCE.md). Both frontends (stdio and HTTP) hand a
plain call here instead; the pipeline (`Gateway.call_tool`) runs as on every path.

Plain means: `name` a string, `arguments` an object or absent, no other params (no
`inputResponses`/`requestState` of a multi-round call, no progress token), and an envelope
of the three standard keys whose client info and capabilities validate (checked once per
distinct value, not per call). Anything else takes the SDK's path, which gives every error
its exact wording; so this path has no error messages of its own besides the pipeline's.
The answer is shaped as the SDK shapes it: `resultType` and the `serverInfo` stamp.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import mcp_types as types
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    PROTOCOL_VERSION_META_KEY,
    SERVER_INFO_META_KEY,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from mcp_nexus.frontends.mcp.server import McpFrontend
from mcp_nexus.frontends.tool_call_entry import call_tool, client_caller, encodable

_ENVELOPE_KEYS = frozenset({PROTOCOL_VERSION_META_KEY, CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY})
_PLAIN_PARAMS = frozenset({"name", "arguments", "_meta"})


def plain_call(params: Mapping[str, Any] | None) -> bool:
    """Whether a tools/call's params are ones this path serves exactly as the SDK would."""
    if not isinstance(params, Mapping) or not params.keys() <= _PLAIN_PARAMS:
        return False
    name, arguments, meta = params.get("name"), params.get("arguments"), params.get("_meta")
    return (
        isinstance(name, str)
        and bool(name)
        and (arguments is None or isinstance(arguments, dict))
        and isinstance(meta, Mapping)
        and meta.keys() <= _ENVELOPE_KEYS
        and meta.get(PROTOCOL_VERSION_META_KEY) in MODERN_PROTOCOL_VERSIONS
        and isinstance(meta.get(CLIENT_CAPABILITIES_META_KEY), dict)
    )


class ModernToolCall:
    """Serves plain 2026-07-28 tools/calls of one frontend straight through `Gateway.call_tool`."""

    def __init__(self, frontend: McpFrontend) -> None:
        self.frontend = frontend
        # The last envelope seen and what it made: clients send the same one on every request.
        self._envelope: tuple[Any, Any] | None = None
        self._identity: tuple[str | None, dict[str, Any]] | None = None
        # The SDK hands out a deep copy of its stamp per access; ours goes straight to the
        # encoder and is never changed, so one copy serves every answer.
        self._server_info: dict[str, Any] | None = None

    def _known_identity(self, meta: Mapping[str, Any]) -> tuple[str | None, dict[str, Any]] | None:
        """(client name, capabilities) of a valid envelope; None when it does not validate."""
        info, capabilities = meta.get(CLIENT_INFO_META_KEY), meta.get(CLIENT_CAPABILITIES_META_KEY)
        if self._envelope is not None and self._envelope == (info, capabilities):
            return self._identity
        try:
            typed_caps = types.ClientCapabilities.model_validate(capabilities, by_name=False)
            typed_info = None if info is None else types.Implementation.model_validate(info, by_name=False)
        except ValidationError:
            return None
        identity = (
            typed_info.name if typed_info is not None else None,
            typed_caps.model_dump(mode="json", by_alias=True, exclude_none=True),
        )
        self._envelope, self._identity = (info, capabilities), identity
        return identity

    def accepts(self, params: Mapping[str, Any] | None) -> bool:
        """A plain call with a valid envelope (validated here once per distinct envelope)."""
        return plain_call(params) and self._known_identity(params["_meta"]) is not None  # type: ignore[index]

    async def call(
        self, request_id: Any, params: Mapping[str, Any], *, user: Any = None, profile: str | None = None
    ) -> dict[str, Any]:
        """The result of an accepted call, as the SDK's runner would put it on the wire.

        Raises MCPError (the pipeline's errors, mapped as on the SDK's path: tool_call_entry).
        """
        identity = self._known_identity(params["_meta"])
        assert identity is not None, "call() is for calls accepts() took"
        caller = client_caller(
            self.frontend.frontend,
            identity[0],
            identity[1],
            request_id=request_id,
            modern=True,
            user=user,
            profile=profile or self.frontend.profile,
        )
        outcome = encodable(await call_tool(self.frontend.gateway, params, caller))
        result: dict[str, Any] = outcome.model_dump(mode="json", by_alias=True, exclude_none=True)
        if result.get("resultType") is None:
            result["resultType"] = "complete"
        meta = result.get("_meta")
        if meta is None:
            result["_meta"] = {SERVER_INFO_META_KEY: self.server_info_stamp()}
        elif isinstance(meta, dict) and meta.get(SERVER_INFO_META_KEY) is None:
            result["_meta"] = {**meta, SERVER_INFO_META_KEY: self.server_info_stamp()}
        return result

    def server_info_stamp(self) -> dict[str, Any]:
        """The `serverInfo` stamp, taken once (the server's identity is fixed at construction);
        callers put it into an answer that is encoded at once and never changed."""
        if self._server_info is None:
            self._server_info = self.frontend.server.server_info_stamp
        return self._server_info
